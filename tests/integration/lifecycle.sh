#!/bin/bash
# Cancel, the keeper's lifetime rules, and the host's own deadline.
. "$(dirname "$0")/lib.sh"
WS=$T_TMP/ws
mkdir -p "$WS"
B=$(box_new --workspace "$WS" --rw)
cancel_after() { # cancel_after SLEEP BOX CMD: Ctrl-C to `ward box exec` once CMD runs its `sleep SLEEP`; sets RC, MS (from the Ctrl-C), OUT
	local gp; gp=$("$WARD" box info "$2" | json guest_pid)
	"$WARD" box exec "$2" -- "$3" >"$T_TMP/cancel.out" 2>&1 &
	local p=$!
	wait_until 10 descends "^sleep $1\$" "$gp" || echo "# cancel_after: no sleep $1 in $2 within 10 s"
	local t0; t0=$(now_ms)
	kill -INT $p
	wait $p
	RC=$?
	MS=$(( $(now_ms) - t0 ))
	OUT=$(cat "$T_TMP/cancel.out")
}

# Cancel a bash call after 300 ms: gone in under 1 s, the box still answers.
cancel_after 100 "$B" 'trap "" TERM; (setsid bash -c "trap \"\" TERM; sleep 3; touch /workspace/canary-cancel" &); sleep 100'
is "$RC" 130 "cancelled exec exits 130"
# The cancel grace is 2 s for processes that trap TERM; the call as a whole
# is gone within grace + 1 s.
lt "$MS" 3000 "cancel (TERM trapped: grace 2 s, then killed)"
like "$OUT" "cancelled after" "the result says cancelled"
like "$("$WARD" box exec "$B" -- echo alive)" "alive" "the box answers after the cancel"

# A box's own grace is every call's: with --grace 10s a command that traps
# SIGTERM is killed at 10 s, the call is cancelled (not timed out), and the
# box lives. No layer gives up before the guest has used the grace.
GB=$(box_new --grace 10s)
cancel_after 60 "$GB" 'trap "" TERM; sleep 60'
is "$RC" 130 "grace 10s: the cancelled call exits 130"
lt "$MS" 11000 "within the grace + 1 s"
lt 9500 "$MS" "and not before the grace: the guest held SIGKILL back for 10 s"
like "$OUT" "cancelled after 1[0-9]" "the result says cancelled, after the grace"
unlike "$OUT" "timed out|did not answer|destroyed" "not a time-out, and the box was not destroyed"
like "$("$WARD" box exec "$GB" -- 'echo alive')" "alive" "the same box answers after it"
cancel_after 60 "$GB" 'sleep 60'
lt "$MS" 1000 "twin: a command that does not trap SIGTERM ends at once, grace or not"

# A stopped keeper does not hang the commands that ask every box: ls waits
# at most its connect bound for it, and prints what it cannot know as "-".
SK=$(cat "${XDG_RUNTIME_DIR:-/run}"/ward/boxes/"$GB"/keeper.pid)
kill -STOP "$SK"
t0=$(now_ms)
LS=$(timeout 20 "$WARD" box ls)
MS=$(( $(now_ms) - t0 ))
kill -CONT "$SK"
lt "$MS" 3500 "box ls with a stopped keeper returns (bounded by the 2 s connect)"
like "$(printf '%s\n' "$LS" | grep "^$GB ")" "^$GB +\? +- +- +- +- " "and shows that box's unknowns as -"
unlike "$LS" "nan|-2147483648" "never a NaN or a garbage number"
like "$(printf '%s\n' "$LS" | grep "^$B ")" "running" "twin: the other boxes are listed in full"

