#!/bin/bash
# Lifecycle hooks from the user's config file (Claude Code's shape): run on
# the host, their event as JSON on stdin, exit 2 or a JSON decision blocks,
# a timeout kills the hook's whole process group; a project's file may not
# add one.
. "$(dirname "$0")/lib.sh"
export ANTHROPIC_API_KEY=sk-ant-fake-key
mkdir -p "$XDG_CONFIG_HOME/ward"
CONF=$XDG_CONFIG_HOME/ward/config.json

ws() { WS=$T_TMP/ws-$1; rm -rf "$WS"; mkdir -p "$WS"; printf 'alpha\n' >"$WS/a.txt"; }
run() { # run [flags] TASK -> OUT, ERR, RC, MS
	local t0; t0=$(now_ms)
	"$WARD" run --provider anthropic --base-url "$URL" --model fake-model --workspace "$WS" --rw "$@" \
		>"$T_TMP/out" 2>"$T_TMP/err" </dev/null
	RC=$?
	MS=$(( $(now_ms) - t0 ))
	OUT=$(cat "$T_TMP/out"); ERR=$(cat "$T_TMP/err")
}
journal() { cat "$(ls -t "$XDG_STATE_HOME"/ward/sessions/*.jsonl | head -1)"; }
hooks() { # hooks EVENT MATCHER COMMAND [TIMEOUT]: the user's file with one hook
	python3 - "$@" >"$CONF" <<'PY'
import json, sys
h = {"type": "command", "command": sys.argv[3]}
if len(sys.argv) > 4: h["timeout"] = int(sys.argv[4])
print(json.dumps({"hooks": {sys.argv[1]: [{"matcher": sys.argv[2], "hooks": [h]}]}}))
PY
}
script() { # script NAME BODY: an executable hook script in T_TMP
	printf '#!/bin/sh\n%s\n' "$2" >"$T_TMP/$1"; chmod +x "$T_TMP/$1"
}

# PreToolUse exit 2: the bash call is refused, the model told stderr.
script pre-no 'cat >/dev/null; echo "no bash here: house policy" >&2; exit 2'
hooks PreToolUse "bash|write" "$T_TMP/pre-no"
serve tool; ws pre-no
run "make a file"
is "$RC" 0 "PreToolUse exit 2: the run goes on (exit 0)"
[ ! -e "$WS/out.txt" ]; ok $? "PreToolUse exit 2: the command did not run (no out.txt)"
like "$(req 2)" 'refused by a PreToolUse hook: no bash here: house policy' "the model's next request carries the hook's reason"
like "$(journal)" '"type":"hook","event":"PreToolUse".*"exit":2,.*"decision":"block"' "the hook run is journalled as a block"

# Twin: exit 0 lets it run; the hook read Claude Code's fields on stdin.
script pre-yes "cat >\"$T_TMP/pre-in.json\"; exit 0"
hooks PreToolUse "bash|write" "$T_TMP/pre-yes"
serve tool; ws pre-yes
run "make a file"
is "$(cat "$WS/out.txt" 2>/dev/null)" made-by-tool "PreToolUse exit 0: the command ran"
IN=$(cat "$T_TMP/pre-in.json" 2>/dev/null)
is "$(json hook_event_name <<<"$IN")" PreToolUse "stdin: hook_event_name"
is "$(json tool_name <<<"$IN")" Bash "stdin: tool_name, as Claude Code names the tool"
is "$(json tool_input.command <<<"$IN")" "echo made-by-tool > out.txt; cat out.txt" "stdin: tool_input"
like "$(json tool_use_id <<<"$IN")" '^[A-Za-z0-9_-]{4,}$' "stdin: tool_use_id"
SID=$(json session_id <<<"$IN")
like "$(journal | head -1)" "\"session\":\"$SID\"" "stdin: session_id is the journal's session"
is "$(json transcript_path <<<"$IN")" "$(ls -t "$XDG_STATE_HOME"/ward/sessions/*.jsonl | head -1)" "stdin: transcript_path is the journal"
like "$(json cwd <<<"$IN")" '^/' "stdin: cwd"

