#!/bin/bash
# ward run end to end: the fake LLM server (real HTTP and SSE on loopback)
# drives the loop for both providers, in real boxes.
. "$(dirname "$0")/lib.sh"
export XDG_STATE_HOME=$T_TMP/state
export ANTHROPIC_API_KEY=sk-ant-fake-key OPENAI_API_KEY=sk-oa-fake-key

ws() { # a fresh workspace
	WS=$T_TMP/ws-$1
	rm -rf "$WS"; mkdir -p "$WS"
	printf 'alpha\n' >"$WS/a.txt"; printf 'beta\n' >"$WS/b.txt"
}
call_left() { pgrep -f "sleep 100\.$SRV" >/dev/null; }	# the scenario's `sleep 100.SERVER-PID`, or the shell that would write its canary after it, runs
sleeper_gone() { # nothing of the scenario's call runs on the host (waits up to 5 s): its canary can no longer be written
	wait_until 5 eval '! call_left'
}
sleeper_runs() { wait_until 10 pgrep -f "^sleep 100\.$SRV\$" >/dev/null; }	# the scenario's call runs its sleep (waits up to 10 s)
run() { # run PROVIDER [flags] TASK -> OUT, ERR, RC, MS
	local p=$1; shift
	local base=$URL
	[ "$p" = openai ] && base=$URL/v1
	local t0; t0=$(now_ms)
	"$WARD" run --provider "$p" --base-url "$base" --model fake-model --workspace "$WS" "$@" \
		>"$T_TMP/out" 2>"$T_TMP/err" </dev/null
	RC=$?
	MS=$(( $(now_ms) - t0 ))
	OUT=$(cat "$T_TMP/out"); ERR=$(cat "$T_TMP/err")
}

