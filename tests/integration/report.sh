#!/bin/bash
# ward report DIR: a fleet's results (DIR/ID/result.json, as ward run
# --task-file F --task-index I --out DIR leaves them) as a table, JSON,
# JUnit XML and Markdown. The fixture is written here by hand; every total
# below was worked out by hand from it.
. "$(dirname "$0")/lib.sh"
D=$T_TMP/out
mkdir -p "$D"

res() { # res ID STOP EXIT ROUNDS CALLS IN OUT COST DURATION_MS FINAL FILES WHY
	mkdir -p "$D/$1"
	cat >"$D/$1/result.json" <<JSON
{"id": "$1", "index": 0, "task_file": "ci/tasks.jsonl", "task": "the task", "stop": "$2", "why": "${12}",
 "final": ${10}, "exit_code": $3, "session": "20261130-193523-bfb346", "box": "s-1", "model": "claude-sonnet-4",
 "rounds": $4, "calls": $5, "refused": 0,
 "usage": {"input_tokens": $6, "output_tokens": $7, "cache_read_tokens": 0, "cache_write_tokens": 0, "cache_hit_rate": 0},
 "cost_usd": $8, "changed_files": ${11}, "started_at": "2026-11-30T19:40:00Z", "ended_at": "2026-11-30T19:41:00Z",
 "duration_ms": $9, "runs": 1}
JSON
}
#   ID                STOP           EXIT R  C  IN   OUT COST    MS     FINAL FILES
res a-done1           done           0    3  2  1000 200 0.0123  12345  true  '["src/a.py", {"path": "src/b.py", "change": "added"}]' "the tests pass"
res b-done2           done           0    1  0  500  50  0.001   1000   true  '[]' "nothing to do"
res c-deadline        deadline       2    5  9  4000 800 0.05    600000 true  '[{"path": "x.c", "change": "modified"}]' "the deadline (10m) passed"
res d-refused         refused        3    2  1  300  30  0.002   2000   true  '[]' "a call needed approval"
res e-done-tests-fail done           0    4  3  2000 400 0.02    30000  true  '["t.py"]' "done, though the tests still fail"
res f-weird           provider_error 1    1  0  100  0   null    500    false '[]' 'quote <&\"'"'"'> ctl[\u0001] tab[\t] cr[\r] bar|pipe\nline2 café'
res g-round-cap       round_cap      2    9  8  6000 900 0.1     45000  true  '["a", "b", "c"]' "round cap 9"
res h-cancelled       cancelled      130  1  1  700  70  0.003   7000   false '[]' "SIGTERM"
res i-done            done           0    2  1  1500 150 null    20000  true  '["i"]' "done"
res j-model-refused   model_refused  5    1  0  200  20  0.0005  3000   true  '[]' "the model declined"
res k-box-error       box_error      4    0  0  0    0   0       800    false '[]' "no box"
res l-done            done           0    2  2  800  80  0.004   9000   true  '[]' "done"
mkdir -p "$D/m-missing" "$D/n-unfinished" "$D/o-truncated"
echo '{"type":"header"}' >"$D/n-unfinished/journal.jsonl"
head -c 150 "$D/a-done1/result.json" >"$D/o-truncated/result.json"
WEIRD=$(printf 'quote <&"'"'"'> ctl[\001] tab[\t] cr[\r] bar|pipe\nline2 café')

rep() { # rep ARGS -> RC OUT ERR
	"$WARD" report "$@" >"$T_TMP/stdout" 2>"$T_TMP/stderr"
	RC=$?; OUT=$(cat "$T_TMP/stdout"); ERR=$(cat "$T_TMP/stderr")
}
row() { printf '%s\n' "$OUT" | grep "^$1 " | tr -s ' '; }
line() { printf '%s\n' "$OUT" | grep "^$1 " | sed 's/  */ /'; }

