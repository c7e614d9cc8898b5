#!/bin/bash
# ward as an ordinary user: unprivileged user namespaces, no cgroup
# delegation here, so the PID namespace ends everything and rlimits stand in.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip_all "run as root to test as the wardtest user"
id wardtest >/dev/null 2>&1 || skip_all "no wardtest user (.ci/test creates it)"
runuser -u wardtest -- test -x "$WARD" || skip_all "wardtest cannot reach $WARD (a parent directory is not searchable)"
# wardtest's boxes: in a runtime directory of this test's own.
mkdir -m 700 "$T_TMP/urun" && chown wardtest: "$T_TMP/urun"
U() { runuser -u wardtest -- env WARD_GUEST="$WARD_GUEST" HOME=/home/wardtest XDG_RUNTIME_DIR="$T_TMP/urun" XDG_STATE_HOME=/home/wardtest/.local/state "$@"; }
WS=$(runuser -u wardtest -- mktemp -d /tmp/ward-nonroot.XXXXXX)
echo original >"$WS/f.txt"; chown wardtest: "$WS/f.txt"

like "$(U "$WARD" doctor 2>&1)" "running as +uid" "doctor runs as the user"
like "$(U "$WARD" box run --workspace "$WS" -- 'id -u; cat f.txt; echo changed > f.txt; cat f.txt' 2>&1 | tr '\n' ' ')" "^0 original.*changed" "a box runs as an ordinary user (its root is the user), copy-on-write workspace"
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
like "$(U "$WARD" box info "$B" | json root_user)" "one uid" "box info: an ordinary user's box has one uid, the user's"
GP0=$(U "$WARD" box info "$B" | json guest_pid)
is "$(stat -c %u "/proc/$GP0")" "$(id -u wardtest)" "its processes are the user on the host"
like "$(U "$WARD" box exec "$B" -- 'touch /tmp/o; chown 42 /tmp/o 2>&1; echo rc=$?' | tr '\n' ' ')" "Invalid argument.*rc=1" "chown to another uid fails: the box has no other"
like "$(U "$WARD" box exec "$B" -- 'touch /usr/bin/x 2>&1; echo rc=$?; touch /etc/x /opt/x && echo own-ok' | tr '\n' ' ')" "Permission denied.*rc=1.*own-ok" "the host's /usr stays the host root's (not writable); twin: the root's own parts are"
# Another user cannot talk to a box: its socket is in a 0700 directory, and
# the keeper checks the peer's uid (shown with the directories opened up).
RB=$(box_new)
SOCK=$(ls -d "$XDG_RUNTIME_DIR/ward/boxes/$RB/sock")
PEER='import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("connect refused:", e.strerror); sys.exit()
s.settimeout(3)
try:
    d = s.recv(64)
    print("answered" if d else "closed by the keeper")
except OSError as e:
    print("closed:", e)'
like "$(U python3 -c "$PEER" "$SOCK" 2>&1)" "connect refused: Permission denied" "another user cannot reach a box's socket (0700 directory)"
D=$(dirname "$SOCK")
chmod o+x "$D" "$(dirname "$D")" "$(dirname "$(dirname "$D")")" "$XDG_RUNTIME_DIR"; chmod o+rw "$SOCK"
like "$(U python3 -c "$PEER" "$SOCK" 2>&1)" "closed" "with the directories opened up, the keeper closes another user's connection"
chmod o-x "$D" "$(dirname "$D")" "$(dirname "$(dirname "$D")")" "$XDG_RUNTIME_DIR"; chmod o-rw "$SOCK"
like "$(python3 -c "$PEER" "$SOCK" 2>&1)" "answered" "twin: the box's owner is answered (the guest's hello)"
"$WARD" box destroy "$RB"
# Without root the disk ceiling is fuse2fs's where fuse2fs, fuse-overlayfs
# and /dev/fuse are there (rootless.sh tests it), else not enforced.
WB=$(U "$WARD" box create --persistent --workspace "$WS")
if U "$WARD" doctor | grep -q '^ok  *disk ceiling  *fuse2fs'; then
	like "$(U "$WARD" box info "$WB")" '"disk_by":.*"fuse2fs: ' "box info says fuse2fs enforces the disk ceiling of the box's workspace layer"
	skip "fuse2fs and fuse-overlayfs here: the disk ceiling is enforced"
else
	like "$(U "$WARD" doctor)" "disk ceiling +not enforced: .*fuse" "doctor says the disk ceiling is not enforced for an ordinary user, and why"
	like "$(U "$WARD" box info "$WB")" '"disk_by":.*"not enforced: ' "box info says so for the box's workspace layer"
