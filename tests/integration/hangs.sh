#!/bin/bash
# The six hangs, and more, each in a real box with a 2 s limit: each comes
# back in under 4 s as a time-out (or at once), with zero survivors.
. "$(dirname "$0")/lib.sh"

WS=$T_TMP/ws
mkdir -p "$WS"
B=$(box_new --workspace "$WS" --rw --memory 256M --pids 256)
[ -n "$B" ] || { echo "Bail out! cannot create a box"; exit 1; }

ntree() { # ntree PID: how many processes run under PID
	python3 -c 'import os, sys
kids = {}
for d in os.listdir("/proc"):
    try: kids.setdefault(int(open("/proc/%s/stat" % d).read().rsplit(")", 1)[1].split()[1]), []).append(int(d))
    except (ValueError, OSError, IndexError): pass
n, todo = 0, [int(sys.argv[1])]
while todo:
    c = kids.get(todo.pop(), [])
    n += len(c); todo += c
print(n)' "$1"
}
timed() { # timed LIMIT_MS DESC CMD -> sets OUT RC MS
	local t0; t0=$(now_ms)
	OUT=$("$WARD" box exec "$B" --timeout 2s -- "$3" 2>&1); RC=$?
	MS=$(( $(now_ms) - t0 ))
	lt "$MS" "$1" "$2: back in time"
}

# Every survivor would write a canary 3 s later.
CAN='(sleep 3; touch /workspace/canary-$RANDOM) &'

timed 4000 "busy loop" "$CAN while true; do :; done"
is "$RC" 124 "busy loop: time-out exit code"
like "$OUT" "timed out after 2 s" "busy loop: says timed out after 2 s"
like "$OUT" "busy on the CPU" "busy loop: hint says CPU-bound"
like "$OUT" "box is intact" "busy loop: says what became of the box"

timed 1000 "read -r with stdin closed" "read -r x; echo read-exit=\$?"
like "$OUT" "read-exit=1" "read -r ends at once on EOF"
timed 1500 "python input()" "python3 -c 'input()'"
like "$OUT" "EOFError" "python input() ends at once with EOFError"
is "$RC" 1 "python input(): failed, not hung"

timed 4000 "recv on a socket that never answers" "$CAN python3 -c \"
import socket
s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(1)
c=socket.create_connection(s.getsockname()); c.recv(1)\""
is "$RC" 124 "recv: time-out"
like "$OUT" "socket|network" "recv: hint names the socket"

timed 4000 "connect to an unroutable host" "$CAN python3 -c \"
import socket; socket.create_connection(('10.255.255.1', 80))\" ; sleep 100"
is "$RC" 124 "connect: time-out (no network: fails fast, then sleeps)"

timed 4000 "retry loop without backoff" "$CAN while true; do python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 9))' 2>/dev/null || true; done"
is "$RC" 124 "retry loop: time-out"

# Fork bomb: the box's pids ceiling stops it; the host keeps forking.
( "$WARD" box exec "$B" --timeout 2s -- ':(){ :|:& };:; sleep 30' >"$T_TMP/bomb.out" 2>&1; echo $? >"$T_TMP/bomb.rc" ) &
t0=$(now_ms)
# The bomb is forking: the box holds 50 processes.
GP=$("$WARD" box info "$B" | json guest_pid)
wait_until 3 eval '[ "$(ntree "$GP")" -ge 50 ]' || echo "# the fork bomb had $(ntree "$GP") processes"
hostok=0
for i in $(seq 1 50); do /bin/true || hostok=1; done
ok $hostok "host forks 50 times during the fork bomb"
wait
MS=$(( $(now_ms) - t0 ))
lt "$MS" 4000 "fork bomb: back in time"
is "$(cat "$T_TMP/bomb.rc")" 124 "fork bomb: time-out"
like "$(cat "$T_TMP/bomb.out")" "processes when it was stopped" "fork bomb: hint counts the processes"
after=$("$WARD" box exec "$B" -- 'ls /proc | grep -c "^[0-9]"')
lt "${after:-999}" 10 "fork bomb: no process left in the box"

timed 4000 "trap TERM, double fork, setsid" "trap '' TERM; ( setsid bash -c 'trap \"\" TERM HUP; sleep 3; touch /workspace/canary-setsid' & ) ; ( bash -c 'trap \"\" TERM; sleep 3; touch /workspace/canary-dfork' & ) ; sleep 100"
is "$RC" 124 "trap/double-fork/setsid: time-out"

timed 4000 "10**10**8" "python3 -c '10**10**8'"
is "$RC" 124 "10**10**8: time-out"

OUT=$("$WARD" box exec "$B" --timeout 10s -- "python3 -c 'a = bytearray(1024**3); print(\"survived\")'" 2>&1); RC=$?
unlike "$OUT" "survived" "memory balloon: 1 GiB in a 256 MiB box does not survive"
ok $([ "$RC" -ne 0 ] && echo 0 || echo 1) "memory balloon: the command failed ($RC)"
like "$("$WARD" box exec "$B" -- echo alive)" "alive" "the box answers after the balloon"

# Output flood: capped for the model; nobody's memory grows with it.
t0=$(now_ms)
RES=$("$WARD" box tool "$B" bash '{"command":"timeout 10 yes; true","timeout":30}')
MS=$(( $(now_ms) - t0 ))
lt "$MS" 15000 "yes for 10 s: back in time"
len=$(printf '%s' "$RES" | json text | wc -c)
lt "$len" 40000 "yes: the model's text is capped"
bytes=$(printf '%s' "$RES" | json output_bytes | cut -d. -f1)
lt 100000000 "${bytes:-0}" "yes: the total size is counted (over 100 MB)"
like "$RES" "bytes of output cut" "yes: the cut is marked"
GPID=$("$WARD" box info "$B" | json guest_pid)
KPID=$("$WARD" box info "$B" | json keeper_pid)
ghwm=$(awk '/VmHWM/ {print $2}' /proc/"$GPID"/status)
khwm=$(awk '/VmHWM/ {print $2}' /proc/"$KPID"/status)
lt "${ghwm:-999999}" 65536 "yes: the guest's peak memory stayed under 64 MiB"
lt "${khwm:-999999}" 65536 "yes: the keeper's peak memory stayed under 64 MiB"

# Canaries: wait past the last one a survivor could write.
"$WARD" box exec "$B" -- 'touch /workspace/canary-positive' >/dev/null
sleep 3.5	# time: past the 3 s after which any survivor writes its canary
check "positive twin: a canary written by a live process appears" test -e "$WS/canary-positive"
rm -f "$WS/canary-positive"
left=$(ls "$WS" | grep -c canary)
is "$left" 0 "no survivor wrote a canary"
done_testing
