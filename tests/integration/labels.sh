#!/bin/bash
# Box labels: metadata a box carries (--label KEY=VALUE on create), shown by
# ls and info, filtered by ls --label, and kept in the journal of each
# session that uses the box.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

A=$(box_new --label task=refactor-auth --label team=infra --label cost-centre/eu=42)
B=$(box_new --label task=other)
C=$(box_new)
LS=$("$WARD" box ls)
like "$LS" "$A .*task=refactor-auth,team=infra,cost-centre/eu=42" "ls shows a box's labels"
like "$LS" "$C .* - " "and - for a box without"
F=$("$WARD" box ls --label task=refactor-auth)
like "$F" "$A" "ls --label task=refactor-auth: the box with it"
unlike "$F" "$B|$C" "and no other"
F=$("$WARD" box ls --label task=refactor-auth --label team=infra)
like "$F" "$A" "two labels: the box with both"
F=$("$WARD" box ls --label task=refactor-auth --label team=platform)
unlike "$F" "$A" "and not a box with only one of them"
J=$("$WARD" box ls --json --label task=other)
is "$(python3 -c 'import json,sys; a=json.load(sys.stdin); print(len(a), a[0]["name"], a[0]["labels"])' <<<"$J")" "1 $B {'task': 'other'}" "ls --json --label: the box, with its labels"
is "$("$WARD" box info "$A" | json labels.team)" infra "info has the labels"

ERR=$("$WARD" box create --label 'Team=x' 2>&1); RC=$?
is "$RC" 64 "a label key with a capital: refused (64)"
like "$ERR" 'label "Team=x": give key=value' "with one line saying what a label is"
ERR=$("$WARD" box create --label 'novalue' 2>&1); RC=$?
is "$RC" 64 "a label without = : refused"
ERR=$("$WARD" box ls --label 'x' 2>&1); RC=$?
is "$RC" 64 "ls --label without = : refused"
D=$(box_new --label 'empty=' --label 'k.v_2-x=with spaces and: colons')
is "$("$WARD" box info "$D" | python3 -c 'import json,sys; print(json.load(sys.stdin)["labels"])')" "{'empty': '', 'k.v_2-x': 'with spaces and: colons'}" "positive twin: an empty value and a value with spaces are labels"

# A session that uses the box: its journal says whose box it was.
WS=$T_TMP/ws; mkdir -p "$WS"; cp "$ROOT/examples/fix-test/calc.py" "$ROOT/examples/fix-test/test_calc.py" "$WS/"
L=$(box_new --workspace "$WS" --label task=fix-calc)
"$WARD" run --box "$L" --model "replay:$ROOT/examples/fix-test/replay.json" "make the tests pass" >/dev/null 2>"$T_TMP/run.err"
is "$?" 0 "a run in a labelled box"
J=$(ls -t "$XDG_STATE_HOME"/ward/sessions/*.jsonl | head -1)
like "$(head -1 "$J")" '"type":"header".*"box_labels":\{"task":"fix-calc"\}' "its journal's header carries the box's labels"
# Every record, for audit and cost: a record is counted by label alone.
every_labelled() { python3 -c 'import json,sys
recs=[json.loads(l) for l in open(sys.argv[1])]
bad=[r["type"] for r in recs if r.get("box_labels")!={"task":"fix-calc"}]
print(len(recs), "records;", "unlabelled: "+",".join(bad) if bad else "all labelled")' "$1"; }
like "$(every_labelled "$J")" '^[1-9][0-9]+ records; all labelled$' "every record of its journal carries the labels (messages, calls, results, stop)"
ID=$(basename "$J" .jsonl); N=$(wc -l <"$J")
# Resumed (the replay has no turn for it: the run fails, its records stand).
"$WARD" run --box "$L" --resume "$ID" --model "replay:$ROOT/examples/fix-test/replay.json" "again" >/dev/null 2>&1
[ "$(wc -l <"$J")" -gt "$N" ]; ok $? "a resumed session appends records"
like "$(every_labelled "$J")" 'all labelled$' "and those carry the labels too (the journal keeps its header's)"
"$WARD" run --model "replay:$ROOT/examples/fix-test/replay.json" --workspace "$WS" "make the tests pass" >/dev/null 2>&1
J=$(ls -t "$XDG_STATE_HOME"/ward/sessions/*.jsonl | head -1)
unlike "$(cat "$J")" 'box_labels' "twin: a run in a box of its own has none, on any record"

done_testing