fi
U "$WARD" box destroy "$WB"
# As an ordinary user too: no descriptor in the box points outside it, and
# no file tool walks out through one.
GP=$(U "$WARD" box info "$B" | json guest_pid)
audit_box "$GP" U "$WARD" box exec "$B" -- 'sleep 2 & sleep 2'
is "$AUD_RC" 0 "fd audit as an ordinary user: no descriptor in the box points outside it"
like "$AUD" "in [3-9] processes, 0 bad" "fd audit: the guest, a call's init, its command and a child were checked"
SEC=$T_TMP/nonroot-secret.txt
echo "nonroot-secret-$$" >"$SEC"; chmod 644 "$SEC"
UP=$(printf '/..%.0s' $(seq 16))
hits=0
for fd in $(seq 0 16); do
	U "$WARD" box tool "$B" read "{\"path\":\"/proc/self/fd/$fd$UP$SEC\"}" 2>&1 | grep -q "nonroot-secret-$$" && hits=$((hits + 1))
done
is "$hits" 0 "as an ordinary user, read through /proc/self/fd/N (0-16) reaches no host file"
like "$(U "$WARD" box tool "$B" write '{"path":"/tmp/t.txt","content":"nonroot-twin"}' >/dev/null; U "$WARD" box tool "$B" read '{"path":"/tmp/t.txt"}')" "nonroot-twin" "twin: the tools work as an ordinary user"
U "$WARD" box destroy "$B"
# Images as an ordinary user: ward cannot give a file another owner, so
# every file of the tree is the user's (setuid and setgid cleared all the
# same), and rm removes a tree whose directories the image made read-only.
FIXD=${WARD_IMAGE_FIXTURES:-}
if [ -n "$FIXD" ] && sh "$(dirname "$0")/../images/make-fixtures.sh" "$FIXD" >/dev/null 2>&1 &&
	[ -f "$FIXD/debian.oci.tar" ] && runuser -u wardtest -- test -r "$FIXD/debian.oci.tar"; then
	UD=$(runuser -u wardtest -- mktemp -d /tmp/ward-nonroot-img.XXXXXX)
	DG=$(U env XDG_DATA_HOME="$UD" "$WARD" image import "$FIXD/debian.oci.tar" 2>"$T_TMP/uimg.err")
	is $? 0 "the Debian minimal image imported as an ordinary user"
	IT=$UD/ward/images/trees/${DG#sha256:}/root
	is "$(stat -c '%U:%G %a' "$IT/etc/shadow" "$IT/usr/bin/su" "$IT/root" | tr '\n' ' ')" "wardtest:wardtest 640 wardtest:wardtest 755 wardtest:wardtest 700 " \
		"its files are the user's (root:shadow's /etc/shadow too), setuid cleared, modes kept"
	like "$(cat "$T_TMP/uimg.err")" "unpacked sha256:" "and it was unpacked"
	RO=$(U env XDG_DATA_HOME="$UD" "$WARD" image import "$FIXD/readonly.oci.tar" 2>/dev/null)
	is "$(stat -c %a "$UD/ward/images/trees/${RO#sha256:}/root/ro" "$UD/ward/images/trees/${RO#sha256:}/root/ro/locked" | tr '\n' ' ')" "555 0 " \
		"an image's 0555 and 0000 directories keep their modes in the user's store"
	U env XDG_DATA_HOME="$UD" "$WARD" image rm "$DG" "$RO" >/dev/null 2>&1
	is "$(ls -A "$UD/ward/images/trees" "$UD/ward/images/tmp" | grep -cv ':$\|^$')" 0 "ward image rm removes the user's trees, directories of mode 0555 and 0000 too"
	rm -rf "$UD"
else
	skip "no Debian image fixture the wardtest user can read (tests/images/make-fixtures.sh: $(cat "$FIXD/missing" 2>/dev/null))"
fi
# A port and a fork as an ordinary user: the keeper's helper joins the
# box's user namespace to reach its network namespace; the fork's layers
# are the user's to copy.
PB=$(U "$WARD" box create --persistent --publish 8000)
PA=$(U "$WARD" box port "$PB" 8000)
like "$PA" '^127\.0\.0\.1:[0-9]+$' "an ordinary user's box: its port is published on the host's loopback"
U "$WARD" box exec "$PB" --timeout 60s -- 'cd /tmp && echo user-port-ok >i.html && exec python3 -m http.server 8000 --bind 127.0.0.1' >/dev/null 2>&1 &
PS=$!
R=""; for _ in $(seq 75); do R=$(curl -sS -m 2 "http://$PA/i.html" 2>/dev/null) && break; sleep 0.2; done
is "$R" user-port-ok "and the server in the box answers there"
kill $PS 2>/dev/null; wait $PS 2>/dev/null
U "$WARD" box exec "$PB" -- 'echo user-root-change >/etc/ward-fork-test' >/dev/null 2>&1
PF=$(U "$WARD" box fork "$PB" 2>/dev/null)
is "$(U "$WARD" box exec "$PF" -- 'cat /etc/ward-fork-test' 2>&1)" user-root-change "an ordinary user's box forks: the fork has its root's change"
U "$WARD" box destroy "$PB" "$PF" >/dev/null 2>&1
# The timed-out call's setsid child (the shell that would touch the canary) is gone.
wait_until 5 eval '! pgrep -u wardtest -f "touch /workspace/canary" >/dev/null'; ok $? "no survivor of the timed-out call runs"
check "no survivor wrote a canary" test ! -e "$WS/canary"
rm -rf "$WS"
done_testing