# --- The table.
rep "$D"
is "$RC" 1 "some tasks not done: exit 1"
is "$ERR" "" "nothing on stderr"
is "$(printf '%s\n' "$OUT" | head -1 | tr -s ' ')" "ID STOP EXIT ROUNDS CALLS TOKENS COST DURATION FILES" "the header"
is "$(row a-done1)" "a-done1 done 0 3 2 1200 \$0.0123 12.3s 2" "a done row: changed files as paths and as objects both count"
is "$(row c-deadline)" "c-deadline deadline 2 5 9 4800 \$0.0500 600.0s 1" "a deadline row"
is "$(row f-weird)" "f-weird provider_error 1 1 0 100 - 0.5s 0" "an unknown cost is -"
is "$(row h-cancelled)" "h-cancelled cancelled 130 1 1 770 \$0.0030 7.0s 0" "a cancelled row"
is "$(row m-missing)" "m-missing missing - - - - - - -" "a directory with nothing in it is missing"
is "$(row n-unfinished)" "n-unfinished unfinished - - - - - - -" "a journal and no result: unfinished"
is "$(row o-truncated)" "o-truncated unreadable - - - - - - -" "half a result.json: unreadable"
is "$(printf '%s\n' "$OUT" | grep -E '^[a-o]-' | cut -d' ' -f1 | paste -sd,)" \
	"a-done1,b-done2,c-deadline,d-refused,e-done-tests-fail,f-weird,g-round-cap,h-cancelled,i-done,j-model-refused,k-box-error,l-done,m-missing,n-unfinished,o-truncated" \
	"one row per task, sorted by id"
like "$OUT" "o-truncated +unreadable: result.json is not valid JSON \(line 2, column [0-9]+\)" "the unreadable one says why, and where"
like "$OUT" "f-weird +provider_error: quote <&\"'> ctl\[\^A\] tab\[ \] cr\[\^M\] bar\|pipe line2 café$" "a why on a terminal: one line, its control characters shown (the terminal rule)"
unlike "$OUT" $'\001' "no control character reaches the terminal"
is "$(line tasks)" "tasks 15: done 5, round_cap 1, deadline 1, cancelled 1, refused 1, model_refused 1, provider_error 1, box_error 1, missing 1, unfinished 1, unreadable 1" "totals: per stop, in ward run's order"
is "$(line done)" "done 33.3% (5 of 15)" "totals: done %"
is "$(line tokens)" "tokens 19800 (in 17100, out 2700)" "totals: tokens"
is "$(line cost)" "cost \$0.1928 (2 unknown)" "totals: the sum of the known costs, and how many are unknown"
# The 12 durations sorted (ms): 500 800 1000 2000 3000 7000 9000 12345 20000
# 30000 45000 600000. Nearest rank ceil(p/100 * 12): p50 the 6th, p90 the
# 11th, p99 the 12th; the sum is 730645.
is "$(line duration)" "duration p50 7.0s, p90 45.0s, p99 600.0s; slowest 600.0s, sum 730.6s (12 finished)" "totals: p50, p90, p99 by nearest rank, the slowest"
like "$(line rerun)" "^rerun 3 " "totals: three a rerun may change (cancelled, provider_error, box_error)"

# --- JSON.
rep --json "$D"
is "$RC" 1 "--json: exit 1"
is "$(printf '%s' "$OUT" | python3 -c '
import json, sys
v = json.load(sys.stdin); t = v["totals"]; d = t["duration_ms"]
print(len(v["tasks"]), t["tasks"], t["done"], t["done_pct"], t["tokens"], round(t["cost_usd"], 6), t["cost_unknown"],
      d["p50"], d["p90"], d["p99"], d["max"], t["stops"]["done"], t["stops"]["unreadable"], t["not_final"])')" \
	"15 15 5 33.3 19800 0.1928 2 7000 45000 600000 600000 5 1 3" "--json parses; its totals"