# A matcher that does not match: the hook does not run; twin: one that does.
script pre-mark "cat >/dev/null; touch \"$T_TMP/mark\""
rm -f "$T_TMP/mark"
hooks PreToolUse "write|edit" "$T_TMP/pre-mark"
serve tool; ws nomatch
run "make a file"
[ ! -e "$T_TMP/mark" ]; ok $? "matcher write|edit: not run for bash"
is "$(journal | grep -c '"type":"hook"')" 0 "and no hook record"
hooks PreToolUse "ba.*" "$T_TMP/pre-mark"
serve tool; ws match
run "make a file"
[ -e "$T_TMP/mark" ]; ok $? "matcher ba.*: run for bash"

# JSON permissionDecision deny refuses as exit 2 does.
script pre-deny 'cat >/dev/null; echo "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"denied-by-json\"}}"'
hooks PreToolUse "" "$T_TMP/pre-deny"
serve tool; ws deny
run "make a file"
[ ! -e "$WS/out.txt" ]; ok $? "permissionDecision deny: the command did not run"
like "$(req 2)" 'denied-by-json' "the model is told the reason"

# permissionDecision allow: the calls run where the mode would ask, and
# nobody (no person, no --approve-cmd) is asked; twin: without the hook,
# headless ask mode refuses three and the run ends with exit 3.
pd() { # pd NAME DECISION: a hook that answers with permissionDecision
	script "$1" "cat >/dev/null; echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"$2\",\"permissionDecisionReason\":\"hook-says-$2\"}}'"
}
pd pre-allow allow
hooks PreToolUse "bash" "$T_TMP/pre-allow"
serve bash3; ws allow
run --approve ask "three commands"
is "$RC" 0 "permissionDecision allow: headless in ask mode, the run ends well (exit 0)"
is "$(grep -c round "$WS/rounds.txt" 2>/dev/null)" 3 "permissionDecision allow: the three bash calls ran"
like "$(journal | grep '"type":"gate"' | head -1)" '"decision":"allow","why":"allowed by a PreToolUse hook[^"]*","hook":"allow"' "the journal's gate record: allowed by the hook's allow"
like "$(journal | grep '"type":"hook"' | head -1)" '"decision":"approve","why":"hook-says-allow"' "the hook record: approve, with its reason"
rm -f "$CONF"
serve bash3; ws allow-twin
run --approve ask "three commands"
is "$RC" 3 "twin: without the hook, headless ask mode refuses three calls: exit 3"
[ ! -e "$WS/rounds.txt" ]; ok $? "twin: no call ran"

# The older decision: approve does the same; the --approve-cmd program is
# not asked. Twin: without the hook it is, and its no refuses the call.
script pre-approve 'cat >/dev/null; echo "{\"decision\":\"approve\",\"reason\":\"legacy-ok\"}"'
script approver "cat >/dev/null; touch \"$T_TMP/approver-asked\"; echo not-today; exit 1"
hooks PreToolUse "" "$T_TMP/pre-approve"
serve tool; ws approve; rm -f "$T_TMP/approver-asked"
run --approve ask --approve-cmd "$T_TMP/approver" "make a file"
is "$(cat "$WS/out.txt" 2>/dev/null)" made-by-tool "decision approve: the command ran"
[ ! -e "$T_TMP/approver-asked" ]; ok $? "decision approve: the --approve-cmd program was not asked"
rm -f "$CONF"
serve tool; ws approve-twin
run --approve ask --approve-cmd "$T_TMP/approver" "make a file"
[ -e "$T_TMP/approver-asked" ]; ok $? "twin: without the hook the --approve-cmd program is asked"
[ ! -e "$WS/out.txt" ]; ok $? "twin: and its no refuses the command"

# A deny rule holds over a hook's allow: --deny, the user's file's and the
# project's "deny"; twin: a rule that does not match lets the allow run it.
hooks PreToolUse "bash" "$T_TMP/pre-allow"
serve tool; ws allow-deny
run --approve ask --deny 'bash:echo*' "make a file"
[ ! -e "$WS/out.txt" ]; ok $? "allow does not override --deny: the command did not run"
like "$(req 2)" "denied by the rule --deny 'bash:echo\\*' \\(over a PreToolUse hook's allow\\)" "the model is told the rule won"
like "$(journal | grep '"type":"gate"')" '"decision":"deny".*"hook":"allow"' "the journal's gate record: deny, over the hook's allow"
serve tool; ws allow-deny-twin
run --approve ask --deny 'bash:rm *' "make a file"
is "$(cat "$WS/out.txt" 2>/dev/null)" made-by-tool "twin: a --deny that does not match: the hook's allow runs it"
python3 - "$CONF" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["deny"] = ["bash:echo*"]
json.dump(c, open(sys.argv[1], "w"))
PY
serve tool; ws allow-user-deny
run --approve ask "make a file"
[ ! -e "$WS/out.txt" ]; ok $? "allow does not override the user's file's deny"
hooks PreToolUse "bash" "$T_TMP/pre-allow"
serve tool; ws allow-project-deny
mkdir -p "$WS/.ward"; echo '{"deny": ["bash:echo*"]}' >"$WS/.ward/config.json"
run --approve ask "make a file"
[ ! -e "$WS/out.txt" ]; ok $? "allow does not override the project's deny"

