#!/bin/bash
# Fleets: one task file, each task a `ward run --task-file F --task-index I
# --out DIR` as an array job runs it. Twelve tasks (a recorded model, each
# its own workspace; one hits its deadline, one is refused for want of
# approval, one leaves its test failing) through GNU parallel and through a
# real Slurm job array on this machine; a requeue redoes nothing; SIGTERM
# (what scancel and Kubernetes send) ends a task with its result written
# and its box gone; a half-finished task resumes; one ward per session.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
F=$T_TMP/fleet
mkdir -p "$F"

# ---- the task file ----
cp "$ROOT/examples/fix-test/replay.json" "$F/fix.json"
cat >"$F/slow.json" <<'J'
{"turns": [{"text": "Running the long job.", "tools": [{"name": "bash", "input": {"command": "sleep 60", "timeout": 120}}]},
           {"text": "It finished."}]}
J
cat >"$F/refuse.json" <<'J'
{"turns": [{"text": "Cleaning up.", "tools": [{"name": "bash", "input": {"command": "rm -rf build"}}]},
           {"text": "Again.", "tools": [{"name": "bash", "input": {"command": "rm -rf build"}}]},
           {"text": "Once more.", "tools": [{"name": "bash", "input": {"command": "rm -rf build"}}]},
           {"text": "I could not."}]}
J
cat >"$F/failing.json" <<'J'
{"turns": [{"text": "Running the tests.", "tools": [{"name": "bash", "input": {"command": "python3 -m unittest 2>&1 | tail -n 3", "timeout": 60}}]},
           {"expect": "FAILED", "text": "The tests fail and I do not see why; leaving it to a person."}]}
J
: >"$F/tasks.jsonl"
for i in $(seq -w 1 12); do
	mkdir -p "$F/ws/t$i"
	cp "$ROOT/examples/fix-test/calc.py" "$ROOT/examples/fix-test/test_calc.py" "$F/ws/t$i/"
	case $i in
	10) echo "{\"id\": \"t$i\", \"task\": \"run the long job\", \"workspace\": \"ws/t$i\", \"model\": \"replay:$F/slow.json\", \"deadline\": \"3s\"}" ;;
	11) echo "{\"id\": \"t$i\", \"task\": \"clean up\", \"workspace\": \"ws/t$i\", \"model\": \"replay:$F/refuse.json\", \"approve\": \"ask\"}" ;;
	12) echo "{\"id\": \"t$i\", \"task\": \"make the tests pass\", \"workspace\": \"ws/t$i\", \"model\": \"replay:$F/failing.json\"}" ;;
	*) echo "{\"id\": \"t$i\", \"task\": \"make the tests pass\", \"workspace\": \"ws/t$i\", \"model\": \"replay:$F/fix.json\", \"max_rounds\": 20}" ;;
	esac >>"$F/tasks.jsonl"
	[ "$i" = 06 ] && echo >>"$F/tasks.jsonl"	# a blank line is not a task
done
expect_code() { case $1 in 9) echo 2 ;; 10) echo 3 ;; *) echo 0 ;; esac; }	# by index
new_sleeps() { pgrep -f '^sleep 60$' | grep -vxF -f <(echo "$1"); }	# new_sleeps BEFORE: the `sleep 60`s (a long call's) not in BEFORE
expect_stop() { case $1 in 9) echo deadline ;; 10) echo refused ;; *) echo done ;; esac; }
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], ""))' "$1" "$2" 2>/dev/null; }