is "$(printf '%s' "$OUT" | python3 -c '
import json, sys
t = {x["id"]: x for x in json.load(sys.stdin)["tasks"]}
print(t["f-weird"]["why"] == sys.argv[1], t["f-weird"]["cost_usd"], t["m-missing"]["exit_code"], t["a-done1"]["changed_files"],
      t["c-deadline"]["exit_code"], t["n-unfinished"]["stop"], "not valid JSON" in t["o-truncated"]["why"])' "$WEIRD")" \
	"True None None 2 2 unfinished True" "--json rows: the why whole, null where unknown"

# --- JUnit, with Markdown on stdout at the same time.
rep --junit "$T_TMP/junit.xml" --markdown "$D"
is "$RC" 1 "--junit FILE --markdown: exit 1"
ok "$([ -f "$T_TMP/junit.xml" ] && [ ! -e "$T_TMP/junit.xml.tmp" ]; echo $?)" "the XML is written, and no .tmp is left"
is "$(python3 -c '
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot(); s = r.find("testsuite"); cs = s.findall("testcase")
f = {c.get("name"): c for c in cs}
w = f["f-weird"].find("failure")
print(r.tag, s.get("name"), s.get("tests"), s.get("failures"), s.get("errors"), len(cs),
      sum(1 for c in cs if c.find("failure") is not None), sum(1 for c in cs if c.find("error") is not None),
      f["a-done1"].get("classname"), f["a-done1"].get("time"), f["m-missing"].get("classname"),
      w.get("type"), w.get("message") == "provider_error: " + sys.argv[2].replace("\x01", "\ufffd"),
      w.text.endswith(sys.argv[2].replace("\x01", "\ufffd")), f["n-unfinished"].find("error").get("type"),
      f["a-done1"].find("failure") is None)' "$T_TMP/junit.xml" "$WEIRD")" \
	"testsuites ward 15 7 3 15 7 3 ward.tasks 12.345 ward.tasks provider_error True True unfinished True" \
	"--junit: valid XML; 15 testcases, 7 failures, 3 errors; a task that never ran has the same classname; the why round-trips (tab, CR and newline kept; the other control character replaced)"
like "$(cat "$T_TMP/junit.xml")" "exit code 2, rounds 5, calls 9, refused 0, runs 1, session 20261130-193523-bfb346" "a failure's details"
is "$(printf '%s\n' "$OUT" | grep -c '^| id | stop | exit | rounds | calls | tokens | cost | duration | files | why |$')" 1 "--markdown: the header"
is "$(printf '%s\n' "$OUT" | grep -cE '^\| [a-o]-')" 15 "--markdown: one row per task"
is "$(printf '%s\n' "$OUT" | python3 -c '
import re, sys
rows = [l for l in sys.stdin.read().split("\n") if l.startswith("| ")]
print(sorted(set(len(re.findall(r"(?<!\\)(?:\\\\)*\|", l)) for l in rows)))')" "[11]" "--markdown: every row has 10 cells (| escaped, no newline in a cell)"
like "$(printf '%s\n' "$OUT" | grep '^| f-weird')" 'quote &lt;&amp;"'"'"'&gt; ctl\[.\] tab\[ \] cr\[ \] bar\\\|pipe<br>line2 café \|$' "--markdown: the why, | and the newline escaped"
like "$OUT" '^- \*\*done\*\*: 33.3% \(5 of 15\)$' "--markdown: the totals"
rep --junit - "$D"
is "$(printf '%s' "$OUT" | python3 -c 'import sys, xml.etree.ElementTree as ET; print(len(ET.fromstring(sys.stdin.read()).iter("testcase").__next__().attrib))')" 3 "--junit -: the XML on stdout, alone"