# permissionDecision ask: a read-only tool, which the mode runs, needs a
# person; headless, it is refused; twin: without the hook both reads run.
pd pre-ask ask
hooks PreToolUse "read" "$T_TMP/pre-ask"
serve parallel; ws ask
run --approve auto "read both"
like "$(req 2)" "refused: a PreToolUse hook asks for a person's approval of this read call" "permissionDecision ask: the read is refused headless"
unlike "$(req 2)" 'alpha' "and a.txt was not read"
like "$(journal | grep '"type":"gate"' | head -1)" '"decision":"needs_person".*"hook":"ask"' "the journal's gate record: needs_person, by the hook's ask"
like "$(journal | grep '"type":"hook"' | head -1)" '"decision":"ask","why":"hook-says-ask"' "the hook record: ask, with its reason"
rm -f "$CONF"
serve parallel; ws ask-twin
run --approve auto "read both"
like "$(req 2)" 'alpha' "twin: without the hook the read runs"
# It counts toward the refusals' exit; the --approve-cmd program answers it.
hooks PreToolUse "bash" "$T_TMP/pre-ask"
serve bash3; ws ask-exit
run --approve auto "three commands"
is "$RC" 3 "permissionDecision ask in auto mode, headless: three refusals, exit 3"
[ ! -e "$WS/rounds.txt" ]; ok $? "and no call ran"
script approver-yes "cat >\"$T_TMP/approver-in.json\"; exit 0"
hooks PreToolUse "read" "$T_TMP/pre-ask"
serve parallel; ws ask-approver; rm -f "$T_TMP/approver-in.json"
run --approve auto --approve-cmd "$T_TMP/approver-yes" "read both"
like "$(cat "$T_TMP/approver-in.json" 2>/dev/null)" '"tool":"read"' "permissionDecision ask: the --approve-cmd program is asked about a read"
like "$(req 2)" 'alpha' "and its yes runs it"

# PostToolUse sees tool_response; its additionalContext reaches the model.
script post "cat >\"$T_TMP/post-in.json\"; echo '{\"additionalContext\": \"post-context-marker\"}'"
hooks PostToolUse "bash" "$T_TMP/post"
serve tool; ws post
run "make a file"
IN=$(cat "$T_TMP/post-in.json" 2>/dev/null)
is "$(json hook_event_name <<<"$IN")" PostToolUse "PostToolUse: hook_event_name"
like "$(json tool_response <<<"$IN")" '"outcome": "ok".*made-by-tool' "PostToolUse: tool_response holds the command's output"
like "$(req 2)" 'post-context-marker' "PostToolUse: additionalContext is in the next request"
unlike "$(req 1)" 'post-context-marker' "and not before the call"

# UserPromptSubmit exit 2: no request is sent; twin exit 0.
script prompt-no "cat >\"$T_TMP/prompt-in.json\"; echo 'prompts need a ticket number' >&2; exit 2"
hooks UserPromptSubmit "" "$T_TMP/prompt-no"
serve tool; ws prompt-no
run "make a file"
is "$(nreq)" 0 "UserPromptSubmit exit 2: no request reached the model"
like "$ERR" 'UserPromptSubmit hook stopped the prompt: prompts need a ticket number' "the reason is shown"
is "$(json prompt <"$T_TMP/prompt-in.json")" "make a file" "UserPromptSubmit: prompt on stdin"
script prompt-yes 'cat >/dev/null; exit 0'
hooks UserPromptSubmit "" "$T_TMP/prompt-yes"
serve tool; ws prompt-yes
run "make a file"
is "$(nreq)" 2 "UserPromptSubmit exit 0: the prompt was sent (two rounds)"

