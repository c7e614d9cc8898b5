#!/bin/bash
# Subagents (the task tool): children of a replayed parent, each a ward run
# in a box forked from the parent's, side by side up to --max-subagents;
# their changes merged back, conflicts reported and never applied; the
# budgets the whole task's; a cancel ends every child and its box.
. "$(dirname "$0")/lib.sh"

R=$T_TMP/scripts; mkdir -p "$R"
child() { # child NAME BASH-COMMAND: a child's script: one bash call, then its answer
	cat >"$R/$1.json" <<J
{"turns": [{"tools": [{"name": "bash", "input": {"command": $(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$2")}}]},
 {"text": "$1 finished"}]}
J
}
parent() { # parent NAME CHILD...: one round of task calls, then done
	local n=$1; shift
	local calls="" c
	for c in "$@"; do
		calls="$calls${calls:+,}{\"name\": \"task\", \"input\": {\"prompt\": \"do $c\", \"description\": \"$c\", \"model\": \"replay:$c.json\"}}"
	done
	printf '{"turns": [{"tools": [%s]}, {"text": "parent finished"}]}\n' "$calls" >"$R/$n.json"
}
ws() { WS=$T_TMP/ws-$1; rm -rf "$WS"; mkdir -p "$WS"; echo base >"$WS/shared.txt"; }
run() { # run PARENT [flags] -> OUT (the result line), RC, MS
	local p=$1; shift
	local t0; t0=$(now_ms)
	"$WARD" run --json --model "replay:$R/$p.json" --workspace "$WS" "$@" "go" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
	RC=$?
	MS=$(( $(now_ms) - t0 ))
	OUT=$(tail -1 "$T_TMP/out")
}
mine() { # mine TYPE: the parent's own lines of that type (its children's come through too)
	grep "^{\"type\":\"$1\"" "$T_TMP/out" | grep '"agent":"main","parent":null}$'
}
changed() { # the result's changed files, one line each
	python3 -c 'import json,sys; print("\n".join(f["path"] for f in json.loads(sys.argv[1])["changed_files"]))' "$OUT"
}
boxes() { # the boxes on $WS now (a child's box has its parent's workspace; other people's boxes are on theirs)
	"$WARD" box ls 2>/dev/null | awk -v ws="$WS" 'NR > 1 && $NF == ws { print $1 }' | sort
}
overlap() { # overlap: the largest number of children running at one moment, from the result's agents
	python3 -c '
import json, sys
ag = json.loads(sys.argv[1])["agents"]
ev = sorted([(a["started_ms"], 1) for a in ag] + [(a["ended_ms"], -1) for a in ag], key=lambda e: (e[0], e[1]))
n = m = 0
for _, d in ev:
    n += d; m = max(m, n)
print(m)' "$OUT"
}

# Three children in one round: each writes its own file after 1.5 s.
for i in 1 2 3 4; do child "c$i" "sleep 2.5; echo child$i >/workspace/f$i.txt"; done
parent three c1 c2 c3
ws three
run three
is "$RC" 0 "three children: the parent finishes (exit 0)"
is "$(overlap)" 3 "the three run at the same time (all three overlap)"
like "$OUT" '"changed_files":\[\{"path":"f1.txt","change":"added"\},\{"path":"f2.txt","change":"added"\},\{"path":"f3.txt","change":"added"\}' \
	"each child's file is in the parent's workspace afterwards"
MS3=$MS
like "$(mine tool_result | head -1)" 'Files it changed, merged into your workspace' "a child's result says what was merged"
like "$(mine tool_result | head -1)" 'c[123] finished' "and carries its final answer"
like "$(cat "$XDG_STATE_HOME"/ward/sessions/"$(json session <<<"$OUT")".jsonl)" '"type":"merge"' "the journal records each merge"
is "$(boxes)" "" "no child's box is left (none works on the workspace)"
# --json: every line says whose it is; the children's lines come through.
is "$(python3 -c '
import json, sys
seen = set()
for l in open(sys.argv[1]):
    j = json.loads(l)
    seen.add((j["agent"], j["parent"]))
print(" ".join(sorted("%s<%s" % (a, p) for a, p in seen)))' "$T_TMP/out")" "a1<main a2<main a3<main main<None" \
	"--json: each line carries its agent and parent (main's, and its children a1, a2, a3's)"
like "$(grep '"agent":"a2"' "$T_TMP/out" | grep '"type":"tool_call"')" '"name":"bash"' "a child's own tool call is among them"
like "$(tail -1 "$T_TMP/out")" '^\{"type":"result",.*"agent":"main","parent":null\}$' "the last line is the parent's result"
V=$(validate_events "$T_TMP/out" 2>&1)
like "$V" "^valid [0-9]+" "three children's --json validates against the event schema ($V)"

# A fourth with --max-subagents 3 waits for one of the three.
parent four c1 c2 c3 c4
ws four
run four --max-subagents 3
is "$RC" 0 "four children, --max-subagents 3: exit 0"
is "$(overlap)" 3 "at most three run at once"
like "$OUT" '"path":"f4.txt"' "the fourth ran too, after one of the others"
run four --max-subagents 4
is "$(overlap)" 4 "(twin: with --max-subagents 4 all four run at once)"
parent three c1 c2 c3
ws serial
run three --max-subagents 1
is "$(overlap)" 1 "with --max-subagents 1 they run one after another"
like "$OUT" '"path":"f3.txt"' "and all land too"
[ "$MS3" -lt "$MS" ]; ok $? "three side by side take less time than one after another ($MS3 ms, $MS ms)"

# Two children change the same file: a conflict, neither applied.
child x1 "echo from-x1 >/workspace/shared.txt"
child x2 "echo from-x2 >/workspace/shared.txt; echo only-x2 >/workspace/own.txt"
parent conflict x1 x2
ws conflict
run conflict
is "$RC" 0 "two children change shared.txt: the parent goes on"
R1=$(mine tool_result | head -2)
like "$R1" 'CONFLICT, not merged: shared.txt: another subagent changed it too' "the tool results report the conflict"
like "$R1" "the workspace's version ---.{1,4}base" "with the workspace's version"
like "$R1" "from-x1" "and the first child's"
like "$R1" "from-x2" "and the second's"
is "$(changed)" own.txt "the workspace holds neither child's version (shared.txt is unchanged; only own.txt changed)"
is "$(cat "$WS/shared.txt")" base "and the user's tree is untouched"

# A file in the parent's own layer (as root its image is copied whole, so
# the base is the copy's stats): one child rewrites it with the same bytes
# (a new inode and ctime), another changes it. The rewrite is no change:
# the second child's version is taken, with no conflict; its twin, two
# different changes, is a conflict (above).
child r1 'cp /workspace/p.txt /tmp/p && mv /tmp/p /workspace/p.txt.new && mv /workspace/p.txt.new /workspace/p.txt && stat -c %i /workspace/p.txt'
child r2 "echo from-r2 >/workspace/p.txt"
printf '{"turns": [{"tools": [{"name": "bash", "input": {"command": "echo layer-p >/workspace/p.txt"}}]}, {"tools": [%s, %s]}, {"text": "parent finished"}]}\n' \
	'{"name": "task", "input": {"prompt": "do r1", "description": "r1", "model": "replay:r1.json"}}' \
	'{"name": "task", "input": {"prompt": "do r2", "description": "r2", "model": "replay:r2.json"}}' >"$R/rewrite.json"
ws rewrite
run rewrite
is "$RC" 0 "a child rewrites the parent's file with its own bytes, another changes it: the parent goes on"
unlike "$(mine tool_result)" 'CONFLICT' "no conflict: the same bytes under a new inode are no change"
like "$(mine tool_result)" '"path":"p.txt","change":"modified"' "the other child's change is merged"
is "$(changed)" p.txt "p.txt is the workspace's one change"

# The merge follows no symlink: the parent's layer has d -> a host
# directory; a child replaces d with a directory holding x. Its x is not
# written through the link (a conflict saying so), and d itself goes.
mkdir -p "$T_TMP/outside"
child esc "rm /workspace/d && mkdir /workspace/d && echo escaped >/workspace/d/x"
cat >"$R/linkp.json" <<J
{"turns": [{"tools": [{"name": "bash", "input": {"command": "ln -s $T_TMP/outside /workspace/d"}}]},
 {"tools": [{"name": "task", "input": {"prompt": "do esc", "model": "replay:esc.json"}}]}, {"text": "ok"}]}
J
ws link
run linkp
is "$RC" 0 "a child under a parent's symlink: exit 0"
[ ! -e "$T_TMP/outside/x" ]; ok $? "the merge did not write through the parent's symlink (nothing in the host directory)"
like "$(mine tool_result | tail -1)" 'CONFLICT, not merged: d/x: it could not be written' "the file is a conflict that says why"

# Read-only: the child shares the parent's box and may not change it.
cat >"$R/ro.json" <<'J'
{"turns": [{"tools": [{"name": "task", "input": {"prompt": "look", "tools": "read-only", "model": "replay:look.json"}}]}, {"text": "ok"}]}
J
cat >"$R/look.json" <<'J'
{"turns": [{"tools": [{"name": "read", "input": {"path": "shared.txt"}}, {"name": "write", "input": {"path": "x.txt", "content": "no"}}]}, {"text": "looked"}]}
J
ws ro
run ro
is "$RC" 0 "a read-only child: exit 0"
unlike "$OUT" '"path":"x.txt"' "its write was refused: nothing changed"
like "$(mine tool_result)" 'read-only: it changed nothing' "its result says it changed nothing"

# The budgets are the task's: --max-calls 4 over the parent (3 task
# calls) and its children (a call each): the children's calls are cut.
parent budget c1 c2 c3
ws budget
run budget --max-calls 4
like "$OUT" '"stop":"call_cap"' "--max-calls over parent and children: the parent stops at the cap"
N=$(python3 -c 'import json,sys; print(sum(a.get("calls",0) for a in json.loads(sys.argv[1])["agents"]))' "$OUT")
[ "$N" -le 1 ]; ok $? "the children made at most the one call left of the task's four ($N)"
like "$(mine tool_result)" "call cap" "a child stopped by the task's cap says so"

# Depth: a child may start its own (a1.a1), whose task tool is gone.
for d in 1 2 3; do
	cat >"$R/d$d.json" <<J
{"turns": [{"tools": [{"name": "task", "input": {"prompt": "deeper", "model": "replay:d$((d + 1)).json"}}]}, {"text": "d$d done"}]}
J
done
parent deep d1
ws deep
run deep
is "$RC" 0 "a child that starts a child: exit 0"
like "$(grep '"agent":"a1.a1"' "$T_TMP/out" | grep '"type":"tool_result"')" 'no tool named \\"task\\"' \
	"the grandchild (a1.a1) has no task tool: the depth limit"
like "$(grep '"agent":"a1"' "$T_TMP/out" | grep '"type":"tool_result"')" 'subagent a1.a1' "(twin: the child a1 started a1.a1)"

# A child's own share: deadline_s bounds its time (its calls cut at its
# deadline, while a sibling without one finishes); a child that hangs
# (stopped, so its own deadline cannot fire) is killed by the parent at
# its share and the grace; max_calls caps its own calls while a sibling
# makes all of its.
cat >"$R/share.json" <<J
{"turns": [{"tools": [{"name": "task", "input": {"prompt": "s1", "description": "short", "deadline_s": 2, "model": "replay:s1.json"}},
   {"name": "task", "input": {"prompt": "s2", "description": "free", "model": "replay:s2.json"}}]}, {"text": "ok"}]}
J
child s1 "sleep 30.$$1"
child s2 "sleep 3; echo s2 >/workspace/s2.txt"
ws share
run share
STOPS=$(python3 -c 'import json,sys; print(" ".join("%s:%s" % (a["description"], a["stop"]) for a in json.loads(sys.argv[1])["agents"]))' "$OUT")
is "$STOPS" "short:deadline free:done" "deadline_s 2: that child stops at its own deadline; its sibling without a share is done"
[ "$MS" -lt 12000 ]; ok $? "the parent is not held by the child's 30 s call ($MS ms)"
like "$OUT" '"path":"s2.txt"' "(twin: the sibling's work is merged)"
is "$(pgrep -fc "^sleep 30\.$$1\$")" 0 "the cut child's command is gone"

cat >"$R/hang.json" <<J
{"turns": [{"tools": [{"name": "task", "input": {"prompt": "h1", "description": "hangs", "deadline_s": 2, "model": "replay:h1.json"}}]}, {"text": "ok"}]}
J
child h1 "sleep 31.$$1"
ws hang
t0=$(now_ms)
"$WARD" run --json --model "replay:$R/hang.json" --workspace "$WS" go >"$T_TMP/out" 2>"$T_TMP/err" </dev/null &
P=$!
for _ in $(seq 100); do [ "$(pgrep -fc "^sleep 31\.$$1\$")" -ge 1 ] && break; sleep 0.1; done
C=$(pgrep -P $P -f -- "--agent-id a1")
[ -n "$C" ] && kill -STOP $C; ok $? "the child ward is stopped (it hangs: its own deadline cannot fire)"
wait $P
MS=$(( $(now_ms) - t0 ))
OUT=$(tail -1 "$T_TMP/out")
[ "$MS" -ge 6000 ] && [ "$MS" -lt 15000 ]; ok $? "the parent kills it at its 2 s share and the 5 s grace ($MS ms)"
like "$(mine tool_result)" 'it ran past its share of time \(2 s\) and was killed' "the parent's tool result says so"
is "$(pgrep -fc "^sleep 31\.$$1\$") $(boxes | wc -l)" "0 0" "its command and its box are gone"

cat >"$R/calls.json" <<J
{"turns": [{"tools": [{"name": "task", "input": {"prompt": "m1", "description": "capped", "max_calls": 1, "model": "replay:m3.json"}},
   {"name": "task", "input": {"prompt": "m2", "description": "uncapped", "model": "replay:m3.json"}}]}, {"text": "ok"}]}
J
cat >"$R/m3.json" <<'J'
{"turns": [{"tools": [{"name": "bash", "input": {"command": "echo 1"}}]}, {"tools": [{"name": "bash", "input": {"command": "echo 2"}}]},
 {"tools": [{"name": "bash", "input": {"command": "echo 3"}}]}, {"text": "three calls"}]}
J
ws calls
run calls
is "$(python3 -c 'import json,sys; print(" ".join("%s:%s:%d" % (a["description"], a["stop"], a["calls"]) for a in json.loads(sys.argv[1])["agents"]))' "$OUT")" \
	"capped:call_cap:1 uncapped:done:3" "max_calls 1: that child makes one call and stops at its share; its sibling makes its three"
like "$(grep '"agent":"a1"' "$T_TMP/out" | grep '"type":"result"')" "its own share of the task's tool calls \(1\) was used" "the child says its own share stopped it"
cat >"$R/badshare.json" <<'J'
{"turns": [{"tools": [{"name": "task", "input": {"prompt": "x", "max_cost": "lots", "model": "replay:s2.json"}}]}, {"text": "ok"}]}
J
ws badshare
run badshare
like "$(mine tool_result)" 'max_cost: \\"lots\\" is not an amount in USD' "a max_cost that is not an amount: bad input, said"

# A bad model name: a host file is never read as a script.
cat >"$R/bad.json" <<'J'
{"turns": [{"tools": [{"name": "task", "input": {"prompt": "x", "model": "replay:../x.json"}}]}, {"text": "ok"}]}
J
ws bad
run bad
like "$(mine tool_result)" 'replay:NAME is only for a replayed run, NAME a script beside its own' \
	"a child's replay script must lie beside the parent's (bad_input)"

# Cancel: SIGINT (Esc's interrupt) during three running children: every
# child, its processes and its box gone within the bound; the canary
# (a child's process that would write a file after 6 s) never fires.
for i in 1 2 3; do child "k$i" "sleep 6.$$$i && touch /workspace/canary$i; sleep 100"; done
parent cancel k1 k2 k3
ws cancel
"$WARD" run --json --model "replay:$R/cancel.json" --workspace "$WS" go >"$T_TMP/out" 2>"$T_TMP/err" </dev/null &
P=$!
for _ in $(seq 100); do [ "$(pgrep -fc "^sleep 6\.$$[123]\$")" -ge 3 ] && break; sleep 0.1; done
is "$(pgrep -fc "^sleep 6\.$$[123]\$")" 3 "three children's commands run"
is "$(boxes | wc -l)" 4 "(twin: while they run, the parent's box and three children's work on the workspace)"
t0=$(now_ms)
kill -INT $P
wait $P
MS=$(( $(now_ms) - t0 ))
[ "$MS" -lt 10000 ]; ok $? "the parent ends within 10 s of the interrupt ($MS ms)"
is "$(pgrep -fc "^sleep 6\.$$[123]\$")" 0 "no child's process is left"
is "$(pgrep -fc -- "--agent-depth 1")" 0 "no child ward is left"
is "$(boxes)" "" "no child's box is left (none works on the workspace)"
sleep 6.5	# time: past the children's 6 s sleeps, after which their canaries would be written
is "$(ls "$WS"/canary* 2>/dev/null | wc -l)$(find "$XDG_STATE_HOME" -name 'canary*' 2>/dev/null | wc -l)" 00 "the canaries never fire"

# --max-cost over parent and three children, with the stand-in server's
# usage ($0.0033 a reply): the total is never passed, and the children,
# which would go on forever, are stopped mid-run.
export ANTHROPIC_API_KEY=sk-ant-fake-key
serve agents
ws cost
# As a fleet's task: its result.json, and ward report over it.
printf '{"id": "t1", "task": "go", "workspace": "%s"}\n' "$WS" >"$T_TMP/tasks.jsonl"
"$WARD" run --provider anthropic --base-url "$URL" --model claude-sonnet-4-fake --max-cost 0.02 \
	--task-file "$T_TMP/tasks.jsonl" --task-index 0 --out "$T_TMP/fleet" >/dev/null 2>"$T_TMP/err" </dev/null
OUT=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])), separators=(",", ":")))' "$T_TMP/fleet/t1/result.json")
cp "$T_TMP/fleet/t1/events.jsonl" "$T_TMP/out"
TOTAL=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(round(r["cost_usd"] + sum(a.get("cost_usd") or 0 for a in r["agents"]), 6))' "$OUT")
python3 -c 'import sys; sys.exit(not 0 < float(sys.argv[1]) <= 0.02)' "$TOTAL"; ok $? "the task's total cost (parent and children) is within --max-cost 0.02 (\$$TOTAL)"
N=$(nreq)
[ "$N" -le 6 ] && [ "$N" -ge 4 ]; ok $? "the server answered at most the six replies \$0.02 pays for ($N)"
STOPS=$(python3 -c 'import json,sys; print(" ".join(sorted(a["stop"] for a in json.loads(sys.argv[1])["agents"])))' "$OUT")
is "$STOPS" "cost_budget cost_budget cost_budget" "each child is stopped by the task's budget"
C=$(python3 -c 'import json,sys; print(sum(1 for a in json.loads(sys.argv[1])["agents"] if a.get("calls", 0) >= 1))' "$OUT")
[ "$C" -ge 1 ]; ok $? "mid-run: a child had made calls when it was stopped ($C)"
like "$(json stop <<<"$OUT")" '^(cost_budget|done)$' "the parent stops at the budget too, or is done"
REP=$("$WARD" report --json "$T_TMP/fleet" 2>&1)
is "$(python3 -c 'import json,sys; t=json.loads(sys.argv[1])["tasks"][0]; print(round(t["cost_usd"], 6), len(t["agents"]), " ".join(a["id"] for a in t["agents"]))' "$REP")" \
	"$TOTAL 3 a1 a2 a3" "ward report: the task's cost is the parent's and its children's, broken down per child"
kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null

# A child's own share of cost or tokens is a bound as the task's total is:
# no request is made that a reply as large as the task's largest so far
# would carry past it ($0.0033 and 1020 tokens a reply: two replies fit
# $0.007 and 2500 tokens, a third would pass them).
serve agents-share
ws shares
"$WARD" run --json --provider anthropic --base-url "$URL" --model claude-sonnet-4-fake --max-cost 1 \
	--workspace "$WS" go >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
RC=$?
OUT=$(tail -1 "$T_TMP/out")
is "$RC" 0 "shares: the parent finishes (exit 0)"
is "$(python3 -c 'import json,sys; print(" ".join(sorted("%s:%s:%d" % (a["description"], a["stop"], a["calls"]) for a in json.loads(sys.argv[1])["agents"])))' "$OUT")" \
	"cost:cost_budget:2 tokens:token_budget:2" "each child stops at its own share after the two replies it pays for, not after a third"
COSTLY=$(python3 -c 'import json,sys; print(" ".join("%s %s" % (a["id"], a["cost_usd"]) for a in json.loads(sys.argv[1])["agents"] if a["description"] == "cost"))' "$OUT")
python3 -c 'import sys; sys.exit(not 0 < float(sys.argv[1]) <= 0.007)' "${COSTLY#* }"
ok $? "the costly child's spend is within its max_cost 0.007 (${COSTLY#* })"
like "$(grep "\"agent\":\"${COSTLY% *}\"" "$T_TMP/out" | grep '"type":"result"')" 'its own share of the task.s cost \(\$0\.0070\) would be passed by another request' \
	"the child says its own share would be passed"