# --- Exit codes: all done (the positive twin), usage.
A=$T_TMP/alldone
mkdir -p "$A"
cp -r "$D/a-done1" "$D/b-done2" "$A/"
touch "$A/slurm-7.out"
rep "$A"
is "$RC" 0 "every task done: exit 0"
like "$OUT" "^done +100.0% \(2 of 2\)$" "all done: 100%"
like "$OUT" "^skipped +1 entries that are not task directories \(the first: slurm-7.out\)$" "a file beside the tasks is not a task, and is said"
rep --junit "$T_TMP/ok.xml" "$A"
is "$RC" 0 "--junit, all done: exit 0"
is "$(python3 -c 'import sys, xml.etree.ElementTree as ET; s = ET.parse(sys.argv[1]).getroot()[0]; print(s.get("failures"), s.get("errors"), len(s))' "$T_TMP/ok.xml")" "0 0 2" "--junit, all done: no failure, no error"
rep --junit "$T_TMP/nodir/r.xml" "$A"
is "$RC" 1 "--junit into a directory that does not exist: exit 1, though every task is done"
like "$ERR" "^ward: report: --junit $T_TMP/nodir/r.xml: cannot write it: No such file or directory$" "... and one line says so"
mkdir -p "$T_TMP/empty"
rep "$T_TMP/empty"
is "$RC" 1 "an empty DIR: exit 1 (a fleet that never ran is not a pass)"
is "$ERR" "ward: report: $T_TMP/empty has no task directories (DIR/ID/, as ward run --out makes them)" "an empty DIR: one line"
rep
is "$RC" 64 "no DIR: exit 64"
is "$ERR" "ward: report: give one directory, the --out DIR of the runs; usage: ward report [--json | --markdown] [--junit FILE] [--task-file F] DIR" "no DIR: one line"
rep "$T_TMP/nowhere"
is "$RC/$ERR" "64/ward: report: $T_TMP/nowhere: no such directory" "no such DIR: 64, one line"
rep "$D/a-done1/result.json"
is "$RC/$ERR" "64/ward: report: $D/a-done1/result.json: not a directory" "DIR a file: 64, one line"
rep --json --markdown "$D"
is "$RC/$ERR" "64/ward: report: --json, --markdown and --junit - each take stdout; give one of them" "--json with --markdown: 64"
rep --bogus "$D"
is "$RC/$ERR" "64/ward: report: unknown flag --bogus; see \`ward report --help\`" "an unknown flag: 64"
rep --help
is "$RC" 0 "--help: exit 0"
like "$OUT" "^usage: ward report " "--help: the usage"

# --- Bad files are rows, never a crash or a hang.
B=$T_TMP/bad
mkdir -p "$B/nostop" "$B/other" "$B/big" "$B/fifo" "$B/notobj" "$B/badfiles"
echo '{"id": "nostop", "exit_code": 0, "rounds": 1, "calls": 1, "usage": {"input_tokens": 1, "output_tokens": 1}, "duration_ms": 1}' >"$B/nostop/result.json"
sed 's/"id": "a-done1"/"id": "someone-else"/' "$D/a-done1/result.json" >"$B/other/result.json"
python3 -c 'print("{\"id\": \"big\", \"why\": \"" + "x" * (1 << 20) + "\"}")' >"$B/big/result.json"
mkfifo "$B/fifo/result.json"
echo '[1, 2]' >"$B/notobj/result.json"
sed 's/"id": "a-done1"/"id": "badfiles"/; s/"changed_files": \[/"changed_files": [7, /' "$D/a-done1/result.json" >"$B/badfiles/result.json"
t0=$(now_ms)
rep "$B"
lt $(($(now_ms) - t0)) 5000 "a FIFO for a result.json does not hang the report"
is "$RC" 1 "bad files: exit 1"
like "$OUT" "nostop +unreadable: result.json: no \"stop\"" "a missing field is named"
like "$OUT" "other +unreadable: result.json: its \"id\" is not its directory's name" "another task's result is refused"
like "$OUT" "big +unreadable: result.json is larger than 1024 KiB" "a result.json over 1 MiB is not read"
like "$OUT" "fifo +unreadable: result.json is not a regular file" "a FIFO is not read"
like "$OUT" "notobj +unreadable: result.json: not a JSON object" "not an object"
like "$OUT" "badfiles +unreadable: result.json: \"changed_files\"\[0\] is neither a path nor an object with one" "a changed file that is neither a path nor an object"

done_testing
