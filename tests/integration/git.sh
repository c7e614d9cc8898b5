#!/bin/bash
# .git and the other files that make the host run code when the user next
# uses their tools, end to end in real ns boxes, driven by a replay model:
# .git is read-only in the box (copy-on-write and --rw), a read-only git
# status is no change, changes under .git are never applied or patched
# unless --allow-git-changes, and files such as .envrc are flagged. The vm
# backend's checks are in vm.sh.
. "$(dirname "$0")/lib.sh"
command -v git >/dev/null || skip_all "no git"
SESS=$XDG_STATE_HOME/ward/sessions
# The host's git: no config of the person running the tests.
export HOME=$T_TMP/home GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t \
	GIT_COMMITTER_EMAIL=t@t
mkdir -p "$HOME"
CANARY=$T_TMP/canary	# what a planted hook or fsmonitor would make on the host

repo() { # repo DIR: a repository with one commit
	rm -rf "$1"; mkdir -p "$1"
	git -C "$1" init -q && echo a >"$1/a.txt" && git -C "$1" add a.txt && git -C "$1" commit -qm init
}
# wr WS CMD [flags]: ward run with a model whose one call is bash CMD ->
# RC, ERR (stderr: the diff summary), ID (the session), RES (the call's result)
wr() {
	local ws=$1 cmd=$2; shift 2
	python3 -c 'import json, sys
print(json.dumps({"turns": [{"tools": [{"name": "bash", "input": {"command": sys.argv[1]}}]}, {"text": "done"}]}))' \
		"$cmd" >"$T_TMP/replay.json"
	wr_run "$ws" "$@"
}
# ww WS PATH CONTENT [flags]: the same with the write tool's one call
ww() {
	local ws=$1 path=$2 content=$3; shift 3
	python3 -c 'import json, sys
print(json.dumps({"turns": [{"tools": [{"name": "write", "input": {"path": sys.argv[1], "content": sys.argv[2]}}]},
                            {"text": "done"}]}))' "$path" "$content" >"$T_TMP/replay.json"
	wr_run "$ws" "$@"
}
wr_run() {
	local ws=$1; shift
	"$WARD" run --model "replay:$T_TMP/replay.json" --workspace "$ws" "$@" go >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
	RC=$?; ERR=$(cat "$T_TMP/err")
	ID=$(sed -n 's/^ward: session \([^ ,]*\),.*/\1/p' "$T_TMP/err" | head -1)
	RES=$(python3 -c 'import json, sys
for r in map(json.loads, open(sys.argv[1])):
    if r.get("type") == "result": print(r.get("text", "").replace("\n", " "))' "$SESS/$ID.jsonl" 2>/dev/null)
}
HOOK="printf '#!/bin/sh\\ntouch $CANARY\\n' >.git/hooks/pre-commit; chmod +x .git/hooks/pre-commit"

# Copy-on-write: .git is read-only in the box; git reads it.
W=$T_TMP/w1; repo "$W"
wr "$W" "umount -l /workspace/.git; echo um=\$?; mount -o remount,rw /workspace/.git; echo mo=\$?; git status; $HOOK; echo hook=\$?; git config core.fsmonitor 'touch $CANARY'; echo cfg=\$?;
git -c user.name=m -c user.email=m@m commit -q --allow-empty -m x; echo commit=\$?; echo b >b.txt" --apply
is "$RC" 0 "a run that tries .git: exit 0"
like "$RES" "On branch .*nothing to commit" "git status works in the box"
like "$RES" "pre-commit: Read-only file system.*hook=1" "a write to .git/hooks/pre-commit in the box fails (read-only)"
like "$RES" "um=[1-9].*mo=[1-9].*hook=1" "after umount and a remount of .git were tried (they fail)"
like "$RES" "could not lock config file .git/config: Read-only file system.*cfg=255" "git config core.fsmonitor fails"
like "$RES" "Unable to create '/workspace/.git/index.lock': Read-only file system.*commit=128" \
	"git commit fails with git's own read-only message"
unlike "$ERR" "\.git/index" "a read-only git status is no change (no .git/index in the diff)"
unlike "$ERR" "changes under .git" "and nothing under .git is listed"
is "$(cat "$W/b.txt" 2>/dev/null)" b "twin: the box's other file is applied"
[ ! -e "$W/.git/hooks/pre-commit" ] && ! grep -q fsmonitor "$W/.git/config"; ok $? "the tree's .git is as it was"
git -C "$W" status >/dev/null 2>&1; git -C "$W" commit -q --allow-empty -m y 2>/dev/null
[ ! -e "$CANARY" ]; ok $? "the user's git status and git commit after it run nothing of the box's (canary)"

# The write tool (ward-guest's own, not a command) meets the same wall.
ww "$W" .git/hooks/pre-commit "#!/bin/sh
touch $CANARY" --rw
like "$RES" "[Rr]ead-only file system" "the write tool cannot write .git/hooks/pre-commit either (--rw)"
[ ! -e "$W/.git/hooks/pre-commit" ]; ok $? "and the tree has no hook"
ww "$W" w.txt "w" --rw
is "$(cat "$W/w.txt" 2>/dev/null)" w "twin: the write tool writes the tree's other files"

# A workspace that is itself a repository (bare) is read-only whole.
W=$T_TMP/wbare; rm -rf "$W"; git init -q --bare "$W"
wr "$W" "echo x >hooks/post-update; echo h=\$?" --rw
like "$RES" "Read-only file system.*h=1" "a workspace that is a bare repository is read-only in the box (--rw)"
wr "$W" "echo x >hooks/post-update; echo h=\$?" --rw --allow-git-changes
like "$RES" "h=0" "twin: with --allow-git-changes it is writable"

# A repository the model makes: its .git is listed apart and never applied.
W=$T_TMP/w2; repo "$W"
NEST="git init -q sub && echo s >sub/s.txt && printf '[core]\\n\\tfsmonitor = touch $CANARY\\n' >>sub/.git/config"
wr "$W" "$NEST" --apply
is "$RC" 0 "a run that makes a repository, --apply: exit 0"
like "$ERR" "changes under .git, not applied \([0-9]+\):
  added    sub/.git/ and the [0-9]+ entries below it" "the diff lists the new .git apart, not applied"
like "$ERR" "ward: not applied: [0-9]+ changes under .git .*ward apply --allow-git-changes $ID applies them" \
	"and says how to apply it"
[ ! -e "$W/sub/.git" ]; ok $? "the model's nested repository is not applied"
is "$(cat "$W/sub/s.txt" 2>/dev/null)" s "twin: the file beside it is"
(cd "$W/sub" && git status >/dev/null 2>&1); [ ! -e "$CANARY" ]; ok $? "git status in sub runs nothing (canary)"
"$WARD" apply "$ID" >/dev/null 2>"$T_TMP/err"
is "$?" 0 "ward apply again, without the flag: exit 0"
[ ! -e "$W/sub/.git" ]; ok $? "and still nothing under .git is applied"
like "$("$WARD" diff "$ID")" "^changes under .git, not applied" "ward diff names them, apart"
"$WARD" apply --allow-git-changes "$ID" >/dev/null 2>"$T_TMP/err"
is "$?" 0 "ward apply --allow-git-changes: exit 0"
grep -q fsmonitor "$W/sub/.git/config" 2>/dev/null; ok $? "twin: with the flag, the repository is applied"

# --patch leaves .git out, and says so.
W=$T_TMP/w3; repo "$W"
wr "$W" "$NEST" --patch "$T_TMP/p.diff"
is "$RC" 0 "a run that makes a repository, --patch: exit 0"
like "$ERR" "ward: --patch: [0-9]+ changes under .git left out of the patch" "--patch says it left .git out"
like "$(cat "$T_TMP/p.diff")" "note: not in this patch \(under .git\): added sub/.git/config" "a note line names each"
unlike "$(cat "$T_TMP/p.diff")" "diff --git a/sub/.git" "the patch holds nothing under .git"
like "$(cat "$T_TMP/p.diff")" "diff --git a/sub/s.txt b/sub/s.txt" "twin: it holds the other file"
cp -a "$W" "$T_TMP/w3-copy"
git -C "$T_TMP/w3-copy" apply "$T_TMP/p.diff"; ok $? "and git apply takes it"

# --allow-git-changes: the box may commit, and the commit is applied.
W=$T_TMP/w4; repo "$W"
wr "$W" "echo n >n.txt && git add n.txt && git -c user.name=m -c user.email=m@m commit -qm 'from the box'; echo commit=\$?" --apply --allow-git-changes
is "$RC" 0 "--allow-git-changes --apply: exit 0"
like "$RES" "commit=0" "with --allow-git-changes a commit in the box works"
like "$(git -C "$W" log --format=%s -1)" "^from the box$" "and is applied: the user's git log has it"
is "$(git -C "$W" status --porcelain)" "" "and the user's tree is clean"

# A directory holding a .git, deleted in a box that may: not applied without the flag.
W=$T_TMP/w5; repo "$W"; repo "$W/sub"
wr "$W" "rm -rf sub; echo rm=\$?" --allow-git-changes
like "$RES" "rm=0" "(a box with --allow-git-changes deletes sub, a repository)"
"$WARD" apply "$ID" >/dev/null 2>"$T_TMP/err"
[ -d "$W/sub/.git" ]; ok $? "ward apply without the flag does not delete a directory holding a .git"
"$WARD" apply --allow-git-changes "$ID" >/dev/null 2>&1
[ ! -e "$W/sub" ]; ok $? "twin: with it, the deletion is applied"

# Files the user's tools run: flagged, and applied.
W=$T_TMP/w6; repo "$W"
wr "$W" "echo 'touch $CANARY' >.envrc; mkdir -p .vscode .husky; echo '{}' >.vscode/tasks.json; echo x >.husky/pre-commit; echo p >plain.txt"
like "$ERR" "flagged: files your tools run by themselves.*
  added    .envrc: direnv runs it when a shell enters the directory" "an .envrc the model wrote is flagged in the run's summary"
like "$ERR" "  added    .vscode/tasks.json: VS Code" "so is .vscode/tasks.json"
like "$ERR" "  added    .husky/pre-commit: husky" "and .husky/*"
unlike "$ERR" "plain.txt: " "twin: a plain file is not flagged"
like "$("$WARD" diff "$ID")" "  added    .envrc: direnv" "ward diff flags it too"
"$WARD" apply "$ID" >/dev/null 2>&1
is "$(cat "$W/.envrc" 2>/dev/null)" "touch $CANARY" "a flagged file is applied (flagged, not refused)"

# --rw: .git stays read-only during the run. The canary: the hook the box
# tries to plant would touch a file at the user's next git commit.
W=$T_TMP/w7; repo "$W"; rm -f "$CANARY"
wr "$W" "$HOOK; echo hook=\$?; git config core.fsmonitor 'touch $CANARY'; echo cfg=\$?; echo r >r.txt" --rw
like "$RES" "hook=1.*cfg=255" "--rw: writing the hook and git config fail in the box"
is "$(cat "$W/r.txt" 2>/dev/null)" r "--rw twin: the box writes the tree itself"
git -C "$W" status >/dev/null 2>&1; git -C "$W" commit -q --allow-empty -m y 2>/dev/null
[ ! -e "$CANARY" ]; ok $? "--rw: the user's git commit after the run runs no hook of the box's (canary)"
W=$T_TMP/w8; repo "$W"; rm -f "$CANARY"
wr "$W" "$HOOK; echo hook=\$?" --rw --allow-git-changes
git -C "$W" commit -q --allow-empty -m y 2>/dev/null
[ -e "$CANARY" ]; ok $? "twin: --rw --allow-git-changes: the hook is planted and the canary appears"
rm -f "$CANARY"

# What the box was made with: a nested repository and a .git file
# (a worktree's) are read-only too.
W=$T_TMP/w9; repo "$W"; repo "$W/nested"; mkdir -p "$W/wt"; echo "gitdir: /elsewhere" >"$W/wt/.git"
wr "$W" "echo x >>nested/.git/config; echo n=\$?; echo 'gitdir: /tmp' >wt/.git; echo w=\$?; echo y >nested/y.txt; echo y=\$?" --rw
like "$RES" "n=1.*w=1" "a nested repository's .git and a .git file are read-only in the box"
like "$RES" "y=0" "twin: the nested repository's work tree is not"
is "$(cat "$W/wt/.git")" "gitdir: /elsewhere" "the .git file is as it was"

# The flag is the command line's: no config file sets it, a task line only
# with --trust-task-file.
W=$T_TMP/w10; repo "$W"; mkdir -p "$W/.ward" "$XDG_CONFIG_HOME/ward"
echo '{"allow_git_changes": true}' >"$W/.ward/config.json"
echo '{"allow_git_changes": true}' >"$XDG_CONFIG_HOME/ward/config.json"
wr "$W" "git -c user.name=m -c user.email=m@m commit -q --allow-empty -m x; echo commit=\$?"
like "$ERR" "config.json:1:2: unknown key \"allow_git_changes\" ignored" "a config file's allow_git_changes is no setting: one line says so"
like "$RES" "commit=128" "and the box's .git stays read-only"
rm -f "$XDG_CONFIG_HOME/ward/config.json" "$W/.ward/config.json"
echo '{"id":"t","task":"go","allow_git_changes":true}' >"$T_TMP/tasks.jsonl"
"$WARD" run --model "replay:$T_TMP/replay.json" --workspace "$W" --task-file "$T_TMP/tasks.jsonl" --task-index 0 \
	--out "$T_TMP/fleet" >/dev/null 2>"$T_TMP/err"
is "$?" 64 "a task line's allow_git_changes without --trust-task-file: refused (exit 64)"
like "$(cat "$T_TMP/err")" "\"allow_git_changes\" is taken from a task file only with --trust-task-file" "with one line saying why"

done_testing