like "$(grep '"type":"result"' "$T_TMP/out" | grep -v "\"agent\":\"${COSTLY% *}\"")" 'its own share of the task.s tokens \(2500\) would be passed by another request' \
	"and the other its share of tokens"
like "$(json stop <<<"$OUT")" '^done$' "(twin: the parent, with no share and \$1 to spend, is done)"
kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null

# SIGTERM of the parent (a CI runner's stop): the same, at once.
for i in 1 2 3; do child "k$i" "sleep 7.$$$i && touch /workspace/canary$i; sleep 100"; done
ws term
"$WARD" run --json --model "replay:$R/cancel.json" --workspace "$WS" go >"$T_TMP/out-term" 2>"$T_TMP/err" </dev/null &
P=$!
for _ in $(seq 100); do [ "$(pgrep -fc "^sleep 7\.$$[123]\$")" -ge 3 ] && break; sleep 0.1; done
is "$(pgrep -fc "^sleep 7\.$$[123]\$")" 3 "SIGTERM: three children's commands run"
t0=$(now_ms)
kill -TERM $P
wait $P
MS=$(( $(now_ms) - t0 ))
[ "$MS" -lt 10000 ]; ok $? "SIGTERM: the parent ends within 10 s ($MS ms)"
is "$(pgrep -fc "^sleep 7\.$$[123]\$") $(boxes | wc -l)" "0 0" "SIGTERM: no child's process or box is left"