# A keeper that does not answer (stopped here; blocked in a long hibernate
# alike) is killed by destroy, and destroy removes what it left at once
# (its runtime dir, its cgroup), not at the next ward's start.
DB=$(box_new)
RTD="${XDG_RUNTIME_DIR:-/run}"/ward/boxes/$DB
DK=$(cat "$RTD/keeper.pid")
DG=$(pgrep -P "$DK" | tr '\n' ' ')
DCG=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j.get("cgroup_v2") or j.get("cgroup_pids") or "")' "$RTD/info.json")
kill -STOP "$DK"
t0=$(now_ms)
"$WARD" box destroy "$DB"; RC=$?
MS=$(( $(now_ms) - t0 ))
is "$RC" 0 "destroy of a box whose keeper is stopped: exit 0"
lt "$MS" 12000 "bounded: a keeper that does not answer is killed, not waited for (ms)"
gone "$DK"; ok $? "the keeper is gone"
like "$DG" '[0-9]' "the keeper runs the box's processes ($DG)"
LEFT=""; for p in $DG; do gone "$p" || LEFT="$LEFT $p"; done
is "$LEFT" "" "and every one of them is gone"
ok "$([ ! -e "$RTD" ]; echo $?)" "its runtime dir is removed by the destroy itself"
if [ -n "$DCG" ]; then ok "$([ ! -d "$DCG" ]; echo $?)" "and its cgroup"; else echo "ok $((T_N += 1)) # SKIP no cgroup for the box here"; fi

cancel_after 100 "$B" 'sleep 100'
lt "$MS" 1000 "cancel of a running plain sleep is done in under 1 s"
n=$("$WARD" box exec "$B" -- 'ls /proc | grep -c "^[0-9]"')
lt "${n:-99}" 6 "no process of the cancelled call is left ($n in the box, counting this one)"

# grep over a large tree, cancelled mid-walk.
python3 - "$WS/big" <<'PY'
import os, sys
root = sys.argv[1]
for d in range(300):
    p = os.path.join(root, "d%03d" % d); os.makedirs(p)
    for f in range(100):
        with open(os.path.join(p, "f%03d.txt" % f), "w") as fh:
            fh.write(("line %d needle-not-here\n" % f) * 200)
PY
t0=$(now_ms)
# No start optimisation and three greedy runs: slow per file (about 0.4 ms),
# so 30,000 files take seconds: long enough to cancel mid-walk.
timeout -s INT 0.4 "$WARD" box tool "$B" grep '{"pattern":"(*NO_START_OPT)[a-z-]+[a-z-]+[a-z-]+\\\\d{9}","path":"big","mode":"count"}' >"$T_TMP/g.out" 2>&1
rc=$?
MS=$(( $(now_ms) - t0 ))
like "$(cat "$T_TMP/g.out")" '"outcome":.*"cancelled"' "grep over 30,000 files: cancelled"
lt "$MS" 1500 "grep stops within 1.1 s of the cancel"
# A busy in-process call does not hold up the next one: a read answers
# while the slow grep still runs on another worker.
"$WARD" box tool "$B" grep '{"pattern":"(*NO_START_OPT)[a-z-]+[a-z-]+[a-z-]+\\\\d{9}","path":"big","mode":"count"}' >/dev/null 2>&1 &
GP=$!
wait_until 10 box_calls "$B" 1
t0=$(now_ms)
R=$("$WARD" box tool "$B" read '{"path":"big/d000/f000.txt","limit":1}' 2>&1)
MS=$(( $(now_ms) - t0 ))
like "$R" "line 0 needle-not-here" "a read while a long grep runs: answered"
lt "$MS" 1000 "without waiting for the grep"
kill -INT $GP 2>/dev/null; wait $GP 2>/dev/null
full=$("$WARD" box tool "$B" grep '{"pattern":"needle-not-here","path":"big","mode":"count","limit":5}')
like "$full" '"outcome":.*"ok"' "positive twin: the same tree greps to the end without a cancel"

# The first cancel's setsid child (the shell that would touch its canary) is gone.
BGP=$("$WARD" box info "$B" | json guest_pid)
wait_until 5 eval '! descends canary-cancel "$BGP"'; ok $? "no survivor of a cancelled call runs"
is "$(ls "$WS" | grep -c canary)" 0 "no survivor of a cancelled call wrote a canary"

# kill -9 of ward while a box runs a loop: the keeper destroys the box.
# The canary waits for a go the test gives only once the box is gone, so
# it proves a survivor whatever the machine's load (a timed canary fired
# early when the box was slow to be found).
CANARY='(touch /workspace/ready-kill9; while [ ! -e /workspace/go-kill9 ]; do sleep 0.05; done; touch /workspace/canary-kill9) & while :; do :; done'
"$WARD" box run --workspace "$WS" --rw -- "$CANARY" >/dev/null 2>&1 &
P=$!
for i in $(seq 1 100); do
	# This test's own workspace: other boxes of the machine's may end in /ws.
	name=$("$WARD" box ls --json | python3 -c 'import json,sys; b=[x["name"] for x in json.load(sys.stdin) if x.get("workspace","") == sys.argv[1] and x.get("persistent") is False]; print(b[0] if b else "")' "$WS" 2>/dev/null)
	[ -n "$name" ] && [ -e "$WS/ready-kill9" ] && break
	sleep 0.1