# Stop exit 2: the turn goes on once with the reason, not forever.
script stop-no "cat >>\"$T_TMP/stop-in.jsonl\"; echo >>\"$T_TMP/stop-in.jsonl\"; echo 'run the tests before you stop' >&2; exit 2"
hooks Stop "" "$T_TMP/stop-no"
serve text; ws stop-no; rm -f "$T_TMP/stop-in.jsonl"
run "say hello"
is "$RC" 0 "Stop exit 2: the run ends (exit 0)"
is "$(nreq)" 2 "Stop exit 2: exactly one more request"
like "$(req 2)" 'run the tests before you stop' "which carries the hook's reason"
is "$(grep -c . "$T_TMP/stop-in.jsonl")" 2 "the Stop hook ran at each stop"
is "$(sed -n 1p "$T_TMP/stop-in.jsonl" | json stop_hook_active)" false "first: stop_hook_active false"
is "$(sed -n 2p "$T_TMP/stop-in.jsonl" | json stop_hook_active)" true "second: stop_hook_active true, and it cannot hold the turn again"
script stop-yes 'cat >/dev/null; exit 0'
hooks Stop "" "$T_TMP/stop-yes"
serve text; ws stop-yes
run "say hello"
is "$(nreq)" 1 "Stop exit 0: no extra request"

# SessionStart: once, with the session's id; its additionalContext reaches the model.
script start "cat >>\"$T_TMP/start-in.jsonl\"; echo >>\"$T_TMP/start-in.jsonl\"; echo '{\"hookSpecificOutput\": {\"hookEventName\": \"SessionStart\", \"additionalContext\": \"start-context-marker\"}}'"
hooks SessionStart "" "$T_TMP/start"
serve tool; ws start; rm -f "$T_TMP/start-in.jsonl"
run "make a file"
is "$(grep -c . "$T_TMP/start-in.jsonl")" 1 "SessionStart ran once"
IN=$(head -1 "$T_TMP/start-in.jsonl")
like "$(journal | head -1)" "\"session\":\"$(json session_id <<<"$IN")\"" "SessionStart: its session_id"
is "$(json source <<<"$IN")" startup "SessionStart: source startup"
like "$(req 1)" 'start-context-marker' "SessionStart: additionalContext is in the first request"

# PreCompact: told before the summary request is sent; twin: no compaction, no run.
script precompact "cat >>\"$T_TMP/precompact-in.jsonl\"; echo >>\"$T_TMP/precompact-in.jsonl\"; wc -l <\"\$LOG\" >\"$T_TMP/precompact-nreq\""
hooks PreCompact "" "$T_TMP/precompact"
serve compact-grow; ws precompact; rm -f "$T_TMP/precompact-in.jsonl"
export LOG	# the hook counts the requests made before it ran
run --context-window 100000 "grow the conversation"
is "$(grep -c . "$T_TMP/precompact-in.jsonl")" 1 "PreCompact ran once, at the compaction"
is "$(head -1 "$T_TMP/precompact-in.jsonl" | json trigger)" auto "PreCompact: trigger auto"
is "$(tr -d ' ' <"$T_TMP/precompact-nreq")" 4 "PreCompact ran after round 4, before the summary request"
serve compact-grow; ws precompact-twin; rm -f "$T_TMP/precompact-in.jsonl"
run --context-window 1000000 "grow the conversation"
[ ! -e "$T_TMP/precompact-in.jsonl" ]; ok $? "twin: no compaction, PreCompact not run"

# A hook past its timeout: killed with its whole group, the canary
# grandchild included; the run goes on and the journal says so.
MARK=$$
script slow "cat >/dev/null; ( sleep 3.$MARK; touch \"$T_TMP/canary\" ) & sleep 100.$MARK"
hooks PreToolUse "" "$T_TMP/slow" 1
serve tool; ws slow
run "make a file"
is "$RC" 0 "a hook past its timeout: the run goes on (exit 0)"
is "$(cat "$WS/out.txt" 2>/dev/null)" made-by-tool "and the call ran"
lt "$MS" 5000 "the whole run took its 1 s timeout and little more"
REC=$(journal | grep '"type":"hook"')
like "$REC" '"decision":"timeout"' "the journal records the timeout"
E=$(json elapsed_ms <<<"$REC")
lt "${E:-99999}" 1600 "the hook was killed within 1 s + slack"
lt 900 "${E:-0}" "and not before its timeout"
like "$ERR" 'killed after its timeout of 1 s' "one line says so"
pgrep -f "^sleep 3\.$MARK\$" >/dev/null; ok $((! $?)) "the background grandchild is gone"
pgrep -f "^sleep 100\.$MARK\$" >/dev/null; ok $((! $?)) "the hook's own sleep is gone"
hook_left() { pgrep -f "$T_TMP/$1\$|^sleep [0-9]+\.$MARK\$" >/dev/null; }	# hook_left NAME: a process of the hook (its subshells, its sleeps) runs
wait_until 5 eval '! hook_left slow'; ok $? "nothing of the hook is left (not the subshell that would touch the canary)"
[ ! -e "$T_TMP/canary" ]; ok $? "the canary never touched its file"