for P in anthropic openai; do
	serve text; ws text
	run $P "say hello"
	is "$RC" 0 "$P: text only: exit 0"
	like "$OUT" "Hello from the fake model" "$P: the answer is on stdout"
	like "$ERR" "done" "$P: the stop is on stderr"
	like "$ERR" "finished \\($( [ $P = openai ] && echo stop || echo end_turn)\\)" "$P: in the provider's own words"
	like "$(req 1)" '"has_key": true' "$P: the key is sent"
	unlike "$ERR$OUT" "fake-key" "$P: the key is never printed"

	serve tool; ws tool
	run $P --json "write a file"
	is "$RC" 0 "$P: one tool call: exit 0"
	is "$(nreq)" 2 "$P: two requests"
	like "$(req 2)" "made-by-tool" "$P: the tool's output reached the second request"
	like "$OUT" '"type": *"tool_result"' "$P: --json has the tool_result event"
	like "$(printf '%s\n' "$OUT" | tail -1)" '"type":"result".*"stop":"done"' "$P: --json ends with the result event"
	like "$OUT" '"changed_files":\[\{"path":"out.txt","change":"added"' "$P: the result lists the changed file"
	printf '%s\n' "$OUT" >"$T_TMP/events-$P.jsonl"
	V=$(validate_events "$T_TMP/events-$P.jsonl" 2>&1)
	like "$V" "^valid [0-9]+" "$P: every --json line validates against tests/run-events.schema.json ($V)"
	[ ! -e "$WS/out.txt" ]; ok $? "$P: the user's tree is untouched without --apply"

	serve parallel; ws parallel
	run $P "read two"
	is "$RC" 0 "$P: two parallel calls: exit 0"
	like "$(req 2)" "alpha" "$P: the first result is sent"
	like "$(req 2)" "beta" "$P: the second result is sent"

	serve split; ws split
	run $P --apply "write split"
	is "$RC" 0 "$P: tool input split at every byte: exit 0"
	is "$(cat "$WS/split.txt" 2>/dev/null)" 'ünïcode ✓ and "quotes"' "$P: the input arrived whole (--apply wrote it)"

	# A stream stalled or cut after its first words is retried (no call
	# of its message has run), and what was shown is not shown again.
	shown() { # the text events of --json output, joined
		grep '"type":"text"' "$T_TMP/out" | python3 -c 'import json,sys; print("".join(json.loads(l)["text"] for l in sys.stdin), end="")'
	}
	serve stall; ws stall
	run $P --json --idle-timeout 1s "stall"
	is "$RC" 0 "$P: a stream stalled after its first words is cut at the idle limit and retried"
	is "$(nreq)" 2 "$P: one retry"
	like "$(grep '"type":"retry"' "$T_TMP/out")" "idle.*what it showed is not shown again" "$P: the retry says why, and that nothing is shown twice"
	lt "$MS" 5000 "$P: without waiting for the stall to end"
	is "$(shown | sed 's/ *$//')" "Answer after a stalled stream was retried." "$P: the text was shown once, whole"

	serve cut; ws cut
	run $P "cut"
	is "$RC" 0 "$P: a connection cut mid-event after its first words is retried"
	is "$(nreq)" 2 "$P: once"
	is "$(printf '%s' "$OUT" | sed 's/ *$//')" "The beginning of an answer that was cut and then ended well." "$P: stdout is the whole answer"
	is "$(printf '%s\n' "$ERR" | grep -o 'The beginning' | wc -l)" 1 "$P: the words shown before the cut are not shown again"
	serve cut; ws cut-twin
	run $P --retries 0 "cut"
	is "$RC" 1 "$P: twin, --retries 0: the cut stream is an error"
	like "$ERR" "incomplete" "$P: it says the stream was incomplete"
	is "$(nreq)" 1 "$P: one request"

	serve 429; ws 429
	run $P "rate limited"
	is "$RC" 0 "$P: 429 then success"
	is "$(nreq)" 2 "$P: after one retry"
	lt 950 "$MS" "$P: retry-after (1 s) was honoured"

	serve 529; ws 529
	run $P "overloaded"
	is "$RC" 0 "$P: 529 then success"

	serve 400; ws 400
	run $P "bad"
	is "$RC" 1 "$P: a 400 is not retried: exit 1"
	is "$(nreq)" 1 "$P: one request"
	like "$ERR" "HTTP 400: invalid_request_error: bad request body" "$P: the API's message, in one line"

	serve error-event; ws error-event
	run $P --json "error mid-stream"
	is "$RC" 0 "$P: an overload error mid-stream after its first words is retried"
	like "$(grep '"type":"retry"' "$T_TMP/out")" "Overloaded" "$P: the retry has the API's message"
	is "$(shown | sed 's/ *$//')" "Some words shown before the error and the rest after it." "$P: each word shown once"
	serve error-event; ws error-event-twin
	run $P --retries 0 "error mid-stream"
	is "$RC" 1 "$P: twin, --retries 0: a provider error"
	like "$ERR" "Overloaded" "$P: with the API's message"

	# A 429 storm longer than two retries; twin: --retries 2 gives up.
	serve 429-storm; ws storm
	run $P "storm"
	is "$RC" 0 "$P: five 429s, then an answer: the default retries (10) carry it"
	is "$(nreq)" 6 "$P: six requests"
	serve 429-storm; ws storm-twin
	run $P --retries 2 "storm"
	is "$RC" 1 "$P: twin, --retries 2: the storm wins (exit 1)"
	like "$ERR" "HTTP 429.*after 2 retries" "$P: saying how often it tried"
	# With a deadline and no --retries, retries go on as long as it allows.
	serve 429-always; ws storm-deadline
	run $P --deadline 3s "storm"
	is "$RC" 2 "$P: always 429, --deadline 3s: the deadline ends it (exit 2)"
	lt 11 "$(nreq)" "$P: after more tries than the default's 10"
	# The deadline falls in a retry's wait or in a request: either is said.
	like "$ERR" "the run's deadline (came before the retry|was reached)" "$P: it says so"

	# A refused key: its own exit (6), not retried; twin: a 400 is exit 1 (above).
	for S in 401 403; do
		serve $S; ws auth-$S
		run $P "bad key"
		is "$RC" 6 "$P: HTTP $S: exit 6, a refused key"
		is "$(nreq)" 1 "$P: HTTP $S: not retried"
		like "$ERR" "^ward: auth_error: the API answered HTTP $S.*refused the key" "$P: HTTP $S: one line says so"
	done
	# A 404 names the URL that was not found.
	serve 404; ws notfound
	run $P "where"
	like "$ERR" "HTTP 404.* at http://127\.0\.0\.1:[0-9]+/v1/(messages|chat/completions) \(is --base-url right\?\)" "$P: a 404 names the URL"
	like "$(req 1)" '"user_agent": "ward/[0-9]' "$P: requests carry a User-Agent"

	serve maxtokens; ws maxtokens
	run $P --json "cut call"
	is "$RC" 0 "$P: max_tokens inside a tool call"
	like "$(req 2)" "not run" "$P: the cut call is reported as not run"
	like "$(printf '%s\n' "$OUT" | tail -1)" '"changed_files":\[\]' "$P: and never ran (no file in the changes)"

	serve refusal; ws refusal
	run $P --json "refuse"
	is "$RC" 5 "$P: a model's refusal is its own stop (exit 5), not done"
	like "$(printf '%s\n' "$OUT" | tail -1)" '"stop":"model_refused"' "$P: the result's stop is model_refused"
	like "$OUT" "declined the request \\(stop reason $( [ $P = openai ] && echo content_filter || echo refusal)\\)" "$P: and says so, in the provider's words"

	# Usage past --max-tokens in a round: its calls do not run.
	serve parallel; ws budget-call
	run $P --json --max-tokens 20 "read two"
	is "$RC" 2 "$P: a round that used up the token budget: exit 2"
	is "$(nreq)" 1 "$P: no second request"
	is "$(printf '%s\n' "$OUT" | grep -c '"outcome":"cancelled","text":"not run: the token budget')" 2 "$P: neither of its calls ran (the budget is checked before every call)"
	serve parallel; ws budget-call-twin
	run $P --json --max-tokens 100 "read two"
	like "$(req 2)" "alpha" "$P: twin: with room left the same calls run"

	serve loop; ws loop
	run $P --max-rounds 3 "loop forever"
	is "$RC" 2 "$P: a model that loops: the round cap stops it (exit 2)"
	is "$(nreq)" 3 "$P: after 3 rounds"
	like "$ERR" "round cap" "$P: the stop says round cap"
done