# The journal and ward sessions nest the children under their parent; a
# parent killed while a child ran (SIGKILL: no stop of its own) leaves no
# child behind, and its --resume tells the model which children's outcome
# is unknown, their ids and descriptions, with no tool_use left dangling.
export XDG_STATE_HOME=$T_TMP/state-nest
JD=$XDG_STATE_HOME/ward/sessions
child n1 "echo quick >/workspace/n1.txt"
child n2 "sleep 9.$$ && touch /workspace/canary-n2; sleep 100"
cat >"$R/nest.json" <<J
{"turns": [{"tools": [{"name": "task", "input": {"prompt": "do n1", "description": "the quick part", "model": "replay:n1.json"}},
   {"name": "task", "input": {"prompt": "do n2", "description": "the slow part", "model": "replay:n2.json"}}]},
 {"expect": "go on", "text": "told of the cut"}]}
J
ws nest
"$WARD" run --json --model "replay:$R/nest.json" --workspace "$WS" go >"$T_TMP/out-nest" 2>"$T_TMP/err" </dev/null &
P=$!
PJ=""
for _ in $(seq 150); do
	PJ=$(grep -l '"type":"agent_end"' "$JD"/*.jsonl 2>/dev/null | head -1)
	[ -n "$PJ" ] && [ "$(pgrep -fc "^sleep 9\.$$\$")" -ge 1 ] && break
	sleep 0.1
done
PS=$(basename "$PJ" .jsonl)
[ -n "$PS" ]; ok $? "the parent's journal records a child's end while another runs ($PS)"
is "$(pgrep -fc "^sleep 9\.$$\$")" 1 "(the slow child's command runs)"
kill -KILL $P
wait $P 2>/dev/null
t0=$(now_ms)
for _ in $(seq 100); do [ "$(pgrep -fc "^sleep 9\.$$\$")$(pgrep -fc -- "--agent-session $PS")" = 00 ] && break; sleep 0.1; done
MS=$(( $(now_ms) - t0 ))
is "$(pgrep -fc "^sleep 9\.$$\$") $(pgrep -fc -- "--agent-session $PS")" "0 0" \
	"the parent killed (SIGKILL): its children's wards and commands are gone too ($MS ms)"
J=$(cat "$PJ")
like "$J" '"type":"agent_start","call_id":"[^"]+","agent":"a1","description":"the quick part"' "the journal records each child's start (a1, its description)"
like "$J" '"type":"agent_start","call_id":"[^"]+","agent":"a2","description":"the slow part"' "and a2's"
like "$J" '"type":"agent_end","call_id":"[^"]+","agent":"a1","session":"[0-9a-f-]+","stop":"done"' "and a1's end: its session and how it stopped"
unlike "$J" '"type":"agent_end","call_id":"[^"]+","agent":"a2"' "(a2 never ended)"
S1=$(grep -o '"type":"agent_end","call_id":"[^"]*","agent":"a1","session":"[0-9a-f-]*"' "$PJ" | sed 's/.*"session":"//; s/"$//')
"$WARD" sessions >"$T_TMP/sessions" 2>&1
SL=$(python3 - "$T_TMP/sessions" "$PS" "$S1" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
i = [r[0] for r in rows].index(sys.argv[2])
kids = rows[i + 1:i + 3]
print("nested" if [k[:2] for k in kids] == [["└", "a1"], ["└", "a2"]] and kids[0][2] == sys.argv[3] else "rows: %r" % rows)
PY
)
is "$SL" nested "ward sessions: the children's sessions listed under the parent's (└ a1, └ a2), a1's its own"
is "$("$WARD" sessions | grep -c '^[0-9]')" 1 "(twin: the parent's is the one session at the top level)"
is "$("$WARD" sessions --json | python3 -c 'import json,sys; print(" ".join(sorted("%s<%s" % (s["agent"], s["parent_session"] == sys.argv[1]) for s in json.load(sys.stdin) if "agent" in s)))' "$PS")" \
	"a1<True a2<True" "ward sessions --json: each child says its agent and its parent's session"
"$WARD" run --json --resume "$PS" --model "replay:$R/nest.json" --workspace "$WS" "go on" >"$T_TMP/out-resume" 2>"$T_TMP/err" </dev/null
is "$?" 0 "--resume of the parent: exit 0"
# The conversation the model is sent, as the journal has it.
T=$(python3 -c '
import json, sys
msgs = [json.loads(l) for l in open(sys.argv[1]) if "\"type\":\"message\"" in l]
use = [b["id"] for m in msgs if m["role"] == "assistant" for b in m["content"] if b.get("type") == "tool_use"]
res = {b["tool_use_id"]: b for m in msgs if m["role"] == "user" for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"}
print("dangling" if set(use) - set(res) else "\n".join(str(res[u]["content"]) for u in use))' "$JD/$PS.jsonl")
like "$T" 'outcome unknown: subagent a2 \(the slow part\) was cut off while it ran' "the model is told a2's outcome is unknown (its id and description)"
like "$T" 'subagent a1 \(the quick part\) had ended \(done\).*not in your workspace' "and that a1 had ended but was never merged"
unlike "$T" dangling "no tool_use is left without its tool_result"
unlike "$(tail -1 "$T_TMP/out-resume")" '"path":"n1.txt"' "a1's file was not merged (it is not among the changes)"
[ ! -e "$WS/canary-n2" ] && [ -z "$(find "$XDG_STATE_HOME" -name canary-n2 2>/dev/null)" ]; ok $? "the slow child's canary never fired"

V=$(validate_events "$T_TMP/out" 2>&1)
like "$V" "^valid [0-9]+" "--json with subagents validates against the event schema ($V)"
done_testing
