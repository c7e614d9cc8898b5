#!/bin/bash
# ward as an ordinary user: unprivileged user namespaces, no cgroup
# delegation here, so the PID namespace ends everything and rlimits stand in.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip_all "run as root to test as the wardtest user"
id wardtest >/dev/null 2>&1 || skip_all "no wardtest user (.ci/test creates it)"
runuser -u wardtest -- test -x "$WARD" || skip_all "wardtest cannot reach $WARD (a parent directory is not searchable)"
U() { runuser -u wardtest -- env WARD_GUEST="$WARD_GUEST" HOME=/home/wardtest "$@"; }
WS=$(runuser -u wardtest -- mktemp -d /tmp/ward-nonroot.XXXXXX)
echo original >"$WS/f.txt"; chown wardtest: "$WS/f.txt"

like "$(U "$WARD" doctor 2>&1)" "running as +uid" "doctor runs as the user"
like "$(U "$WARD" box run --workspace "$WS" -- 'id -u; cat f.txt; echo changed > f.txt; cat f.txt' 2>&1 | tr '\n' ' ')" "1000.*original.*changed" "a box runs as an ordinary user, copy-on-write workspace"
is "$(cat "$WS/f.txt")" "original" "the user's tree is untouched"
t0=$(now_ms)
OUT=$(U "$WARD" box run --workspace "$WS" --rw --timeout 2s -- 'trap "" TERM; (setsid bash -c "trap \"\" TERM; sleep 3; touch /workspace/canary" &); while :; do :; done' 2>&1); rc=$?
MS=$(( $(now_ms) - t0 ))
is "$rc" 124 "a time-out as an ordinary user"
lt "$MS" 4000 "back in time"
OUT=$(U "$WARD" box run --pids 64 --timeout 10s -- "python3 -c '
import os, time
n = 0
try:
    while n < 500:
        if os.fork() == 0:
            time.sleep(3); os._exit(0)
        n += 1
except OSError as e:
    print(\"stopped at\", n, e)
'" 2>&1)
like "$OUT" "stopped at [0-9]+ .*Resource temporarily unavailable" "the pids ceiling holds without cgroups (RLIMIT_NPROC per user namespace)"
like "$(U "$WARD" box run -- 'echo twin-ok' 2>&1)" "twin-ok" "twin: the same box runs commands"
B=$(U "$WARD" box create --persistent)
like "$(U "$WARD" box info "$B")" '"pids_by":.*"(cgroup|rlimit)' "box info says what enforces the pids ceiling"
U "$WARD" box destroy "$B"
sleep 3.5
check "no survivor wrote a canary" test ! -e "$WS/canary"
rm -rf "$WS"
done_testing