# A hook's setsid child left its process group: the hook runs in a
# cgroup of its own (where ward can make one, as here), and cgroup.kill
# ends that child with it. Twin: while the hook ran, the child was running.
script setsid-hook "cat >/dev/null; cat /proc/self/cgroup >\"$T_TMP/hook-cg\"; setsid sh -c 'echo \$\$ >\"$T_TMP/sid-pid\"; sleep 2.$MARK; touch \"$T_TMP/canary3\"' & for i in 1 2 3 4 5 6 7 8 9 10; do [ -s \"$T_TMP/sid-pid\" ] && break; sleep 0.1; done; kill -0 \$(cat \"$T_TMP/sid-pid\") && echo alive >\"$T_TMP/sid-alive\"; exit 0"
hooks PreToolUse "" "$T_TMP/setsid-hook"
serve tool; ws setsid; rm -f "$T_TMP"/sid-* "$T_TMP/canary3"
run "make a file"
V2=/sys/fs/cgroup; [ -e $V2/cgroup.controllers ] || V2=/sys/fs/cgroup/unified
V2=$V2$(sed -n 's/^0::\/*/\//p' /proc/self/cgroup)
if [ -e "$V2/cgroup.procs" ] && [ -w "$V2" ]; then
	like "$(cat "$T_TMP/hook-cg" 2>/dev/null)" '^0::.*/ward-hook-[0-9]+-[0-9]+$' "the hook ran in a cgroup of its own"
	is "$(cat "$T_TMP/sid-alive" 2>/dev/null)" alive "twin: while the hook ran, its setsid child was running"
	SP=$(cat "$T_TMP/sid-pid" 2>/dev/null)
	for _ in $(seq 20); do gone "${SP:-0}" && break; sleep 0.05; done
	gone "${SP:-0}"; ok $? "once the hook answered, its setsid child is gone (the hook's cgroup was killed)"
	# That child was the shell that would touch the canary: gone, it never will.
	[ ! -e "$T_TMP/canary3" ]; ok $? "and the setsid child's canary never appeared"
	# This hook's own group (other runs on the machine have theirs).
	V2ROOT=/sys/fs/cgroup; [ -e $V2ROOT/cgroup.controllers ] || V2ROOT=/sys/fs/cgroup/unified
	HCG=$(sed -n 's/^0:://p' "$T_TMP/hook-cg" 2>/dev/null)
	[ -n "$HCG" ] && [ ! -e "$V2ROOT$HCG" ]; ok $? "and no hook cgroup is left (its ${HCG##*/} is gone)"
else
	ok 0 "a hook's setsid child # SKIP ward cannot make a cgroup here (no writable cgroup v2)"
fi

# SIGTERM to ward while a hook runs: the hook's group is killed at once
# (not at its 60 s timeout), the call it was checking does not run, and
# the run ends cancelled.
script stuck "cat >/dev/null; touch \"$T_TMP/stuck-started\"; ( sleep 3.$MARK; touch \"$T_TMP/canary2\" ) & sleep 101.$MARK"
hooks PreToolUse "" "$T_TMP/stuck" 60
serve tool; ws stuck; rm -f "$T_TMP/stuck-started"
"$WARD" run --provider anthropic --base-url "$URL" --model fake-model --workspace "$WS" --rw "make a file" \
	>/dev/null 2>"$T_TMP/err" </dev/null &