# The results of one way of running the twelve: DIR, and the exit code of
# each index in codes.txt ("INDEX CODE" lines).
check_run() { # check_run DIR WHAT
	local d=$1 what=$2 n=0 bad="" codes="" stops=""
	for i in $(seq 0 11); do
		local id; id=t$(printf %02d $((i + 1)))
		[ -s "$d/$id/result.json" ] && n=$((n + 1))
		local got; got=$(awk -v i="$i" '$1 == i { print $2 }' "$d/codes.txt")
		[ "$got" = "$(expect_code "$i")" ] || codes="$codes $id:$got"
		[ "$(field "$d/$id/result.json" stop)" = "$(expect_stop "$i")" ] || stops="$stops $id:$(field "$d/$id/result.json" stop)"
		tail -n 1 "$d/$id/journal.jsonl" 2>/dev/null | grep -q '"type":"stop"' || bad="$bad $id"
	done
	is "$n" 12 "$what: a result.json for each of the 12 tasks"
	is "$codes" "" "$what: each index ended with its expected exit code (done 0, deadline 2, refused 3)"
	is "$stops" "" "$what: each result.json says the expected stop"
	is "$bad" "" "$what: each journal is complete (it ends with its stop record)"
	like "$(cat "$d/t01/patch.diff")" 'return a \+ b' "$what: a task's patch.diff holds its change"
	is "$(field "$d/t12/result.json" stop)" done "$what: the task whose test still fails ends done (ward reports the model's stop; the test's verdict is the pipeline's)"
	local boxes sessions
	boxes=$(python3 -c 'import json,sys; print(len(set(json.load(open(f))["box"] for f in sys.argv[1:])))' "$d"/t*/result.json)
	sessions=$(cat "$d"/t*/session | awk '{print $1}' | sort -u | wc -l)
	is "$boxes/$sessions" "12/12" "$what: no two tasks shared a box or a session"
	"$WARD" report --junit "$d.xml" "$d" >/dev/null 2>&1
	local ju
	ju=$(python3 -c 'import sys, xml.etree.ElementTree as E
c=list(E.parse(sys.argv[1]).getroot().iter("testcase"))
print(len(c), " ".join(sorted(t.get("name") for t in c if t.find("failure") is not None)))' "$d.xml" 2>&1)
	is "$ju" "12 t10 t11" "$what: ward report --junit is valid XML: 12 testcases, the deadline's and the refusal's failures"
	# The task cut at its deadline left nothing running: its box is gone.
	local left=""
	for _ in $(seq 40); do
		left=$(pgrep -f '^sleep 60$' | tr '\n' ' ')
		[ -z "$left" ] && break
		sleep 0.05
	done
	[ -n "$left" ] && echo "# left: $(ps -o pid,ppid,stat,etimes,args -p "$(echo $left | tr ' ' ',')" | tr '\n' ';')"
	is "$left" "" "$what: the task cut at its deadline left no process behind (its box went with it)"
}

# ---- GNU parallel on one machine ----
P=$F/par
if command -v parallel >/dev/null; then
	RUNNER=(parallel --will-cite -j 4 --joblog "$T_TMP/joblog")
else
	RUNNER=()
fi
t0=$(now_ms)
if [ ${#RUNNER[@]} -gt 0 ]; then
	seq 0 11 | "${RUNNER[@]}" "$WARD" run --task-file "$F/tasks.jsonl" --task-index {} --out "$P" >/dev/null 2>"$T_TMP/par.err"
	# The joblog's Seq is 1-based, in input order; Exitval is column 7.
	awk 'NR > 1 { print $1 - 1, $7 }' "$T_TMP/joblog" >"$P/codes.txt"
	RUNNER_NAME="parallel -j 4"
else
	mkdir -p "$P"
	seq 0 11 | xargs -P 4 -I{} sh -c '"$1" run --task-file "$2" --task-index {} --out "$3" >/dev/null 2>&1; echo "{} $?" >>"$3/codes.txt"' \
		sh "$WARD" "$F/tasks.jsonl" "$P"
	RUNNER_NAME="xargs -P 4 (GNU parallel is not installed)"
fi
echo "# the 12 tasks through $RUNNER_NAME in $(( $(now_ms) - t0 )) ms"
check_run "$P" "$RUNNER_NAME"
# ---- requeue: everything again; nothing is run twice ----
SUMS=$(cat "$P"/t*/result.json "$P"/t*/events.jsonl | md5sum)
RQ=""
for i in $(seq 0 11); do
	"$WARD" run --task-file "$F/tasks.jsonl" --task-index "$i" --out "$P" >/dev/null 2>"$T_TMP/rq.err"
	RQ="$RQ$?"
done
is "$RQ" "000000000000" "requeue: each finished task exits 0"
like "$(cat "$T_TMP/rq.err")" 'task t12 already finished \(done\); skipped' "with one line saying it was skipped"
is "$(cat "$P"/t*/result.json "$P"/t*/events.jsonl | md5sum)" "$SUMS" "and nothing was run again: results and events unchanged"

# An array element that never ran leaves no directory: with the task file,
# the report names it missing rather than leaving it out.
cp -r "$P" "$F/gap"
rm -rf "$F/gap/t05"
NOFILE=$("$WARD" report --json "$F/gap" | python3 -c 'import json,sys; t=json.load(sys.stdin)["tasks"]; print(len(t), any(x["id"] == "t05" for x in t))')
is "$NOFILE" "11 False" "ward report without the task file cannot see a task that never started"
GAP=$("$WARD" report --json --task-file "$F/tasks.jsonl" "$F/gap" | python3 -c 'import json,sys; t=json.load(sys.stdin)["tasks"]; print(len(t), [x["stop"] for x in t if x["id"] == "t05"])')
is "$GAP" "12 ['missing']" "with --task-file it lists all 12, the one that never started as missing"
"$WARD" report --task-file "$F/tasks.jsonl" "$F/gap" >/dev/null 2>&1
is "$?" 1 "and exits 1"

# ---- SIGTERM (scancel, Kubernetes): result written, box gone, in 5 s ----
echo '{"id": "long", "task": "run the long job", "workspace": "ws/t01", "model": "replay:'"$F/slow.json"'"}' >"$F/one.jsonl"
BEFORE=$(pgrep -f '^sleep 60$'; echo none)
"$WARD" run --task-file "$F/one.jsonl" --task-index 0 --out "$F/term" >/dev/null 2>"$T_TMP/term.err" &
WP=$!
for _ in $(seq 100); do grep -q '"tool_call"' "$F/term/long/events.jsonl" 2>/dev/null && break; sleep 0.1; done
wait_until 10 eval '[ -n "$(new_sleeps "$BEFORE")" ]'
BOX=$(awk '{print "s-"$1}' "$F/term/long/session")
SLEEPS=$(new_sleeps "$BEFORE" | tr '\n' ' ')
echo "# sleeps: $(ps -o pid,ppid,stat,etimes,args -p "$(echo $SLEEPS | tr ' ' ',')" 2>/dev/null | tr '\n' ';')"
[ -n "$SLEEPS" ]; ok $? "SIGTERM: the task's call runs before (pids $SLEEPS)"
t0=$(now_ms); kill -TERM $WP; wait $WP; RC=$?; MS=$(( $(now_ms) - t0 ))
is "$RC" 130 "SIGTERM: the task ends cancelled (exit 130)"
lt "$MS" 5000 "within 5 s (${MS} ms)"
is "$(field "$F/term/long/result.json" stop)" cancelled "its result.json is written, with the stop"
is "$(field "$F/term/long/result.json" final)" False "and says the stop is not final (a rerun resumes it)"
unlike "$("$WARD" box ls 2>&1)" "$BOX" "its box is gone"
LEFT=0
for _ in $(seq 40); do
	LEFT=0; for p in $SLEEPS; do gone "$p" || LEFT=1; done
	[ "$LEFT" = 0 ] && break
	sleep 0.05
done
for p in $SLEEPS; do gone "$p" || echo "# left: $(ps -o pid,ppid,stat,etimes,args -p "$p" | tail -1)"; done
is "$LEFT" 0 "and the call's process with it (within 2 s)"

# SIGTERM while the task's MCP server is still starting (one that never
# answers initialize, bounded at 30 s): the same, within 5 s.
cp "$ROOT/tests/mcp-server.py" "$F/ws/t03/srv.py"
echo '{"mcpServers": {"hang": {"command": "python3", "args": ["/workspace/srv.py", "--mode", "no-init"]}}}' >"$F/hang.json"
echo '{"id": "hang", "task": "make the tests pass", "workspace": "ws/t03", "model": "replay:'"$F/fix.json"'", "mcp_config": "'"$F/hang.json"'"}' >"$F/hang.jsonl"
"$WARD" run --trust-task-file --task-file "$F/hang.jsonl" --task-index 0 --out "$F/hangout" >/dev/null 2>"$T_TMP/hang.err" &
WP=$!
for _ in $(seq 100); do [ -s "$F/hangout/hang/session" ] && break; sleep 0.1; done
# The server has started (and is not answering initialize).
wait_until 10 pgrep -f '/workspace/srv.py --mode no-init' >/dev/null
t0=$(now_ms); kill -TERM $WP; wait $WP; RC=$?; MS=$(( $(now_ms) - t0 ))
is "$RC" 130 "SIGTERM while an MCP server starts: the task ends cancelled"
lt "$MS" 5000 "within 5 s, not at the server's 30 s start-up bound (${MS} ms)"
is "$(field "$F/hangout/hang/result.json" stop)" cancelled "and its result.json is written"

# SIGTERM at once, while the task's box is being made: the same.
BAD=""; HITS=0
for d in 0 0.01 0.02 0.04; do
	rm -rf "$F/early"
	"$WARD" run --task-file "$F/one.jsonl" --task-index 0 --out "$F/early" >/dev/null 2>"$T_TMP/early.err" &
	WP=$!
	# From when ward has taken the task (its events file is made just
	# before its box); a signal before ward's main() is the process's.
	for _ in $(seq 400); do [ -e "$F/early/long/events.jsonl" ] && break; sleep 0.005; done
	sleep $d	# time: SIGTERM at each of these moments
	t0=$(now_ms); kill -TERM $WP; wait $WP; RC=$?; MS=$(( $(now_ms) - t0 ))
	[ "$RC" = 130 ] && [ "$MS" -lt 5000 ] && [ "$(field "$F/early/long/result.json" stop)" = cancelled ] || BAD="$BAD $d:$RC:${MS}ms"
	grep -q 'while the box was made' "$T_TMP/early.err" && HITS=$((HITS + 1))
done
echo "# $HITS of 4 early SIGTERMs came while the box was made"
is "$BAD" "" "SIGTERM 0-40 ms after ward took the task (before or while the box is made): cancelled, result written, within 5 s"
wait_until 5 eval '! "$WARD" box ls 2>&1 | grep -q "^s-"'
unlike "$("$WARD" box ls 2>&1)" '^s-' "and no task's box is left"

# ---- a half-finished task resumes: its session goes on ----
SESS=$(awk '{print $1}' "$F/term/long/session")
sed -i 's/"text": "It finished."/"text": "It finished after the restart."/' "$F/slow.json"
"$WARD" run --task-file "$F/one.jsonl" --task-index 0 --out "$F/term" >/dev/null 2>"$T_TMP/resume.err"
is "$?" 0 "a cancelled task run again: it resumes and ends done"
is "$(field "$F/term/long/result.json" session)" "$SESS" "in the same session"
is "$(field "$F/term/long/result.json" runs)" 2 "result.json counts the runs (2)"
like "$(grep '"type":"result"' "$F/term/long/journal.jsonl")" 'outcome":"unknown' "the call cut off by SIGTERM is reported unknown, not failed"

# A task whose ward was stopped (SIGSTOP) and killed by its watchdog at the
# deadline + 5 s: no result was written, but its journal says deadline. The
# rerun takes that as its end, rather than running it again with a fresh
# deadline.
echo '{"id": "stuck", "task": "run the long job", "workspace": "ws/t05", "model": "replay:'"$F/slow.json"'", "deadline": "2s"}' >"$F/stuck.jsonl"
"$WARD" run --task-file "$F/stuck.jsonl" --task-index 0 --out "$F/stuck" >/dev/null 2>&1 &
WP=$!
for _ in $(seq 100); do grep -q '"tool_call"' "$F/stuck/stuck/events.jsonl" 2>/dev/null && break; sleep 0.1; done
kill -STOP $WP
wait $WP
is "$?" 137 "a stopped task's ward is killed by its watchdog (SIGKILL)"
[ ! -e "$F/stuck/stuck/result.json" ]; ok $? "and no result.json was written"
"$WARD" run --task-file "$F/stuck.jsonl" --task-index 0 --out "$F/stuck" >/dev/null 2>"$T_TMP/stuck.err"
is "$?" 0 "the rerun: skipped (exit 0), not run again"
is "$(field "$F/stuck/stuck/result.json" stop)" deadline "its result.json says deadline, from the journal"
is "$(grep -c '"type":"message","role":"user"' "$F/stuck/stuck/journal.jsonl")" 1 "and the model was not asked again"

# ---- a finished task's layers go once its patch is written ----
# (each is an ext4 image of --disk's size as root: kept, 400 tasks held
# 1.7 GB); twin: --keep-changes keeps them for ward diff.
mkdir -p "$F/ws/lay"
cp "$ROOT/examples/fix-test/calc.py" "$ROOT/examples/fix-test/test_calc.py" "$F/ws/lay/"
echo '{"id": "lay", "task": "make the tests pass", "workspace": "ws/lay", "model": "replay:'"$F/fix.json"'"}' >"$F/lay.jsonl"
"$WARD" run --task-file "$F/lay.jsonl" --task-index 0 --out "$F/lay" >/dev/null 2>&1
is "$?" 0 "a task that finishes"
LS=$(awk '{print $1}' "$F/lay/lay/session")
like "$(cat "$F/lay/lay/patch.diff")" '^\+    return a \+ b' "its patch.diff holds the change"
ls -d "$XDG_STATE_HOME"/ward/workspaces/s-"$LS"* >/dev/null 2>&1; ok $((! $?)) "and its layers (and image) are gone"
rm -rf "$F/lay"
"$WARD" run --task-file "$F/lay.jsonl" --task-index 0 --out "$F/lay" --keep-changes >/dev/null 2>&1
LS=$(awk '{print $1}' "$F/lay/lay/session")
ls -d "$XDG_STATE_HOME"/ward/workspaces/s-"$LS" >/dev/null 2>&1; ok $? "twin, --keep-changes: its layers are kept"
like "$("$WARD" diff "$LS" 2>&1)" 'return a \+ b' "and ward diff shows them"
"$WARD" sessions prune --all >/dev/null 2>&1

# ---- costs and budgets are the task's, over its runs ----
# A task preempted twice (SIGTERM during its long call, as scancel sends
# it) and then finished: its result.json and ward report count all three
# runs. Each request costs 1000 input and 20 output tokens at
# claude-sonnet-4's $3/$15: $0.0033.
export ANTHROPIC_API_KEY=sk-ant-fake-key
mkdir -p "$F/ws/pre"
echo '{"id": "pre", "task": "run the long job", "workspace": "ws/pre"}' >"$F/pre.jsonl"
serve preempt
prerun() { # prerun OUT [FLAGS]: one run of the task, SIGTERM at its Nth tool_call (N = PRE_AT), or to its end
	"$WARD" run --provider anthropic --base-url "$URL" --model claude-sonnet-4-fake --task-file "$F/pre.jsonl" \
		--task-index 0 --out "$1" "${@:2}" >/dev/null 2>>"$T_TMP/pre.err" &
	local wp=$! before; before=$(pgrep -f '^sleep 60$'; echo none)
	if [ -n "${PRE_AT:-}" ]; then
		for _ in $(seq 200); do
			local n; n=$(grep -c '"tool_call"' "$1/pre/events.jsonl" 2>/dev/null)
			[ "${n:-0}" -ge "$PRE_AT" ] && break
			sleep 0.05
		done
		# Its call runs.
		wait_until 10 eval '[ -n "$(new_sleeps "$before")" ]'
		kill -TERM $wp
	fi
	wait $wp
}
PRE_AT=1 prerun "$F/pre"; R1=$?
PRE_AT=2 prerun "$F/pre"; R2=$?
PRE_AT= prerun "$F/pre"; R3=$?
is "$R1 $R2 $R3" "130 130 0" "a task preempted twice (130, 130), then done (0)"
is "$(field "$F/pre/pre/result.json" runs)" 3 "in three runs"
is "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(round(r["cost_usd"], 6), r["usage"]["input_tokens"], r["rounds"], r["calls"])' "$F/pre/pre/result.json")" \
	"0.0099 3000 3 2" "its result.json has the cost, tokens, rounds and calls of all three runs (3 x \$0.0033)"
like "$("$WARD" report --json "$F/pre" | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["totals"]["cost_usd"], 6))' 2>&1)" '^0\.0099$' "and ward report sums the same"
# Twin: --max-cost is the task's, not the run's. $0.005 is past after the
# second request: the second run stops at the cost budget (exit 2) and
# its call does not run, where a budget of the run alone would have run it.
rm -rf "$F/ws/pre"/* "$F/prebud"; mkdir -p "$F/ws/pre"
serve preempt
PRE_AT=1 prerun "$F/prebud" --max-cost 0.005; R1=$?
PRE_AT= prerun "$F/prebud" --max-cost 0.005; R2=$?
is "$R1 $R2" "130 2" "--max-cost 0.005: the first run preempted, the second stops at the budget (exit 2)"
is "$(field "$F/prebud/pre/result.json" stop)" cost_budget "its result.json says cost_budget"
like "$(grep '"role":"user"' "$F/prebud/pre/journal.jsonl" | tail -1)" 'not run: the cost budget' "and the second run's call did not run"
is "$(nreq)" 2 "after two requests in all"

# A provider's bad minute: 35 % of requests answered 429 at random; every
# task of twelve finishes (the default retries); twin: with --retries 0
# some do not.
: >"$F/storm.jsonl"
for i in $(seq -w 1 12); do
	mkdir -p "$F/ws/s$i"
	echo "{\"id\": \"s$i\", \"task\": \"make a file\", \"workspace\": \"ws/s$i\"}" >>"$F/storm.jsonl"
done
storm() { # storm OUT [FLAGS]: the twelve, two at a time; "INDEX CODE" lines in OUT/codes.txt
	mkdir -p "$1"
	seq 0 11 | xargs -P 2 -I{} sh -c '"$0" run --provider anthropic --base-url "$1" --model claude-sonnet-4-fake \
		--task-file "$2" --task-index {} --out "$3" $4 >/dev/null 2>&1; echo "{} $?" >>"$3/codes.txt"' \
		"$WARD" "$URL" "$F/storm.jsonl" "$1" "${2:-}"
}
FAKE_429_PCT=35 FAKE_SEED=7 serve 429-random
storm "$F/storm"
is "$(awk '{print $2}' "$F/storm/codes.txt" | sort | uniq -c | awk '{print $2 "x" $1}' | tr '\n' ' ')" "0x12 " "35 % 429s: every one of the 12 tasks finishes (exit 0)"
lt 0 "$(grep -c '"type":"retry"' "$F"/storm/s*/events.jsonl | awk -F: '{s += $2} END {print s}')" "after retries"
FAKE_429_PCT=35 FAKE_SEED=7 serve 429-random
storm "$F/storm0" --retries=0
like "$(awk '{print $2}' "$F/storm0/codes.txt" | sort -u | tr '\n' ' ')" "1" "twin, --retries 0: some tasks fail (exit 1)"

# ---- one ward per session ----
sed -i 's/"text": "It finished after the restart."/"text": "It finished."/' "$F/slow.json"
"$WARD" run --model "replay:$F/slow.json" --workspace "$F/ws/t02" "long" >/dev/null 2>"$T_TMP/a.err" &
WP=$!
for _ in $(seq 100); do grep -q 'session' "$T_TMP/a.err" && break; sleep 0.1; done
S2=$(grep -o 'session [0-9a-f-]*' "$T_TMP/a.err" | head -1 | cut -d' ' -f2)
"$WARD" run --resume "$S2" --model "replay:$F/slow.json" "more" >/dev/null 2>"$T_TMP/b.err"
RC=$?
is "$RC" 64 "a second --resume of a session another ward has open is refused (exit 64)"
like "$(cat "$T_TMP/b.err")" "session $S2 is open in another ward now" "with one line saying why"
kill -TERM $WP; wait $WP
"$WARD" run --resume "$S2" --model "replay:$F/slow.json" "go on" >/dev/null 2>"$T_TMP/c.err"
is "$?" 0 "positive twin: once that ward ended, --resume opens the session and the run ends done"
like "$(cat "$T_TMP/c.err")" "session $S2" "(the same session)"

# ---- bad task files: one line each ----
bad_task() { # bad_task WHAT LINE EXPECT [FLAGS]
	printf '%s\n' "$2" >"$T_TMP/bad.jsonl"
	"$WARD" run --task-file "$T_TMP/bad.jsonl" --task-index 0 --out "$T_TMP/badout" "${@:4}" >/dev/null 2>"$T_TMP/bad.err"
	RC=$?
	is "$RC" 64 "$1: exit 64"
	like "$(cat "$T_TMP/bad.err")" "$3" "$1: one line says what is wrong"
	is "$(wc -l <"$T_TMP/bad.err")" 1 "$1: and only one"
}
bad_task "an unknown field" '{"id": "x", "task": "t", "colour": "red"}' 'bad.jsonl:1: unknown field "colour"'
bad_task "an id that is a path" '{"id": "../x", "task": "t"}' '"id" must be 1 to 64 letters'
bad_task "no task" '{"id": "x"}' '"task" must be the task.s text'
bad_task "not JSON" 'id=x' "bad.jsonl:1: not valid JSON: 'i' where a value should be \\(column 1\\)"
bad_task "not an object" '["x"]' 'bad.jsonl:1: not a JSON object'
bad_task "a bad value for a flag" '{"id": "x", "task": "t", "max_rounds": "many"}' 'max-rounds'
bad_task "a fleet's own flag as a field" '{"id": "x", "task": "t", "out": "/tmp"}' '"out" cannot be a task.s field'
bad_task "a field only a trusted file may set" '{"id": "x", "task": "t", "base_url": "http://evil.test"}' '"base_url" is taken from a task file only with --trust-task-file'
bad_task "a program on the host from a task line" '{"id": "x", "task": "t", "approve_cmd": "touch /tmp/pwned"}' '"approve_cmd" is taken from a task file only with --trust-task-file'
# A line of 256 MiB (the bound is 1 MiB): refused in one line, and never
# held whole (ward's peak RSS, the ASan build's included, stays far under
# the line); twin: the same file's first line, before it, runs.
mkdir -p "$F/ws/small"
cp "$ROOT/examples/fix-test/calc.py" "$ROOT/examples/fix-test/test_calc.py" "$F/ws/small/"
{
	printf '%s\n' '{"id": "small", "task": "make the tests pass", "workspace": "ws/small", "model": "replay:'"$F/fix.json"'"}'
	printf '{"id": "huge", "task": "'; head -c 268435456 /dev/zero | tr '\0' x; printf '"}\n'
} >"$F/huge.jsonl"
RSS=$(python3 -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=open(sys.argv[1], "w")).returncode
print(r, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' \
	"$T_TMP/huge.err" "$WARD" run --task-file "$F/huge.jsonl" --task-index 1 --out "$T_TMP/hugeout")
is "${RSS% *}" 64 "a 256 MiB task line: exit 64"
like "$(cat "$T_TMP/huge.err")" 'huge.jsonl:2: a line over 1024 KiB' "a 256 MiB task line: one line says so"
is "$(wc -l <"$T_TMP/huge.err")" 1 "a 256 MiB task line: and only one"
lt "${RSS#* }" 128 "a 256 MiB task line is not held: ward's peak RSS ${RSS#* } MB"
"$WARD" run --task-file "$F/huge.jsonl" --task-index 0 --out "$T_TMP/hugeout" >/dev/null 2>"$T_TMP/huge0.err"
is "$?" 0 "twin: the line before it runs (exit 0)"
rm -f "$F/huge.jsonl"
# A key twice in a line would be one task to ward and another to any other
# reader of the file (Python's json and jq take the last): refused, with
# one line, and nothing of the task is made; twin: the line with each key
# once runs.
mkdir -p "$F/ws/dupkey"
cp "$ROOT/examples/fix-test/calc.py" "$ROOT/examples/fix-test/test_calc.py" "$F/ws/dupkey/"
printf '%s\n' '{"id": "dupkey", "task": "make the tests pass", "workspace": "ws/dupkey", "workspace": "/etc", "model": "replay:'"$F/fix.json"'"}' >"$F/dupkey.jsonl"
"$WARD" run --task-file "$F/dupkey.jsonl" --task-index 0 --out "$T_TMP/dupkeyout" >/dev/null 2>"$T_TMP/dk.err"
is "$?" 64 "a key twice in a task line: exit 64"
like "$(cat "$T_TMP/dk.err")" '^ward: .*dupkey.jsonl:1: not valid JSON: the key "workspace" is given twice in one object \(column 75\)' \
	"a key twice in a task line: one line names the key and where"
is "$(wc -l <"$T_TMP/dk.err")" 1 "a key twice in a task line: and only one"
[ ! -e "$T_TMP/dupkeyout/dupkey" ]; ok $? "a key twice in a task line: nothing of the task was made"
printf '%s\n' '{"id": "dupkey", "task": "make the tests pass", "workspace": "ws/dupkey", "model": "replay:'"$F/fix.json"'"}' >"$F/dupkey.jsonl"
"$WARD" run --task-file "$F/dupkey.jsonl" --task-index 0 --out "$T_TMP/dupkeyout" >/dev/null 2>"$T_TMP/dk.err"
is "$?" 0 "twin: the line with each key once runs (exit 0)"
is "$(field "$T_TMP/dupkeyout/dupkey/result.json" stop)" done "twin: and its result says done"
mkdir -p "$T_TMP/dupout"
printf '%s\n' '{"id": "same", "task": "make the tests pass", "workspace": "'"$F/ws/t04"'", "model": "replay:'"$F/fix.json"'"}' \
	'{"id": "same", "task": "another", "workspace": "'"$F/ws/t05"'", "model": "replay:'"$F/fix.json"'"}' >"$T_TMP/dup.jsonl"
"$WARD" run --task-file "$T_TMP/dup.jsonl" --task-index 0 --out "$T_TMP/dupout" >/dev/null 2>&1
is "$?" 0 "an id twice in a file: the first runs"
"$WARD" run --task-file "$T_TMP/dup.jsonl" --task-index 1 --out "$T_TMP/dupout" >/dev/null 2>"$T_TMP/dup.err"
is "$?" 64 "the second is refused (exit 64), not skipped as finished"
like "$(cat "$T_TMP/dup.err")" 'holds the results of another task \(index 0 of' "with one line saying whose results are there"
bad_task "an index past the end" '{"id": "x", "task": "t"}' 'has 1 task: index 0 is past|index 5 is past' --task-index 5
unset SLURM_ARRAY_TASK_ID JOB_COMPLETION_INDEX
"$WARD" run --task-file "$F/tasks.jsonl" --out "$T_TMP/noidx" >/dev/null 2>"$T_TMP/bad.err"
like "$(cat "$T_TMP/bad.err")" 'give --task-index I, or run it as a Slurm array task' "no index anywhere: one line says where it comes from"
JOB_COMPLETION_INDEX=0 "$WARD" run --task-file "$F/tasks.jsonl" --out "$T_TMP/k8s" >/dev/null 2>&1
is "$(field "$T_TMP/k8s/t01/result.json" index)" 0 "positive twin: JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) picks the task"
SLURM_ARRAY_TASK_ID=11 "$WARD" run --task-file "$F/tasks.jsonl" --out "$T_TMP/slurmenv" >/dev/null 2>&1
is "$(field "$T_TMP/slurmenv/t12/result.json" index)" 11 "and SLURM_ARRAY_TASK_ID"

# ---- a task line only narrows what the command line allows ----
# (Each field's rule, key by key, is config.sh's table; here what a line
# does to a real run.) The root: the task file's directory, or --task-root.
N=$T_TMP/narrow
mkdir -p "$N/root/ws" "$N/root/a/b" "$N/root/a/bc" "$N/elsewhere"
echo "MARKER-ROOT-5151" >"$N/root/ws/marker"
echo "MARKER-ELSEWHERE-6262" >"$N/elsewhere/marker"
cat >"$N/root/look.json" <<'J'
{"turns": [{"text": "Looking.", "tools": [{"name": "bash", "input": {"command": "cat /workspace/marker; ls /workspace | head -3"}}]},
           {"expect": "MARKER-", "text": "Seen."}]}
J
cp "$N/root/look.json" "$N/elsewhere/look.json"
cp "$N/root/look.json" "$N/root/a/b/look.json"
echo "MARKER-AB-8484" >"$N/root/a/b/marker"
ln -s "$N/elsewhere" "$N/root/link-out"
ln -s ws "$N/root/link-in"
narrow() { # narrow LINE [FLAGS]: run it as task 0 of $N/root/tasks.jsonl; RC, ERR
	printf '%s\n' "$1" >"$N/root/tasks.jsonl"
	rm -rf "$N/out"
	"$WARD" run "${@:2}" --task-file "$N/root/tasks.jsonl" --task-index 0 --out "$N/out" >/dev/null 2>"$T_TMP/narrow.err" </dev/null
	RC=$?; ERR=$(cat "$T_TMP/narrow.err")
}
LOOK="\"model\": \"replay:$N/root/look.json\""
BADWS=""
for ws in /etc "$HOME" ../elsewhere link-out "$N/elsewhere" "$N/root/a/bc/../../../elsewhere" /; do
	narrow "{\"id\": \"w\", \"task\": \"look\", \"workspace\": \"$ws\", $LOOK}"
	[ "$RC" = 64 ] && [ "$(wc -l <"$T_TMP/narrow.err")" = 1 ] && [[ $ERR == *"is not under the task root $N/root"* ]] &&
		[ ! -e "$N/out/w" ] || BADWS="$BADWS $ws:$RC"
done
is "$BADWS" "" "a line's workspace outside the task root (/etc, the home, ../, a symlink out, an absolute path, /): exit 64, one line, nothing run"
like "$ERR" "tasks.jsonl:1: \"workspace\": / is not under the task root" "the line names the file, the field and the root"
# /a/bc is not under /a/b: components, not a string prefix.
LOOKAB="\"model\": \"replay:$N/root/a/b/look.json\""
narrow "{\"id\": \"w\", \"task\": \"look\", \"workspace\": \"$N/root/a/bc\", $LOOKAB}" --task-root "$N/root/a/b"
is "$RC" 64 "a workspace beside --task-root whose name only starts like it (a/bc, root a/b): refused"
like "$ERR" "\"workspace\": $N/root/a/bc is not under the task root $N/root/a/b " "with one line naming the root"
narrow "{\"id\": \"w\", \"task\": \"look\", \"workspace\": \"$N/root/a/b\", $LOOKAB}" --task-root "$N/root/a/b"
is "$RC" 0 "twin: the root itself may be a line's workspace"
like "$(cat "$N/out/w/events.jsonl" 2>/dev/null)" "MARKER-AB-8484" "and its box has it"
narrow "{\"id\": \"w\", \"task\": \"look\", \"workspace\": \"ws\", $LOOK}"
is "$RC" 0 "twin: a workspace under the task root runs"
like "$(cat "$N/out/w/events.jsonl")" "MARKER-ROOT-5151" "and its box has that directory"
narrow "{\"id\": \"w\", \"task\": \"look\", \"workspace\": \"$N/root/ws\", $LOOK}"
is "$RC" 0 "twin: an absolute path under the task root runs"
narrow "{\"id\": \"w\", \"task\": \"look\", \"workspace\": \"link-in\", $LOOK}"
is "$RC" 0 "twin: a symlink that stays under the root runs"
like "$(head -1 "$N/out/w/journal.jsonl")" "\"workspace\":\"$N/root/ws\"" "with the resolved path handed on (the session's workspace is the link's target)"
narrow "{\"id\": \"w\", \"task\": \"look\", \"workspace\": \"$N/elsewhere\", \"model\": \"replay:$N/elsewhere/look.json\"}" --trust-task-file
is "$RC" 0 "twin: with --trust-task-file, an absolute workspace outside the root runs"
like "$(cat "$N/out/w/events.jsonl")" "MARKER-ELSEWHERE-6262" "and its box has that directory"
printf '%s\n' "{\"id\": \"w\", \"task\": \"look\", \"workspace\": \"$N/elsewhere\", \"model\": \"replay:$N/elsewhere/look.json\"}" >"$N/tasks2.jsonl"
mkdir -p "$N/tasks"; mv "$N/tasks2.jsonl" "$N/tasks/t.jsonl"
rm -rf "$N/out"
"$WARD" run --task-root "$N/elsewhere" --task-file "$N/tasks/t.jsonl" --task-index 0 --out "$N/out" >/dev/null 2>&1 </dev/null
is "$?" 0 "twin: --task-root DIR: a workspace (and replay script) under DIR runs, the task file elsewhere"
# A replay script is a host file too.
narrow "{\"id\": \"w\", \"task\": \"look\", \"workspace\": \"ws\", \"model\": \"replay:$N/elsewhere/look.json\"}"
is "$RC" 64 "a line's replay script outside the task root: exit 64"
like "$ERR" "\"model\": $N/elsewhere/look.json is not under the task root" "with one line"

# Hosts: a line's rule never names an address that is not public.
mkdir -p "$N/srv"; echo "MARKER-LOOPBACK-7373" >"$N/srv/secret.txt"
rm -f "$N/port"
python3 - "$N/srv" "$N/port" "$N/srv.log" <<'PY' &
import http.server, functools, sys
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, f, *a):
        open(sys.argv[3], "a").write((f % a) + "\n")
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(H, directory=sys.argv[1]))
open(sys.argv[2], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
HSRV=$!
for _ in $(seq 100); do [ -s "$N/port" ] && break; sleep 0.05; done
HP=$(cat "$N/port")
cat >"$N/root/fetch.json" <<J
{"turns": [{"text": "Fetching.", "tools": [{"name": "bash", "input": {"command": "curl -s --max-time 5 http://internal.test:$HP/secret.txt; echo; echo fetched"}}]},
           {"expect": "MARKER-LOOPBACK", "text": "Got it."}]}
J
BADH=""
for rule in "internal.test=127.0.0.1:$HP" "127.0.0.1:$HP" "x.test=10.1.2.3:80" "x.test=192.168.0.1" "169.254.169.254" \
	"x.test=100.64.0.1:443" "[::1]:$HP" "x.test=[::ffff:127.0.0.1]:$HP" "x.test=[fe80::1]:443" "x.test=0.0.0.0:$HP"; do
	narrow "{\"id\": \"h\", \"task\": \"fetch\", \"workspace\": \"ws\", \"model\": \"replay:$N/root/fetch.json\", \"allow_hosts\": [\"docs.python.org\", \"$rule\"]}"
	[ "$RC" = 64 ] && [ "$(wc -l <"$T_TMP/narrow.err")" = 1 ] && [[ $ERR == *"a task line may allow only public hosts"* ]] || BADH="$BADH $rule:$RC"
done
is "$BADH" "" "a line's allow_hosts pinning or naming loopback, private, CGNAT, link-local (metadata), mapped or unspecified addresses: exit 64, one line each"
like "$ERR" "names an unspecified" "the line says what kind of address it is"
[ ! -s "$N/srv.log" ]; ok $? "and the loopback service never heard from a box"
narrow "{\"id\": \"h\", \"task\": \"fetch\", \"workspace\": \"ws\", \"model\": \"replay:$N/root/fetch.json\", \"allow_hosts\": [\"internal.test=127.0.0.1:$HP\"]}" --trust-task-file
is "$RC" 0 "twin: with --trust-task-file the same pin is taken"
like "$(cat "$N/out/h/events.jsonl")" "MARKER-LOOPBACK-7373" "and the box reaches the service through the proxy"
narrow "{\"id\": \"h\", \"task\": \"look\", \"workspace\": \"ws\", $LOOK, \"allow_hosts\": [\"docs.python.org\", \"pypi.org=151.101.0.223:443\", \"*.example.org\"]}"
is "$RC" 0 "twin: public hosts (a name, a pin to a public address, a wildcard) from a line are taken"
is "$(grep -c '^ward: warning' "$T_TMP/narrow.err")" 0 "with no warning"
narrow "{\"id\": \"h\", \"task\": \"look\", \"workspace\": \"ws\", $LOOK, \"allow_hosts\": [\"docs.python.org\"]}" --net none
like "$ERR" "\"allow_hosts\": docs.python.org ignored: a task line may only narrow the network, and a network mode is in force \\(none, from --net\\)" "a line's hosts over the command line's --net none: ignored, one line"
kill "$HSRV" 2>/dev/null; wait "$HSRV" 2>/dev/null

# The network mode: a line's host is ignored; the box has its own network.
cat >"$N/root/net.json" <<'J'
{"turns": [{"text": "Interfaces.", "tools": [{"name": "bash", "input": {"command": "echo ifaces=$(tail -n +3 /proc/net/dev | wc -l)"}}]},
           {"expect": "ifaces=", "text": "Counted."}]}
J
narrow "{\"id\": \"n\", \"task\": \"count\", \"workspace\": \"ws\", \"model\": \"replay:$N/root/net.json\", \"net\": \"host\"}"
is "$RC" 0 "a line's net host: the run goes on"
like "$ERR" "\"net\": host ignored: a task line may only narrow what you allow, and host would open the host's whole network" "with one line saying it was ignored"
like "$(cat "$N/out/n/events.jsonl")" 'ifaces=1' "the host's network from a task line: not given (the box has only its loopback)"

# Bounds: the tighter of the command line's and the line's.
python3 -c 'import json; print(json.dumps({"turns": [{"text": "Round %d." % i, "tools": [{"name": "bash", "input": {"command": "echo %d" % i}}]} for i in range(12)] + [{"text": "Done."}]}))' >"$N/root/loop.json"
rounds() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rounds"])' "$N/out/b/result.json" 2>/dev/null; }
narrow '{"id": "b", "task": "loop", "workspace": "ws", "max_rounds": 10}' --model "replay:$N/root/loop.json" --max-rounds 1
is "$RC/$(rounds)" "2/1" "--max-rounds 1 on the command line, 10 in the line: exactly 1 round runs (exit 2)"
like "$ERR" "tasks.jsonl:1: \"max_rounds\": 10 ignored: a task line may only tighten it, and this is looser than what is in force \\(1, from --max-rounds\\)" "with one line saying the line's bound was looser"
narrow '{"id": "b", "task": "loop", "workspace": "ws", "max_rounds": 1}' --model "replay:$N/root/loop.json" --max-rounds 10
is "$RC/$(rounds)" "2/1" "twin: 1 in the line, 10 on the command line: 1 round"
is "$(grep -c '^ward: warning' "$T_TMP/narrow.err")" 0 "with no warning"
t0=$(now_ms)
narrow "{\"id\": \"d\", \"task\": \"run the long job\", \"workspace\": \"ws\", \"model\": \"replay:$F/slow.json\", \"deadline\": \"1h\"}" --deadline 2s --task-root /
MS=$(( $(now_ms) - t0 ))
is "$RC" 2 "--deadline 2s on the command line, 1h in the line: the run ends at its deadline (exit 2)"
lt "$MS" 6000 "at the command line's 2 s, not the line's hour (${MS} ms)"

# ---- what ward writes is the owner's alone, whatever the umask ----
# A task's DIR/ID/, a --patch, a report, and the state dir (sessions,
# layers and their records, checkpoints, hibernated and cold states):
# files 0600, directories 0700. The box's own tree inside a layer keeps
# the box's modes (it is what ward apply gives the user's tree).
M=$T_TMP/modes
mkdir -p "$M/ws"
cp "$ROOT/examples/fix-test/calc.py" "$ROOT/examples/fix-test/test_calc.py" "$M/ws/"
printf 'API_TOKEN=secret-4242\n' >"$M/ws/.env"; chmod 600 "$M/ws/.env"
cat >"$M/edit.json" <<'J'
{"turns": [{"text": "Editing.", "tools": [{"name": "bash", "input": {"command": "echo MORE=1 >>.env; echo new >new.txt; mkdir -p sub && echo deep >sub/f"}}]},
           {"text": "Done."}]}
J
echo "{\"id\": \"m\", \"task\": \"edit\", \"workspace\": \"ws\", \"model\": \"replay:$M/edit.json\"}" >"$M/tasks.jsonl"
(
	umask 022
	"$WARD" run --task-file "$M/tasks.jsonl" --task-index 0 --out "$M/out/fresh" >/dev/null 2>&1
	"$WARD" run --model "replay:$M/edit.json" --workspace "$M/ws" --patch "$M/p.diff" "edit" >/dev/null 2>"$M/patch.err"
	"$WARD" report --junit "$M/j.xml" "$M/out/fresh" >/dev/null 2>&1
	B=$("$WARD" box create --persistent --workspace "$M/ws" --cold-after 1s --store "$M/cold")
	echo "$B" >>"$T_TMP/boxes"
	"$WARD" box exec "$B" -- sh -c 'echo t >/tmp/t' >/dev/null
	"$WARD" box hibernate "$B" >/dev/null
	for _ in $(seq 100); do [ -n "$(find "$M/cold" -type f 2>/dev/null)" ] && break; sleep 0.1; done
	B=$("$WARD" box create --persistent --workspace "$M/ws")
	echo "$B" >>"$T_TMP/boxes"
	"$WARD" box exec "$B" -- sh -c 'echo t >/tmp/t' >/dev/null
	"$WARD" box hibernate "$B" >/dev/null
)
like "$(cat "$M/p.diff")" 'API_TOKEN=secret-4242' "the --patch holds the 0600 .env's lines (so its mode matters)"
# modes ROOT...: each path ward made under ROOT whose mode lets anyone but
# the owner in, as "MODE PATH"; a layer's upper and work trees (the box's
# own files) are left out, their directory checked.
modes() {
	python3 - "$@" <<'PY'
import os, stat, sys
for top in sys.argv[1:]:
    for d, dirs, files in os.walk(top):
        if d != top and os.path.basename(d) in ("upper", "work"):
            dirs[:] = []
            continue
        st = os.lstat(d)
        if stat.S_IMODE(st.st_mode) & 0o077:
            print("%o %s/" % (stat.S_IMODE(st.st_mode), d))
        for f in files:
            p = os.path.join(d, f)
            st = os.lstat(p)
            if not stat.S_ISLNK(st.st_mode) and stat.S_IMODE(st.st_mode) & 0o077:
                print("%o %s" % (stat.S_IMODE(st.st_mode), p))
PY
}
is "$(ls -A "$M/out/fresh/m" | tr '\n' ' ')" ".lock events.jsonl journal.jsonl patch.diff result.json session " "a fleet task's directory holds what it should"
is "$(modes "$M/out")" "" "every file a fleet task leaves (events, journal, patch, result, session, lock) is 0600 in a 0700 directory, the --out directory ward made too, under umask 022"
is "$(stat -c %a "$M/p.diff")" 600 "--patch FILE is 0600 under umask 022"
is "$(stat -c %a "$M/j.xml")" 600 "ward report --junit FILE is 0600"
[ -n "$(find "$M/cold" -type f)" ]; ok $? "a box went cold (its state is in the store)"
is "$(modes "$XDG_STATE_HOME" "$M/cold")" "" "the state dir and a cold store: every file 0600, every directory 0700 (sessions, layers and their records, checkpoints, hibernated and cold states)"
SESS=$(grep -o 'session [0-9a-f-]*' "$M/patch.err" | head -1 | cut -d' ' -f2)
"$WARD" apply "$SESS" >/dev/null 2>&1
is "$(stat -c %a "$M/ws/new.txt" "$M/ws/.env" | tr '\n' ' ')" "644 600 " "twin: ward apply gives the user's tree the box's modes (a new file 644, the .env 600 as it was)"

# ---- a real Slurm job array on this machine ----
if [ -f "$ROOT/tests/slurm-local.sh" ] && command -v sbatch >/dev/null; then
	. "$ROOT/tests/slurm-local.sh"
	SL=$T_TMP/slurm
	mkdir -p "$SL"
	if slurm_up "$SL" 2>/dev/null; then
		# The cluster is the test's: it goes however the test ends.
		trap 'slurm_down "$SL" >/dev/null 2>&1' EXIT
		trap 'exit 143' TERM INT
		S=$F/slurm
		mkdir -p "$S"
		array() { # array OUT: the 12 as one array job; waits; "INDEX CODE" lines in OUT/codes.txt
			local jid
			jid=$(sbatch --parsable --array=0-11%4 --output="$1/slurm-%a.out" --chdir="$F" \
				--wrap "exec '$WARD' run --task-file '$F/tasks.jsonl' --out '$1'") || return 1
			slurm_wait "$jid" 300 && slurm_exit_codes "$jid" >"$1/codes.txt"
		}
		mkdir -p "$S"
		array "$S"
		check_run "$S" "Slurm array (sbatch --array=0-11%4)"
		SUMS=$(cat "$S"/t*/result.json | md5sum)
		array "$S"
		is "$(awk '{print $2}' "$S/codes.txt" | sort -u | tr '\n' ' ')" "0 " "Slurm requeue (the array again): every index exits 0"
		is "$(cat "$S"/t*/result.json | md5sum)" "$SUMS" "and no task was run twice (results unchanged)"
		# scancel: SIGTERM to the running task, as Slurm sends it.
		BEFORE=$(pgrep -f '^sleep 60$'; echo none)
		jid=$(sbatch --parsable --output="$F/scancel.out" --chdir="$F" \
			--wrap "exec '$WARD' run --task-file '$F/one.jsonl' --task-index 0 --out '$F/scancel'")
		for _ in $(seq 200); do grep -q '"tool_call"' "$F/scancel/long/events.jsonl" 2>/dev/null && break; sleep 0.1; done
		wait_until 10 eval '[ -n "$(new_sleeps "$BEFORE")" ]'
		t0=$(now_ms); scancel "$jid"
		for _ in $(seq 100); do [ -s "$F/scancel/long/result.json" ] && break; sleep 0.05; done
		MS=$(( $(now_ms) - t0 ))
		is "$(field "$F/scancel/long/result.json" stop)" cancelled "scancel: the task's result.json is written, cancelled"
		lt "$MS" 5000 "within 5 s of scancel (${MS} ms)"
		slurm_wait "$jid" 30
		like "$(scontrol -o show job "$jid" 2>&1)" 'JobState=CANCELLED' "Slurm records the job cancelled"
		unlike "$("$WARD" box ls 2>&1)" "s-$(awk '{print $1}' "$F/scancel/long/session")" "and the task's box is gone"
		slurm_down "$SL"
		ok $? "the one-machine Slurm is stopped: munged, slurmctld and slurmd, nothing left"
		trap - EXIT
	else
		ok 0 "Slurm array # SKIP a one-machine Slurm could not be started here: $SLURM_WHY"
		slurm_down "$SL" >/dev/null 2>&1
	fi
else
	ok 0 "Slurm array # SKIP Slurm is not installed (.ci/setup installs slurm-wlm and munge)"
fi

done_testing