done
ok $([ -n "$name" ] && echo 0 || echo 1) "the box of ward box run shows up in ward box ls"
ok $([ -e "$WS/ready-kill9" ] && echo 0 || echo 1) "and its call runs (the canary is waiting)"
KPID=$("$WARD" box info "$name" | json keeper_pid)
GPID=$("$WARD" box info "$name" | json guest_pid)
kill -9 $P
t0=$(now_ms)
while kill -0 "$GPID" 2>/dev/null && [ $(( $(now_ms) - t0 )) -lt 3000 ]; do sleep 0.02; done
MS=$(( $(now_ms) - t0 ))
lt "$MS" 1000 "the box is destroyed after ward is SIGKILLed"
# The keeper removes the box's layers (its root's) after the guest is gone.
t0=$(now_ms)
while ! gone "$KPID" && [ $(( $(now_ms) - t0 )) -lt 2000 ]; do sleep 0.02; done
check "its keeper is gone" bash -c "! kill -0 $KPID 2>/dev/null || grep -q Z /proc/$KPID/stat"
touch "$WS/go-kill9"
sleep 1.5	# time: a survivor polls for the go every 50 ms
is "$(ls "$WS" | grep -c canary-kill9)" 0 "nothing in the box survived (canary)"
# Twin: the same canary in a box that lives does see the go and writes.
rm -f "$WS/go-kill9" "$WS/ready-kill9"
TB=$("$WARD" box create --workspace "$WS" --rw)
"$WARD" box exec "$TB" --timeout 20s -- "${CANARY%% & while*}; sleep 5" >/dev/null 2>&1 &
TP=$!
wait_until 10 test -e "$WS/ready-kill9"
touch "$WS/go-kill9"
wait_until 5 test -e "$WS/canary-kill9"
is "$(ls "$WS" | grep -c canary-kill9)" 1 "twin: in a box that lives, the same canary sees the go and writes"
kill $TP 2>/dev/null; wait $TP 2>/dev/null
"$WARD" box destroy "$TB" >/dev/null 2>&1
rm -f "$WS/go-kill9" "$WS/ready-kill9" "$WS/canary-kill9"

# TTL: a box with a 3 s TTL is gone by 5 s; its twin with 60 s lives on.
T3=$("$WARD" box create --persistent --ttl 3s)
T60=$("$WARD" box create --persistent --ttl 60s)
T_BOXES="$T_BOXES $T60"
wait_until 5 eval '! "$WARD" box info "$T3" >/dev/null 2>&1'
check "a box with a 3 s TTL is gone by 5 s" bash -c "! '$WARD' box info $T3"
check "positive twin: a box with a 60 s TTL still answers" "$WARD" box exec "$T60" -- true

# A box that dies with the process that made it.
sh -c "'$WARD' box create --ttl 60s > $T_TMP/owned; sleep 0.5"
O=$(cat "$T_TMP/owned")
wait_until 5 eval '! "$WARD" box info "$O" >/dev/null 2>&1'
check "a non-persistent box dies with the process that created it" bash -c "! '$WARD' box info $O"

# The host's deadline: a guest that stops answering is destroyed.
GPID=$("$WARD" box info "$B" | json guest_pid)
t0=$(now_ms)
( wait_until 10 descends '^sleep 30$' "$GPID"; kill -STOP "$GPID" ) &
OUT=$("$WARD" box exec "$B" --timeout 1s -- 'sleep 30' 2>&1); rc=$?
MS=$(( $(now_ms) - t0 ))
is "$rc" 124 "a stopped guest: the call times out"
lt "$MS" 6000 "the keeper destroys the box at limit + grace + margin"
like "$OUT" "box was destroyed|did not stop the call" "the result says the box was destroyed"
like "$("$WARD" box exec "$B" -- echo reborn)" "reborn" "a new box answers the next call"
"$WARD" box exec "$B" -- 'echo kept > /workspace/kept.txt' >/dev/null
check "files under /workspace survive" test -e "$WS/kept.txt"