WP=$!
for _ in $(seq 200); do [ -e "$T_TMP/stuck-started" ] && break; sleep 0.05; done
t0=$(now_ms); kill -TERM $WP; wait $WP; RC=$?; MS=$(( $(now_ms) - t0 ))
is "$RC" 130 "SIGTERM while a hook runs: the run ends cancelled (exit 130)"
lt "$MS" 2000 "at once, not at the hook's 60 s timeout (${MS} ms)"
[ ! -e "$WS/out.txt" ]; ok $? "the call the hook was checking did not run"
like "$(journal | grep '"type":"hook"')" '"decision":"interrupted"' "the journal records the hook interrupted"
pgrep -f "^sleep 101\.$MARK\$" >/dev/null; ok $((! $?)) "the hook's own sleep is gone"
wait_until 5 eval '! hook_left stuck'; ok $? "nothing of the hook is left (not the subshell that would touch the canary)"
[ ! -e "$T_TMP/canary2" ]; ok $? "its background child never touched its file"

# SIGKILL of ward while a hook runs: ward's guard kills the hook's whole
# group, its background child included, within 2 s; twin: while ward
# lived, both were running. The guard ends too.
alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
script orphan "cat >/dev/null; sleep 300.$MARK & echo \$! >\"$T_TMP/orphan-child\"; echo \$\$ >\"$T_TMP/orphan-hook\"; sleep 302.$MARK"
hooks PreToolUse "" "$T_TMP/orphan" 60
serve tool; ws orphan; rm -f "$T_TMP"/orphan-*
"$WARD" run --provider anthropic --base-url "$URL" --model fake-model --workspace "$WS" --rw "make a file" \
	>/dev/null 2>"$T_TMP/err" </dev/null &
WP=$!
for _ in $(seq 200); do [ -s "$T_TMP/orphan-hook" ] && break; sleep 0.05; done
HP=$(cat "$T_TMP/orphan-hook" 2>/dev/null); CP=$(cat "$T_TMP/orphan-child" 2>/dev/null)
for _ in $(seq 40); do GP=$(pgrep -P $WP -x ward-hookguard) && break; sleep 0.05; done
alive "${HP:-0}"; ok $? "twin: while ward lives, the hook runs (pid ${HP:-none})"
alive "${CP:-0}"; ok $? "twin: and so does its background child (pid ${CP:-none})"
alive "${GP:-0}"; ok $? "twin: and ward's hook guard (pid ${GP:-none})"
kill -KILL $WP; wait $WP 2>/dev/null
t0=$(now_ms)
for _ in $(seq 40); do alive "${HP:-0}" || alive "${CP:-0}" || break; sleep 0.05; done
! alive "${HP:-0}"; ok $? "SIGKILL of ward: the hook is gone within 2 s ($(( $(now_ms) - t0 )) ms)"
! alive "${CP:-0}"; ok $? "SIGKILL of ward: the hook's background child is gone within 2 s"
for _ in $(seq 40); do alive "${GP:-0}" || break; sleep 0.05; done
! alive "${GP:-0}"; ok $? "and the guard is gone too"
pgrep -f "^sleep 30[02]\.$MARK\$" >/dev/null; ok $((! $?)) "no sleep of the hook's is left"
# A run that ends on its own leaves no guard behind.
# (The script's parent is sh -c; ward is the parent of that.)
script guard-probe "cat >/dev/null; W=\$(awk '{print \$4}' /proc/\$PPID/stat); for i in \$(seq 40); do pgrep -P \$W -x ward-hookguard >\"$T_TMP/guard-pid\" && break; sleep 0.05; done"
hooks PreToolUse "" "$T_TMP/guard-probe"
serve tool; ws guard-end; rm -f "$T_TMP/guard-pid"
run "make a file"
GP=$(cat "$T_TMP/guard-pid" 2>/dev/null)
like "$GP" '^[0-9]+$' "twin: a guard ran beside the hook"
for _ in $(seq 40); do alive "${GP:-0}" || break; sleep 0.05; done
! alive "${GP:-0}"; ok $? "a run that ends: its guard ends with it"

# A hook written for Claude Code runs unchanged: its matcher names Claude
# Code's tools (Write|Edit, Bash, Read), it reads Claude Code's fields
# (tool_input.file_path) with jq, and it answers with updatedInput.
cat >"$T_TMP/cc-guard" <<'SH'
#!/bin/bash
# A PreToolUse hook as Claude Code's documentation has them.
input=$(cat)
printf '%s\n' "$input" >>"$CC_LOG"
tool=$(jq -r '.tool_name' <<<"$input")
file=$(jq -r '.tool_input.file_path // empty' <<<"$input")
case "$file" in
*.env) echo "Blocked: $tool to $file (secrets)" >&2; exit 2 ;;
esac
if [ "$tool" = Bash ] && [ -n "${CC_REWRITE:-}" ]; then
	jq -n --arg c "$CC_REWRITE" '{hookSpecificOutput: {hookEventName: "PreToolUse",
		permissionDecision: "allow", updatedInput: {command: $c, description: "rewritten by the hook"}}}'