# --json carries the model's text exactly, one event a line even for a
# reader that splits on Unicode line breaks (U+2028, U+2029, U+0085).
for P in anthropic openai; do
	serve unicode-json; ws unicode-$P
	run $P --json "unicode"
	V=$(printf '%s\n' "$OUT" | python3 -c '
import json, sys
text = "".join(json.loads(l).get("text", "") for l in sys.stdin.read().splitlines() if "\"type\":\"text\"" in l)
print("exact" if text.rstrip(" ") == "sep\u2028par\u2029nel\u0085nbsp\u00a0zw\u200bemoji\U0001F600 end" else "differs: %r" % text)')
	is "$V" exact "$P: --json text is the model's, exactly, and every line parses split by str.splitlines"
done

# Model text with escape sequences does not reach the terminal raw.
serve unicode-term; ws term
run anthropic "colours"
is "$RC" 0 "escape sequences in model text: exit 0"
[ "$(printf '%s' "$OUT" | tr -d -c '\033\007' | wc -c)" -eq 0 ]; ok $? "no ESC or BEL byte reaches stdout"
like "$OUT" 'colour \^\[\[31mRED' "they are shown, made harmless"

# A deadline hit while a bash call runs: the call is cancelled in its box.
for P in anthropic openai; do
	serve sleep; ws sleep-$P
	run $P --rw --deadline 3s "sleep"
	is "$RC" 2 "$P: deadline during a bash call: exit 2"
	lt "$MS" 4000 "$P: ward returns within 1 s of the 3 s deadline"
	like "$ERR" "deadline" "$P: the stop says deadline"
	sleeper_gone; ok $? "$P: its sleep is gone from the host"
	[ ! -e "$WS/canary-deadline" ]; ok $? "$P: the call's process did not survive (canary)"
done

# The other budgets, each checked before a round or a call.
serve loop; ws calls
run anthropic --max-calls 2 "loop"
is "$RC" 2 "the tool-call cap stops a looping model (exit 2)"
like "$ERR" "tool-call cap \(2\)" "the stop names the cap"
is "$(nreq)" 3 "the model asked for a third call in round 3"
like "$(tail -3 "$XDG_STATE_HOME"/ward/sessions/$(ls -t "$XDG_STATE_HOME"/ward/sessions | head -1))" "not run: the run's tool-call cap" "the call past the cap is journaled as not run"
serve loop; ws tokens
run anthropic --max-tokens 50 "loop"
is "$RC" 2 "the token budget stops a looping model (exit 2)"
is "$(nreq)" 2 "after the round that used it up (30 tokens a round)"
like "$ERR" "token budget \(50\)" "the stop names the budget"
run anthropic --max-cost 1 "loop"
is "$RC" 64 "--max-cost for a model without known prices: usage error"
like "$ERR" "does not know the prices of fake-model" "and says so"

# SIGINT during a bash call: cancelled in the box, the stop recorded, 130.
export XDG_STATE_HOME=$T_TMP/state-sigint
serve sleep; ws sigint
"$WARD" run --provider anthropic --base-url "$URL" --model fake-model --workspace "$WS" --rw "sleep" >/dev/null 2>"$T_TMP/err" &
WP=$!
for _ in $(seq 100); do grep -q '"intent"' "$XDG_STATE_HOME"/ward/sessions/*.jsonl 2>/dev/null && break; sleep 0.1; done
sleeper_runs
t0=$(now_ms)
kill -INT $WP
wait $WP; RC=$?
MS=$(( $(now_ms) - t0 ))
is "$RC" 130 "SIGINT: exit 130"
lt "$MS" 1500 "SIGINT: the run ends within 1.5 s (the call's sleep dies at SIGTERM)"
J=$(cat "$XDG_STATE_HOME"/ward/sessions/*.jsonl)
like "$J" '"type":"result".*"outcome":"cancelled"' "the call's result is recorded as cancelled"
like "$J" '"type":"stop","reason":"cancelled"' "the stop is recorded"
sleeper_gone; ok $? "SIGINT: the call's sleep is gone from the host"
[ ! -e "$WS/canary-deadline" ]; ok $? "nothing of the call survived (canary)"

# SIGHUP (the terminal went away): as SIGTERM, the stop recorded with why.
export XDG_STATE_HOME=$T_TMP/state-sighup
serve sleep; ws sighup
"$WARD" run --provider anthropic --base-url "$URL" --model fake-model --workspace "$WS" --rw "sleep" >/dev/null 2>"$T_TMP/err" &
WP=$!
for _ in $(seq 100); do grep -q '"intent"' "$XDG_STATE_HOME"/ward/sessions/*.jsonl 2>/dev/null && break; sleep 0.1; done
sleeper_runs
kill -HUP $WP
wait $WP; RC=$?
is "$RC" 130 "SIGHUP: exit 130"
like "$(cat "$XDG_STATE_HOME"/ward/sessions/*.jsonl)" '"type":"stop","reason":"cancelled","why":"cancelled \(the terminal hung up\)"' "SIGHUP: the stop is recorded, with why"
sleeper_gone; ok $? "SIGHUP: the call's sleep is gone from the host"
[ ! -e "$WS/canary-deadline" ]; ok $? "SIGHUP: nothing of the call survived (canary)"
export XDG_STATE_HOME=$T_TMP/state

# WARD_CALL_ID is the journal's key for the call; --patch writes the diff.
serve callid; ws callid
run anthropic --patch "$T_TMP/changes.patch" "call id"
is "$RC" 0 "--patch: exit 0"
KEY=$(grep -h '"intent"' "$XDG_STATE_HOME"/ward/sessions/*.jsonl | tail -1 | json key)
like "$(cat "$T_TMP/changes.patch")" "^\+\+\+ b/callid.txt" "--patch: the patch names the new file"
like "$(cat "$T_TMP/changes.patch")" "id=$KEY" "the command saw WARD_CALL_ID, the journal's key for the call"
(cd "$WS" && patch -p1 -s <"$T_TMP/changes.patch")
is "$(cat "$WS/callid.txt" 2>/dev/null)" "id=$KEY" "the patch applies with patch -p1"

# --patch is a git patch: git apply of it on a copy of the tree gives what
# ward apply gives, byte for byte (contents, modes, symlink targets), once
# its notes (what a git patch cannot say) are followed.
tree() { # tree DIR: every entry's path, mode, and content hash or link target
	python3 - "$1" <<'PY'
import hashlib, os, stat, sys
root = sys.argv[1]
for d, dirs, files in os.walk(root):
    dirs.sort()
    for n in sorted(dirs + files):
        p = os.path.join(d, n)
        st = os.lstat(p)
        what = ("l " + os.readlink(p) if stat.S_ISLNK(st.st_mode) else "d" if stat.S_ISDIR(st.st_mode)
                else "f " + hashlib.sha256(open(p, "rb").read()).hexdigest())
        print(os.path.relpath(p, root), oct(st.st_mode & 0o7777), what)
PY
}
follow_notes() { # follow_notes DIR PATCH: mkdir and rmdir as its notes say
	sed -n 's/^note: .*after git apply: \(mkdir\|rmdir\) \(.*\)$/\1 \2/p' "$2" | while read -r op d; do
		(cd "$1" && $op -- "$d")
	done
}
serve patch-kinds; ws patch-kinds
printf 'old\000bin' >"$WS/bin.dat"; printf 'echo run\n' >"$WS/run.sh"; chmod 644 "$WS/run.sh"
ln -s old-target "$WS/link"; printf '\001gone\000' >"$WS/gone.bin"
mkdir -p "$WS/olddir/deep" "$WS/sub" "$WS/keep"; echo f >"$WS/olddir/deep/f.txt"; echo only >"$WS/keep/only.txt"
rm -rf "$T_TMP/git-tree"; cp -a "$WS" "$T_TMP/git-tree"
run anthropic --json --patch "$T_TMP/kinds.patch" "change every kind"
is "$RC" 0 "--patch of every kind of change: exit 0"
P=$(cat "$T_TMP/kinds.patch")
like "$P" "diff --git a/bin.dat b/bin.dat" "the patch holds the binary change"
like "$P" "GIT binary patch" "as a git binary hunk"
unlike "$P" "Binary files" "never \"Binary files differ\""
like "$P" "old mode 100644" "the mode change"
like "$P" "new file mode 120000" "the new symlink"
like "$P" "deleted file mode 100644" "the deletions"
like "$P" "after git apply: mkdir empty/inner" "the empty directory, as a note"
like "$P" "after git apply: mkdir keep" "the directory the box emptied, as a note"
SID=$(printf '%s\n' "$OUT" | tail -1 | json session)
(umask 022; cd "$T_TMP/git-tree" && git apply --whitespace=nowarn "$T_TMP/kinds.patch")
is "$?" 0 "git apply takes the patch"
"$WARD" apply "$SID" >/dev/null 2>&1
is "$?" 0 "ward apply applies the same changes"
unlike "$(tree "$T_TMP/git-tree")" "empty/inner" "before its notes, git apply's tree lacks the empty directory"
follow_notes "$T_TMP/git-tree" "$T_TMP/kinds.patch"
TW=$(tree "$WS"); TG=$(tree "$T_TMP/git-tree")
is "$TG" "$TW" "git apply of --patch, and its notes, give ward apply's tree: binary, mode, symlink, empty directory, deletion"
like "$TW" "run.sh 0o755 f" "(the mode change is in it)"
like "$TW" "link 0o777 l new-target" "(the retargeted symlink)"
unlike "$TW" "gone.bin|olddir" "(the deletions)"

# A patch that cannot be complete is not written: a file over its bound.
serve big-file; ws patch-big
printf 'an older patch\n' >"$T_TMP/big.patch"
run anthropic --json --patch "$T_TMP/big.patch" "make a big file"
is "$RC" 1 "--patch with a file over 64 MiB: exit 1"
like "$ERR" "big.img: 68157440 bytes, over the patch's bound of 64 MiB for one file; no patch written" "the error names the file and the bound"
[ ! -e "$T_TMP/big.patch" ]; ok $? "no patch is left, not even the older one"
unlike "$(printf '%s\n' "$OUT" | tail -1)" '"patch":' "and the result names none"

# ward apply refuses a file changed in the tree since the run, naming it,
# and applies nothing; --force applies over it. A file the box did not
# change may be edited freely.
serve edit-two; ws conflict
run anthropic --json "edit two"
SID=$(printf '%s\n' "$OUT" | tail -1 | json session)
printf 'the person edited a.txt\n' >"$WS/a.txt"
"$WARD" apply "$SID" >"$T_TMP/out" 2>"$T_TMP/err"
is "$?" 1 "ward apply with a file edited since the run: exit 1"
like "$(cat "$T_TMP/err")" "^ward: a.txt: not applied: it changed in the tree since the run" "one line names the file"
like "$(cat "$T_TMP/err")" "nothing applied: 1 file .* ward apply --force $SID" "and says nothing was applied, and how to force it"
is "$(cat "$WS/a.txt")" "the person edited a.txt" "the person's edit is left as it was"
[ ! -e "$WS/c.txt" ]; ok $? "and the other change was not applied either"
"$WARD" apply --force "$SID" >/dev/null 2>"$T_TMP/err"
is "$?" 0 "ward apply --force: exit 0"
is "$(cat "$WS/a.txt")" "box-a" "--force applies over the edit"
is "$(cat "$WS/c.txt" 2>/dev/null)" "box-c" "and the rest"
serve edit-two; ws no-conflict
run anthropic --json "edit two"
SID=$(printf '%s\n' "$OUT" | tail -1 | json session)
printf 'the person edited b.txt\n' >"$WS/b.txt"
"$WARD" apply "$SID" >/dev/null 2>"$T_TMP/err"
is "$?" 0 "twin: a file the box did not change was edited: ward apply applies (exit 0)"
is "$(cat "$WS/a.txt") $(cat "$WS/c.txt")" "box-a box-c" "the box's changes are in the tree"
is "$(cat "$WS/b.txt")" "the person edited b.txt" "and the person's edit of another file is kept"

# ward run --box: the box's own layer holds the run's changes; they are
# reported, written as a patch, and ward diff finds them by the session.
serve tool; ws box-run
B=$(box_new --workspace "$WS")
run anthropic --box "$B" --json --patch "$T_TMP/box.patch" "write a file"
is "$RC" 0 "--box: exit 0"
like "$OUT" '"changed_files":\[\{"path":"out.txt","change":"added"' "--box: the result lists the box's change"
like "$(cat "$T_TMP/box.patch" 2>/dev/null)" "^\+\+\+ b/out.txt" "--box: the patch is written, with the change"
SID=$(printf '%s\n' "$OUT" | tail -1 | json session)
like "$("$WARD" diff "$SID" 2>&1)" "\+made-by-tool" "--box: ward diff SESSION shows it"
[ ! -e "$WS/out.txt" ]; ok $? "--box: the tree is untouched"
like "$("$WARD" box exec "$B" -- cat /workspace/out.txt 2>&1)" "made-by-tool" "--box: the box still has its change"
run anthropic --box "$B" --workspace "$T_TMP" "x"
is "$RC" 64 "--box with another --workspace: exit 64"
like "$ERR" "box $B works on $WS" "and it says which directory the box works on"
serve tool
run anthropic --box "$B" --apply "write a file"
is "$RC" 0 "--box --apply: exit 0"
is "$(cat "$WS/out.txt" 2>/dev/null)" "made-by-tool" "--box --apply: the box's change is in the tree"
serve text
run anthropic --box "$B" "say hello"
like "$ERR" "no changes to the workspace" "--box: once applied, the box's copy is no change"
"$WARD" box destroy "$B" >/dev/null 2>&1

# Gate: no terminal + ask = refused, no hang; a rule allows; deny wins.
serve write; ws gate
run anthropic --approve ask "write"
is "$RC" 0 "ask with no terminal: the run goes on (the model is told)"
like "$(req 2)" "needs a person's approval" "ask with no terminal: the refusal reaches the model"
like "$ERR" "no changes to the workspace" "and the write did not happen"
serve write; ws gate2
run anthropic --approve ask --allow 'write:*.txt' --apply "write"
is "$(cat "$WS/gated.txt" 2>/dev/null)" written "positive twin: --allow 'write:*.txt' lets it run"
serve write; ws gate3
run anthropic --approve auto --deny 'write:gated*' --allow 'write' --apply "write"
[ ! -e "$WS/gated.txt" ]; ok $? "deny is checked before allow"
like "$(req 2)" "denied by the rule" "the model is told which rule"
# An approver asked before the call runs: the file does not exist yet when
# it is asked; its yes, no and stop.
cat >"$T_TMP/approver" <<EOF
#!/bin/sh
read -r call
if [ -e "\$WS_DIR/gated.txt" ]; then echo present >>"$T_TMP/asked"; else echo absent >>"$T_TMP/asked"; fi
echo "\$call" >>"$T_TMP/asked-calls"
echo "\$ANSWER_WHY"
exit \$ANSWER
EOF
chmod +x "$T_TMP/approver"
for a in 0 1 2; do
	serve write; ws approver-$a; rm -f "$T_TMP/asked"
	export WS_DIR=$WS ANSWER=$a ANSWER_WHY="not today"
	run anthropic --rw --approve ask --approve-cmd "$T_TMP/approver" "write"
	is "$(cat "$T_TMP/asked" 2>/dev/null)" absent "approver exit $a: asked once, before the file existed"
	case $a in
	0) is "$(cat "$WS/gated.txt" 2>/dev/null)" written "approver yes: the call ran after the answer"
	   is "$RC" 0 "approver yes: exit 0" ;;
	1) [ ! -e "$WS/gated.txt" ]; ok $? "approver no: the call did not run"
	   like "$(req 2)" "refused by the user: not today" "approver no: the model is told why" ;;
	2) [ ! -e "$WS/gated.txt" ]; ok $? "approver stop: the call did not run"
	   is "$RC" 3 "approver stop: the turn stops, exit 3"
	   is "$(nreq)" 1 "approver stop: no further request" ;;
	esac
done
like "$(cat "$T_TMP/asked-calls")" '"tool":"write","input":\{"path":"gated.txt"' "the approver sees the whole call"
serve write; ws gate-readonly; rm -f "$T_TMP/asked"
export ANSWER=1
run anthropic --rw --approve ask --allow 'write:gated*' --approve-cmd "$T_TMP/approver" "write"
[ ! -e "$T_TMP/asked" ]; ok $? "an allow rule answers before the approver is asked"
is "$(cat "$WS/gated.txt" 2>/dev/null)" written "and the call runs"

# An approver that never answers: the run's deadline still holds (the
# watchdog, at deadline + 5 s, is not needed).
printf '#!/bin/sh\nexec sleep 300\n' >"$T_TMP/approver-stuck"
chmod +x "$T_TMP/approver-stuck"
serve write; ws approver-stuck
run anthropic --rw --approve ask --deadline 2s --approve-cmd "$T_TMP/approver-stuck" "write"
is "$RC" 2 "a stuck approver: the run stops at its deadline (exit 2)"
lt "$MS" 4000 "within 4 s of a 2 s deadline"
like "$(req 2)$ERR" "before the run's deadline" "and says the approver did not answer in time"
[ ! -e "$WS/gated.txt" ]; ok $? "the call did not run"
# What the approver starts goes with it: its own process group is killed at
# the deadline (canary), and after it answers, so nothing it left holds
# ward's stderr, a CI step's pipe, open.
printf '#!/bin/sh\n(sleep 3.%s; touch %s) &\nexec sleep 300.%s\n' $$ "$T_TMP/approver-canary" $$ >"$T_TMP/approver-kids"
chmod +x "$T_TMP/approver-kids"
serve write; ws approver-kids
run anthropic --rw --approve ask --deadline 2s --approve-cmd "$T_TMP/approver-kids" "write"
is "$RC" 2 "an approver with a child: the run stops at its deadline"
# Its child (the subshell that would write the canary, and its sleep) is gone.
wait_until 5 eval '! pgrep -f "$T_TMP/approver-kids|sleep (3|300)\.$$" >/dev/null'; ok $? "the approver and its child are gone"
[ ! -e "$T_TMP/approver-canary" ]; ok $? "the approver's child was killed with it (canary)"
(sleep 1; touch "$T_TMP/approver-canary2") &	# time: a canary written later, as the approver's child's would be
wait_until 5 test -e "$T_TMP/approver-canary2"; ok $? "twin: the same canary, not killed, is written"
printf '#!/bin/sh\n(sleep 30; echo late >&2) &\nexit 0\n' >"$T_TMP/approver-leaves"
chmod +x "$T_TMP/approver-leaves"
serve write; ws approver-leaves
t0=$(now_ms)
"$WARD" run --provider anthropic --base-url "$URL" --model fake-model --workspace "$WS" --rw --approve ask \
	--approve-cmd "$T_TMP/approver-leaves" "write" 2>&1 </dev/null | cat >"$T_TMP/piped"
lt "$(( $(now_ms) - t0 ))" 10000 "an approver that leaves a child behind: ward's output pipe closes when ward ends"
is "$(cat "$WS/gated.txt" 2>/dev/null)" written "and its yes was taken"

serve write3; ws gate4
run anthropic --approve ask "write three"
is "$RC" 3 "three calls that need a person and none there: exit 3"
like "$ERR" "refused" "the stop says refused"

# Resume after ward is SIGKILLed mid-call: the dangling call is unknown.
export XDG_STATE_HOME=$T_TMP/state-resume
serve sleep; ws resume
"$WARD" run --provider anthropic --base-url "$URL" --model fake-model --workspace "$WS" "sleep" >/dev/null 2>"$T_TMP/err" &
WP=$!
for _ in $(seq 100); do grep -q '"intent"' "$XDG_STATE_HOME"/ward/sessions/*.jsonl 2>/dev/null && break; sleep 0.1; done
S=$(grep -l '"intent"' "$XDG_STATE_HOME"/ward/sessions/*.jsonl | head -1 | xargs basename | sed 's/.jsonl$//')
kill -9 $WP; wait $WP 2>/dev/null
serve text
"$WARD" run --provider anthropic --base-url "$URL" --model fake-model --resume "$S" "go on" >"$T_TMP/out" 2>"$T_TMP/err"
RC=$?
is "$RC" 0 "resume after SIGKILL: exit 0"
like "$(req 1)" "outcome unknown" "the dangling call is reported to the model as unknown"
like "$(req 1)" "go on" "with the next instruction"
is "$(grep -c '"type":"result"' "$XDG_STATE_HOME/ward/sessions/$S.jsonl")" 0 "the dangling call was never re-run"
like "$("$WARD" sessions)" "^$S +[0-9-]+ [0-9:]+ +done +fake-model" "ward sessions lists it, with how it ended"

# A ward SIGSTOPped mid-run with --deadline 5s: its watchdog kills it at
# about 5 s + 5 s grace, the journal says so, and the box is gone.
export XDG_STATE_HOME=$T_TMP/state-watchdog
serve sleep; ws watchdog
t0=$(now_ms)
"$WARD" run --provider anthropic --base-url "$URL" --model fake-model --workspace "$WS" --rw --deadline 5s "sleep" >/dev/null 2>&1 &
WP=$!
for _ in $(seq 100); do grep -q '"intent"' "$XDG_STATE_HOME"/ward/sessions/*.jsonl 2>/dev/null && break; sleep 0.1; done
kill -STOP $WP
B=s-$(basename "$(ls "$XDG_STATE_HOME"/ward/sessions/*.jsonl | head -1)" .jsonl)
like "$("$WARD" box ls)" "^$B " "the run's box exists while ward is stopped"
while kill -0 $WP 2>/dev/null && [ $(( $(now_ms) - t0 )) -lt 20000 ]; do
	[ "$(ps -o stat= -p $WP 2>/dev/null | cut -c1)" = Z ] && break
	sleep 0.1
done
MS=$(( $(now_ms) - t0 ))
wait $WP 2>/dev/null; RC=$?
is "$RC" 137 "the stopped ward was killed (SIGKILL)"
lt "$MS" 11500 "by its watchdog at the deadline + 5 s grace (5 s deadline)"
lt 9500 "$MS" "and not before"
like "$(cat "$XDG_STATE_HOME"/ward/sessions/*.jsonl)" '"watchdog":true' "the journal says the watchdog ended the run"
for _ in $(seq 30); do "$WARD" box ls | grep -q "^$B " || break; sleep 0.1; done
unlike "$("$WARD" box ls)" "^$B " "and the box is gone"
sleeper_gone; ok $? "the stopped run's sleep is gone from the host"
[ ! -e "$WS/canary-deadline" ]; ok $? "nothing of the call survived (canary)"

# A stopped keeper that takes no frames never freezes ward: the call's
# frames wait in a bounded queue, and Ctrl-C or --deadline still end the
# run, the keeper (and the box with it) killed once it has been silent for
# a margin.
stopped_keeper_run() { # stopped_keeper_run SIGNAL|deadline: sets RC, MS (from the signal or the deadline)
	local rt0=$XDG_RUNTIME_DIR
	export XDG_RUNTIME_DIR=$T_TMP/rt-$1
	mkdir -p "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
	serve bigwrite; ws bigwrite-$1
	local extra=""; [ "$1" = deadline ] && extra="--deadline 8s"
	local t0; t0=$(now_ms)
	"$WARD" run --base-url "$URL" --model fake-model --workspace "$WS" $extra "write big" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null &
	local wp=$!
	# Bound the test itself: a ward that froze is killed at 20 s.
	( sleep 20; kill -9 $wp 2>/dev/null ) &	# time: the test's own bound
	local guard=$!
	for _ in $(seq 100); do [ -s "$LOG" ] && break; sleep 0.05; done
	wait_until 10 eval 'cat "$XDG_RUNTIME_DIR"/ward/boxes/*/keeper.pid >/dev/null 2>&1'
	KP=$(cat "$XDG_RUNTIME_DIR"/ward/boxes/*/keeper.pid 2>/dev/null)
	kill -STOP "$KP"
	if [ "$1" = deadline ]; then
		wait $wp; RC=$?
		MS=$(( $(now_ms) - t0 - 8000 ))
	else
		# The stream ends and the two calls are dispatched into the stopped keeper.
		wait_until 15 eval '[ "$(grep -c "\"intent\"" "$(ls -t "$XDG_STATE_HOME"/ward/sessions/*.jsonl | head -1)")" -ge 2 ]'
		local t1; t1=$(now_ms)
		kill -INT $wp
		wait $wp; RC=$?
		MS=$(( $(now_ms) - t1 ))
	fi
	kill $guard 2>/dev/null
	kill -CONT "$KP" 2>/dev/null
	export XDG_RUNTIME_DIR=$rt0
}
stopped_keeper_run INT
is "$RC" 130 "a stopped keeper with a full queue: Ctrl-C still cancels (exit 130)"
lt "$MS" 1000 "within 1 s of Ctrl-C"
like "$(cat "$T_TMP/err")" "cancelled" "the calls are reported cancelled"
gone "$KP"; ok $? "the stopped keeper was killed, the box with it"
stopped_keeper_run deadline
is "$RC" 2 "a stopped keeper with a full queue: --deadline still stops the run (exit 2)"
lt "$MS" 1000 "within 1 s of the deadline"
gone "$KP"; ok $? "and the stopped keeper was killed"

# A session's kept changes stay on disk, not mounted: its image is mounted
# only while a ward uses it (as root; elsewhere there is no image).
is "$(grep -c " $T_TMP/" /proc/self/mountinfo)" 0 "no session's layers stay mounted after its run"
[ "$(id -u)" -ne 0 ] || like "$(ls "$T_TMP"/state/ward/workspaces/ 2>&1)" "s-.*\.img" "twin: their images are kept"

# The session journal is private: 0600 in a 0700 directory.
J1=$(ls "$XDG_STATE_HOME"/ward/sessions/*.jsonl | head -1)
is "$(stat -c %a "$J1") $(stat -c %a "$(dirname "$J1")")" "600 700" "the journal is 0600 in a 0700 directory"
# Redirects are not followed (the key would go with them).
serve redirect; ws redirect
run anthropic "x"
is "$RC" 1 "a redirect from the API is an error (exit 1)"
is "$(nreq)" 1 "it is not followed: one request"
unlike "$(cat "$LOG")" "/stolen/" "nothing was sent to the redirect's target"

# A model cannot walk out of the box through a descriptor (/proc/*/fd/N,
# cwd, root): every file tool resolves paths in the box's root, and no
# descriptor of the host's is open in the box anyway.
SECRET=$T_TMP/host-secret.txt
echo "host-secret-$$" >"$SECRET"
mkdir -p "$T_TMP/host-dir"
serve escape-fd; ws escape
echo inside-the-workspace >"$WS/inside.txt"
run anthropic --approve auto "SECRET=$SECRET DIR=$T_TMP/host-dir"
is "$RC" 0 "escape through /proc links: the run ends done"
unlike "$(req 2)" "host-secret-$$" "no read through /proc/self/fd/N, /proc/1/root or /proc/self/cwd reached the host's file"
is "$(ls "$T_TMP/host-dir" | wc -l)" 0 "no write through /proc/self/fd/N created a host file"
like "$(req 2)" "inside-the-workspace" "twin: the same run reads a workspace file"

# A NUL in a path is refused with a clear error; nothing is written.
serve nul-path; ws nul
run anthropic --approve auto --json "nul"
is "$RC" 0 "a NUL in a path: the run goes on"
like "$(req 2)" "NUL character" "the model is told the path holds a NUL character"
unlike "$OUT" '"path":"nul"' "no file named by the path's first part was written"
like "$OUT" '"path":"nul-ok.txt","change":"added"' "twin: the other write of the same turn ran"

# The diff never follows a symlink of the tree: docs -> a host directory,
# replaced by the box with a directory of its own.
serve symlink-dir; ws symlink
mkdir -p "$T_TMP/host-docs"; echo "host-doc-secret-$$" >"$T_TMP/host-docs/private.txt"
ln -s "$T_TMP/host-docs" "$WS/docs"
ln -s old-target "$WS/keep-link"
run anthropic --approve auto --json --patch "$T_TMP/symlink.patch" "replace docs"
is "$RC" 0 "symlinked dir replaced: exit 0"
unlike "$(cat "$T_TMP/symlink.patch")" "host-doc-secret|private.txt" "--patch never holds a host file behind a symlink"
like "$(cat "$T_TMP/symlink.patch")" "diff --git a/docs b/docs
deleted file mode 120000" "twin: it holds the link's deletion, as a link"
unlike "$OUT" "private.txt" "changed_files does not list the host directory's files"
like "$OUT" '"path":"docs/x","change":"added"' "it lists the box's new file"
like "$OUT" '"path":"keep-link","change":"modified"' "twin: a retargeted symlink of the tree is a change"
SID=$(printf '%s\n' "$OUT" | tail -1 | json session)
D=$("$WARD" diff "$SID" 2>&1)
unlike "$D" "host-doc-secret" "ward diff never prints a host file behind a symlink"
like "$D" "symlink docs deleted" "the link is shown deleted, as a link"
like "$D" "symlink keep-link modified -> new-target" "twin: a symlink is diffed as a symlink"
# A reader that stops early is not an error.
"$WARD" diff "$SID" 2>"$T_TMP/err" | head -1 >/dev/null
is "$(cat "$T_TMP/err")" "" "ward diff | head: no error when the pipe closes"

# An Anthropic base URL given with its /v1 reaches /v1/messages, as one
# without it does.
serve text; ws v1
"$WARD" run --provider anthropic --base-url "$URL/v1/" --model fake-model --workspace "$WS" "hi" >/dev/null 2>&1
is "$?" 0 "an Anthropic --base-url ending in /v1 works"
is "$(req 1 | json path)" "/v1/messages" "it posts to /v1/messages, not /v1/v1/messages"
serve text; ws v1-twin
"$WARD" run --provider anthropic --base-url "$URL" --model fake-model --workspace "$WS" "hi" >/dev/null 2>&1
is "$(req 1 | json path)" "/v1/messages" "twin: without /v1 the same"

# Usage errors, each with one line.
"$WARD" run >/dev/null 2>"$T_TMP/err"; is $? 64 "no task: exit 64"
env -u ANTHROPIC_API_KEY "$WARD" run "x" >/dev/null 2>"$T_TMP/err"
is $? 64 "no key: exit 64"
like "$(cat "$T_TMP/err")" "set ANTHROPIC_API_KEY" "no key: the line names the variable"
"$WARD" run --approve sometimes "x" >/dev/null 2>"$T_TMP/err"; is $? 64 "bad --approve: exit 64"
"$WARD" run --model replay:/no/such/script.json "x" >/dev/null 2>"$T_TMP/err"; is $? 64 "unreadable replay script: exit 64"
# A malformed replay script or --base-url is refused before anything is made.
printf '{"turns": [\n  {"text": "a",}\n' >"$T_TMP/bad-replay.json"
XDG_STATE_HOME=$T_TMP/state-bad "$WARD" run --model "replay:$T_TMP/bad-replay.json" --workspace "$WS" "x" >/dev/null 2>"$T_TMP/err"
is $? 64 "a malformed replay script: exit 64"
like "$(cat "$T_TMP/err")" "is not valid JSON: a comma before .*\(line 2, column [0-9]+\)" "with what and the line and column"
is "$(ls "$T_TMP/state-bad/ward/sessions" 2>/dev/null | wc -l)" 0 "and no session (nor box) was made"
XDG_STATE_HOME=$T_TMP/state-bad "$WARD" run --base-url "localhost:8080" --workspace "$WS" "x" >/dev/null 2>"$T_TMP/err"
is $? 64 "a --base-url that is not a URL: exit 64"
like "$(cat "$T_TMP/err")" "not an http:// or https:// URL" "with one line saying so"
is "$(ls "$T_TMP/state-bad/ward/sessions" 2>/dev/null | wc -l)" 0 "and nothing was made"
"$WARD" run --base-url "$URL" --workspace /etc/hostname "x" >/dev/null 2>"$T_TMP/err"; is $? 4 "no box can be made (the workspace is a file): exit 4"
like "$(cat "$T_TMP/err")" "cannot make a box" "and it says so"
"$WARD" run --box no-such-box --base-url "$URL" "x" >/dev/null 2>"$T_TMP/err"; is $? 69 "unknown --box: exit 69"
"$WARD" run --base-url "$URL" --workspace /nonexistent "x" >/dev/null 2>"$T_TMP/err"; is $? 66 "no such workspace: exit 66"
like "$("$WARD" run --help)" "66 no such workspace.*75 the task or session" "ward run --help lists exits 66 and 75 (and 6)"
"$WARD" run --model "" --base-url "$URL" "x" >/dev/null 2>"$T_TMP/err"; is $? 64 "--model \"\": exit 64"
like "$(cat "$T_TMP/err")" "^ward: --model: give a model's name" "with one line saying so"
serve text; ws model-twin
"$WARD" run --model fake-model --base-url "$URL" --workspace "$WS" "x" >/dev/null 2>&1; is $? 0 "twin: --model with a name runs"
is "$("$WARD" --version)" "$("$WARD" version)" "ward --version is ward version"
like "$("$WARD" --version)" "^ward [0-9]" "and prints it"
"$WARD" --no-such-flag >/dev/null 2>&1 </dev/null; is $? 64 "twin: another flag without a command is still the session's (a usage error here)"

# A refusal is said once in the progress ("refused: ...", not "refused: refused: ...").
serve bash3; ws refused-once
run anthropic --approve ask "three"
like "$ERR" "⎿ refused: this bash call needs a person's approval" "a refused call's line"
unlike "$ERR" "refused: refused" "says refused once"

# ward sessions: a time column and --json; ward sessions prune by state and
# age, --dry-run removing nothing; twins: what the filters leave stays.
export XDG_STATE_HOME=$T_TMP/state-prune
serve tool; ws prune-done
run anthropic "write a file"
SD=$(grep -o 'session [0-9a-f-]*' "$T_TMP/err" | head -1 | cut -d' ' -f2)
serve cut; ws prune-fail
run anthropic --retries 0 "cut"
SF=$(grep -o 'session [0-9a-f-]*' "$T_TMP/err" | head -1 | cut -d' ' -f2)
L=$("$WARD" sessions)
like "$(printf '%s\n' "$L" | head -1)" '^SESSION +TIME +STOP' "ward sessions has a TIME column"
like "$(printf '%s\n' "$L" | grep "^$SD")" "^$SD +[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2} +done" "with the time it was last written to"
is "$("$WARD" sessions --json | python3 -c 'import json,sys; print(sorted(x["stop"] for x in json.load(sys.stdin)))')" "['done', 'provider_error']" "ward sessions --json"
ls -d "$XDG_STATE_HOME/ward/workspaces/s-$SD" >/dev/null 2>&1; ok $? "the finished session keeps its changes (layers) until applied"
"$WARD" sessions prune >/dev/null 2>"$T_TMP/err"; is $? 64 "sessions prune with no filter: usage error"
like "$(cat "$T_TMP/err")" "say which sessions" "saying what to give"
P=$("$WARD" sessions prune --state done --dry-run 2>&1)
like "$P" "would prune $SD \(done, [0-9.]+[BKM]\)" "--dry-run --state done: names the done session and its size"
unlike "$P" "$SF" "not the failed one"
[ -e "$XDG_STATE_HOME/ward/sessions/$SD.jsonl" ]; ok $? "and removes nothing"
P=$("$WARD" sessions prune --older-than 1h 2>&1)
like "$P" "pruned 0 sessions" "twin, --older-than 1h: nothing that new is pruned"
P=$("$WARD" sessions prune --state done 2>&1)
like "$P" "pruned $SD" "--state done: pruned"
[ ! -e "$XDG_STATE_HOME/ward/sessions/$SD.jsonl" ]; ok $? "its journal is gone"
ls -d "$XDG_STATE_HOME/ward/workspaces/s-$SD"* >/dev/null 2>&1; ok $((! $?)) "and its layers"
[ -e "$XDG_STATE_HOME/ward/sessions/$SF.jsonl" ]; ok $? "twin: the provider_error session stays"
sleep 1.1	# time: the session grows older than 1 s
P=$("$WARD" sessions prune --older-than 1s --state provider_error 2>&1)
like "$P" "pruned $SF" "--older-than 1s --state provider_error: pruned"
is "$("$WARD" sessions --json)" "[]" "no session is left"
export XDG_STATE_HOME=$T_TMP/state

# ward box ls: times as durations (8h0m), not seconds.
B=$(box_new --ttl 8h)
like "$("$WARD" box ls | grep "^$B ")" " (7h59m|8h0m) " "box ls: ENDS-IN of an 8h TTL is 7h59m or 8h0m"

kill "$SRV" 2>/dev/null
done_testing