# Bad input: one clear line and a distinct exit code.
out=$("$WARD" box exec no-such-box -- true 2>&1); rc=$?
is "$rc" 69 "unknown box: exit 69"
like "$out" "no box named no-such-box" "unknown box: says so"
out=$("$WARD" box tool "$B" read '{"path":' 2>&1); rc=$?
is "$rc" 64 "malformed JSON: exit 64"
out=$("$WARD" box create --workspace /nonexistent/dir 2>&1); rc=$?
is "$rc" 66 "missing workspace: exit 66"
like "$out" "does not exist" "missing workspace: says so"
out=$("$WARD" box tool "$B" read '{"path":"x","bogus":1}' 2>&1); rc=$?
is "$rc" 65 "unknown field: exit 65"
like "$out" 'unknown field \\"bogus\\"' "unknown field: names the field"
out=$("$WARD" box tool "$B" bash '{"command":"true","timeout":"5"}' 2>&1); rc=$?
like "$out" 'timeout.*must be an integer' "mistyped field: says which and why"

# Every command's --help is help (exit 0, nothing done); an unknown flag is
# one line that points to --help (exit 64), never the whole usage.
for c in "run" "chat" "sessions" "diff" "apply" "box" "box create" "box run" "box exec" "box ls" "box info" \
	"box tool" "box destroy" "box reap" "image" "image pull" "image import" "image ls" "image rm" "image prune" \
	"vm-image" "doctor" "version"; do
	out=$("$WARD" $c --help 2>&1); rc=$?
	[ "$rc" -eq 0 ] && printf '%s' "$out" | grep -qi "usage\|flags"
	ok $? "ward $c --help: help, exit 0"