fi
exit 0
SH
chmod +x "$T_TMP/cc-guard"
export CC_LOG=$T_TMP/cc-log.jsonl
cchooks() { # cchooks MATCHER: the Claude Code hook on PreToolUse
	printf '{"hooks": {"PreToolUse": [{"matcher": "%s", "hooks": [{"type": "command", "command": "%s"}]}]}}\n' \
		"$1" "$T_TMP/cc-guard" >"$CONF"
}
cchooks 'Write|Edit'
export FAKE_TOOL=write FAKE_INPUT='{"path": "secret.env", "content": "KEY=1\n"}'
serve mcp-call; ws cc-block; rm -f "$CC_LOG"
run --json "write the key"
[ ! -e "$WS/secret.env" ]; ok $? "Claude Code hook, matcher Write|Edit: the write to secret.env did not run"
like "$(req 2)" 'refused by a PreToolUse hook: Blocked: Write to secret.env' "the model is told the hook's reason"
is "$(json tool_input.file_path <"$CC_LOG")" secret.env "the hook read tool_input.file_path"
like "$(grep '"type":"approval"' "$T_TMP/out")" '"decision":"deny","why":"Blocked: Write to secret.env \(secrets\)","hook":"deny"' "a call the hook refused has its approval event"
is "$(grep '"type":"result"' "$T_TMP/out" | json refused)" 1 "and counts in refused"
like "$(journal | grep '"type":"gate"')" '"decision":"deny".*"hook":"deny"' "and a gate record in the journal"
unlike "$ERR" 'matches no tool' "a matcher of Claude Code's names gets no warning"
export FAKE_INPUT='{"path": "notes.txt", "content": "fine\n"}'
serve mcp-call; ws cc-block-twin
run "write the notes"
is "$(cat "$WS/notes.txt" 2>/dev/null)" fine "twin: a write the hook allows runs"
export FAKE_TOOL=read FAKE_INPUT='{"path": "a.txt"}'
cchooks 'Read'; rm -f "$CC_LOG"
serve mcp-call; ws cc-read
run "read it"
is "$(json tool_name <"$CC_LOG")" Read "matcher Read: the hook ran for read, told tool_name Read"
is "$(json tool_input.file_path <"$CC_LOG")" a.txt "and tool_input.file_path"
cchooks 'Grep|Glob|LS'; rm -f "$CC_LOG"
export FAKE_TOOL=find FAKE_INPUT='{"pattern": "*.txt"}' FAKE_TOOL2=ls FAKE_INPUT2='{}'
serve mcp-call; ws cc-glob
run "find them"
is "$(jq -r .tool_name "$CC_LOG" 2>/dev/null | tr '\n' ' ')" "Glob LS " "matcher Grep|Glob|LS: find and ls are Glob and LS"
unset FAKE_TOOL2 FAKE_INPUT2

# updatedInput: the hook's input runs instead of the model's, through the
# same checks; twins: an input the tool refuses does not run, and the gate
# sees the new input (a deny rule over it refuses it).
cchooks 'Bash'
export FAKE_TOOL=bash FAKE_INPUT='{"command": "echo from-model > out.txt", "timeout": 30}'
export CC_REWRITE='echo from-hook > out.txt'
serve mcp-call; ws cc-update; rm -f "$CC_LOG"
run --approve ask "make a file"
is "$(cat "$WS/out.txt" 2>/dev/null)" from-hook "updatedInput: the hook's command ran, not the model's"
is "$(json tool_input.timeout <"$CC_LOG")" 30000 "the hook saw bash's timeout in milliseconds, as Claude Code's"
like "$(journal | grep '"type":"intent"')" '"input":\{"command":"echo from-hook > out.txt"\},"hook_updated":true' "the journal's intent is the input that ran"
like "$(journal | grep '"type":"hook"')" '"updated_input":\{"command":"echo from-hook' "the hook record keeps what it gave"
export CC_REWRITE=''
serve mcp-call; ws cc-update-twin
run "make a file"
is "$(cat "$WS/out.txt" 2>/dev/null)" from-model "twin: without updatedInput the model's command runs"
python3 - "$T_TMP/cc-guard" <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
open(p + "-bad", "w").write(s.replace("updatedInput: {command: $c", "updatedInput: {command: $c, cwd: \"/\""))
PY
chmod +x "$T_TMP/cc-guard-bad"
printf '{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "%s"}]}]}}\n' "$T_TMP/cc-guard-bad" >"$CONF"
export CC_REWRITE='echo from-hook > out.txt'
serve mcp-call; ws cc-update-bad
run "make a file"
[ ! -e "$WS/out.txt" ]; ok $? "updatedInput with a field bash has not: nothing runs"
like "$(req 2)" "not run: the PreToolUse hook's updatedInput is bad input: bash: unknown field \\\\\"cwd\\\\\"" "the model is told what was wrong"
cchooks 'Bash'
export CC_REWRITE='rm -rf out.txt; echo gone > out.txt'
serve mcp-call; ws cc-update-gate
run --deny 'bash:rm *' "make a file"
[ ! -e "$WS/out.txt" ]; ok $? "updatedInput goes through the gate: a --deny over the new command refuses it"
like "$(req 2)" "denied by the rule --deny 'bash:rm \\*'" "the rule is named"
unset CC_REWRITE