done
unlike "$("$WARD" box reap --help)" "reaped" "box reap --help reaps nothing"
for c in "run" "sessions" "diff" "box create" "box ls" "box info" "box reap" "image pull" "image import" "image ls" \
	"image prune" "doctor" "version"; do
	out=$("$WARD" $c --bogus x 2>&1); rc=$?
	[ "$rc" -eq 64 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && printf '%s' "$out" | grep -q -- "--bogus"
	ok $? "ward $c --bogus: one line naming the flag, exit 64 ($rc)"
done
like "$("$WARD" run --deadline 2>&1)" "needs a value" "a flag without its value says so"
# Sizes: the least --memory and --disk is said the same way by every command.
for c in "box create" "run"; do
	out=$("$WARD" $c --disk 1M x 2>&1); rc=$?
	is "$rc" 64 "ward $c --disk 1M: refused (exit 64)"
	like "$out" '^ward: --disk: "1M" is not a size of at least 16M' "ward $c --disk 1M: the least size, said once"
done
like "$("$WARD" box create --memory 15M 2>&1)" '--memory: "15M" is not a size of at least 16M' "--memory 15M: refused with the least size"
SB=$("$WARD" box create --persistent --memory 16M --disk 16M 2>&1)
like "$SB" "^box-[0-9a-f]+$" "twin: --memory 16M --disk 16M, the least sizes, make a box"
"$WARD" box destroy "$SB" >/dev/null 2>&1
# Durations: the common forms, never a bare number.
like "$("$WARD" box run --timeout 1.5s -- 'echo t-ok' 2>&1)" "t-ok" "--timeout 1.5s is a duration"
like "$("$WARD" box run --timeout 1m30s -- 'echo t-ok' 2>&1)" "t-ok" "--timeout 1m30s is a duration"
"$WARD" box run --timeout 10 -- true >/dev/null 2>"$T_TMP/err"; rc=$?
is "$rc" 64 "a bare number is not a duration (exit 64)"
like "$(cat "$T_TMP/err")" "with a unit" "and the line says to give a unit"
# A ceiling that nothing here enforces is said at create, not taken silently.
if ! "$WARD" doctor | grep -q '^ok  *cpu ceiling'; then
	CB=$("$WARD" box create --persistent --cpus 0.5 2>"$T_TMP/err")
	like "$(cat "$T_TMP/err")" "--cpus 0.50 is not enforced" "--cpus where no cpu controller is writable: a warning"
	like "$CB" "^box-[0-9a-f]+$" "and stdout is still just the box's name"
	"$WARD" box destroy "$CB"
	CB=$("$WARD" box create --persistent 2>"$T_TMP/err")
	is "$(cat "$T_TMP/err")" "" "twin: without --cpus, no warning"
	"$WARD" box destroy "$CB"
fi
# box ls: columns as wide as the longest name; ENDS-IN counts the idle timeout.
LB=$("$WARD" box create --persistent --idle 5m --on-idle destroy --name a-long-name-for-the-ls-columns-test)
LS=$("$WARD" box ls)
like "$(printf '%s\n' "$LS" | head -1)" "^NAME {31} STATE" "the NAME column is as wide as the longest name"
like "$(printf '%s\n' "$LS" | grep "^$LB ")" "^$LB +running +ns +[0-9]+s +(4m5[0-9]s|5m0s) " "a box with --idle 5m ends in 300 s, not in its 8 h TTL"
"$WARD" box destroy "$LB"
# A client that stopped reading does not hold a box's teardown: a client
# asks the keeper for its info 20,000 times without reading a reply (its
# socket and the keeper's queue for it fill) and is SIGSTOPped; a destroy
# from another client ends the box within the keeper's drain bound (1 s),
# not at destroy's own 3 s fallback of SIGKILL, and the box's call dies with
# it (a process named so the host can look for it).
FB=$(box_new)
FD="${XDG_RUNTIME_DIR:-/run}"/ward/boxes/$FB
FK=$(cat "$FD/keeper.pid")
"$WARD" box exec "$FB" -- 'touch /tmp/flood-go; exec -a ward-flood-canary-'"$$"' sleep 600' >/dev/null 2>&1 &
FE=$!
wait_until 20 "$WARD" box exec "$FB" -- 'test -e /tmp/flood-go'
ok $? "the box's call started"
pgrep -f "^ward-flood-canary-$$" >/dev/null
ok $? "its process runs on the host, named"
python3 - "$FD/sock" "$T_TMP/flood-sent" <<'PY' &
import os, socket, struct, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
frame = lambda t, p=b"": struct.pack("<IBBHI", len(p), t, 0, 0, 0) + p
s.sendall(frame(1, struct.pack("<II", 0x44524157, 2)))	# HELLO: magic, version
s.sendall(frame(12) * 20000)				# INFO, never read
open(sys.argv[2], "w").close()
time.sleep(600)
PY
FP=$!
wait_until 30 test -e "$T_TMP/flood-sent"
ok $? "the client sent its requests and reads nothing"
kill -STOP "$FP"
t0=$(now_ms)
timeout 30 "$WARD" box destroy "$FB"
rc=$?
MS=$(( $(now_ms) - t0 ))
is "$rc" 0 "destroy with a stopped client succeeds"
wait_until 10 gone "$FK"
ok $? "the keeper is gone although its client never read"
KMS=$(( $(now_ms) - t0 ))
lt "$KMS" 2900 "within the drain bound, before destroy's fallback SIGKILL at 3 s ($KMS ms)"
ok "$([ ! -e "$FD" ]; echo $?)" "the box's runtime directory is gone"
wait_until 5 sh -c "! pgrep -f '^ward-flood-canary-$$' >/dev/null"
ok $? "and the box's call's process is dead"
kill -CONT "$FP"; kill -KILL "$FP" 2>/dev/null; wait "$FP" "$FE" 2>/dev/null
RB=$("$WARD" box create --persistent)
"$WARD" box exec "$RB" -- 'touch /tmp/go; sleep 60' >"$T_TMP/reader.out" 2>&1 &
RP=$!
wait_until 20 "$WARD" box exec "$RB" -- 'test -e /tmp/go'
"$WARD" box destroy "$RB"
wait_until 10 gone "$RP"
ok $? "twin: a reading client's call ends at the destroy"
wait "$RP" 2>/dev/null
like "$(cat "$T_TMP/reader.out")" "destroyed" "and it was told the box was destroyed"
# Many boxes at once: `box ls` asks their keepers side by side and keeps
# the listing whole; `box destroy A B C...` tells every keeper first and
# then waits for all; a name that is no box gets its line and the rest go.
MB=""
for i in 1 2 3 4 5 6; do MB="$MB $("$WARD" box create --persistent --label many=$$)"; done
LS=$("$WARD" box ls --json | python3 -c 'import json,sys; a=json.load(sys.stdin)
print(" ".join(sorted(b["name"] for b in a if b.get("labels", {}).get("many") == sys.argv[1] and b.get("state") == "running")))' "$$")
is "$LS" "$(echo $MB | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')" "box ls: each of 6 boxes listed with its keeper's answer (running, its labels)"
MK=""
for b in $MB; do MK="$MK $("$WARD" box info "$b" | json keeper_pid)"; done
set -- $MB
ERR=$("$WARD" box destroy "$1" "$2" no-such-box-$$ "$3" "$4" "$5" "$6" 2>&1); RC=$?
is "$RC" 69 "box destroy of six boxes and a name that is none: exit 69"
like "$ERR" "no box named no-such-box-$$" "with the one line for the name that is none"
is "$(echo "$ERR" | grep -c .)" 1 "and no other"
left=0
for k in $MK; do gone "$k" || left=$((left + 1)); done
is "$left" 0 "when it returns, each of the six keepers is gone"
left=0
for b in $MB; do [ -e "${XDG_RUNTIME_DIR:-/run}/ward/boxes/$b" ] && left=$((left + 1)); done
is "$left" 0 "and each box's runtime directory"
is "$("$WARD" box ls --json | python3 -c 'import json,sys; print(sum(1 for b in json.load(sys.stdin) if b.get("labels", {}).get("many") == sys.argv[1]))' "$$")" 0 "twin: box ls lists none of them now"
# Boxes made at once, as a fleet makes them: as root each box's layers
# image takes a loop device, and every caller of LOOP_CTL_GET_FREE is
# handed the same free one until one binds it. 24 at once, each made.
AT=$T_TMP/atonce
mkdir -p "$AT"
for i in $(seq 24); do ( "$WARD" box create --persistent --label atonce=$$ >"$AT/name.$i" 2>"$AT/err.$i"; echo $? >"$AT/rc.$i" ) & done
wait
is "$(cat "$AT"/rc.* | grep -cx 0)" 24 "24 boxes made at once: each made ($(cat "$AT"/err.* | head -1))"
is "$(cat "$AT"/name.* | sort -u | grep -c .)" 24 "each a box of its own"
AK=""
for f in "$AT"/name.*; do [ -s "$f" ] && AK="$AK $("$WARD" box info "$(cat "$f")" | json keeper_pid)"; done
"$WARD" box destroy $(cat "$AT"/name.*)
left=0
for k in $AK; do gone "$k" || left=$((left + 1)); done
is "$left" 0 "and destroyed at once, each keeper is gone"
# The turns on loop-control are bounded: a ward stopped while it holds
# them (here a program that holds the lock and never lets go) costs another
# one line after 10 s, not a create that never returns; let go, the next
# create is made.
if [ "$(id -u)" = 0 ] && [ -e /dev/loop-control ]; then
	python3 -c 'import fcntl, sys, time
f = open("/dev/loop-control")
fcntl.flock(f, fcntl.LOCK_EX)
open(sys.argv[1], "w").close()
time.sleep(120)' "$T_TMP/ctl-held" &
	HP=$!
	wait_until 10 test -e "$T_TMP/ctl-held"
	t0=$(now_ms)
	ERR=$("$WARD" box create --persistent --label held=$$ 2>&1); RC=$?
	MS=$(( $(now_ms) - t0 ))
	[ "$RC" -ne 0 ]; ok $? "a create while loop-control is held by another: refused"
	like "$ERR" "loop-control has been locked by another program for over 10 s" "with one line that says why"
	lt "$MS" 14000 "within the bound (10 s and the create's own time)"
	lt 9000 "$MS" "and not before it"
	is "$("$WARD" box ls --json | python3 -c 'import json,sys; print(sum(1 for b in json.load(sys.stdin) if b.get("labels", {}).get("held") == sys.argv[1]))' "$$")" 0 "nothing of it is left"
	kill "$HP"; wait "$HP" 2>/dev/null
	HB=$("$WARD" box create --persistent --label held=$$); RC=$?
	is "$RC" 0 "twin: let go, the next create is made"
	"$WARD" box destroy "$HB"
fi
done_testing