# A matcher that can match no tool: one warning line; twin: no line for one that can.
cchooks 'MultiEdit|WebFetch'
export FAKE_TOOL=ls FAKE_INPUT='{}'
serve mcp-call; ws cc-nomatch
run "list"
like "$ERR" 'warning: PreToolUse hook matcher "MultiEdit\|WebFetch" matches no tool' "a matcher of tools ward has not: a warning"
is "$(printf '%s\n' "$ERR" | grep -c 'matches no tool')" 1 "once"
cchooks 'mcp__github__.*'
serve mcp-call; ws cc-mcp
run "list"
unlike "$ERR" 'matches no tool' "twin: an mcp__ matcher gets none (its tools are known later)"
unset FAKE_TOOL FAKE_INPUT

# A project's file may not add hooks (one line, naming the file); the same
# in the user's file runs.
rm -f "$T_TMP/mark" "$CONF"
serve tool; ws project
mkdir -p "$WS/.ward"
printf '{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "touch %s"}]}]}}\n' "$T_TMP/mark" >"$WS/.ward/config.json"
run "make a file"
like "$ERR" '\.ward/config\.json.*"hooks" ignored: hooks run on your machine as you' "project hooks: ignored, the file named"
is "$(printf '%s\n' "$ERR" | grep -c 'hooks')" 1 "in one line"
[ ! -e "$T_TMP/mark" ]; ok $? "project hooks: not run"
cp "$WS/.ward/config.json" "$CONF"; rm -rf "$WS/.ward"
serve tool; ws user
run "make a file"
[ -e "$T_TMP/mark" ]; ok $? "the same hooks in the user's file: run"
unlike "$ERR" 'ignored' "with no warning"

# A bad hooks entry in the user's file: one line, what to do.
echo '{"hooks": {"PreToolUse": [{"hooks": [{"type": "command"}]}]}}' >"$CONF"
run "make a file"
is "$RC" 64 "a hook without a command: usage error"
like "$ERR" 'each hook is \{"type": "command", "command": a string' "it says what a hook is"
echo '{"hooks": {"BeforeTool": []}}' >"$CONF"
run "make a file"
like "$ERR" 'no event named "BeforeTool"' "an unknown event is named"

# Every hook run: a journal record and a --json event, valid by the schema.
script ok0 'cat >/dev/null; exit 0'
cat >"$CONF" <<JSON
{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "$T_TMP/ok0"}]}],
 "PreToolUse": [{"matcher": "bash", "hooks": [{"type": "command", "command": "$T_TMP/ok0"}]}],
 "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "$T_TMP/ok0"}]}]}}
JSON
serve tool; ws json
run --json "make a file"
is "$(grep -c '"type":"hook"' "$T_TMP/out")" 3 "--json: three hook events"
is "$(journal | grep -c '"type":"hook"')" 3 "journal: three hook records"
like "$(grep '"type":"hook"' "$T_TMP/out" | head -1)" '"event":"UserPromptSubmit","command":"[^"]*ok0","exit":0,"elapsed_ms":[0-9]+,"decision":"continue"' "a hook event's fields"
is "$(validate_events "$T_TMP/out")" "valid $(wc -l <"$T_TMP/out" | tr -d ' ')" "--json output validates against the schema"

done_testing
