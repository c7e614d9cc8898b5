#!/bin/bash
# Escapes refused, each with a positive twin that shows the test can see
# success.
. "$(dirname "$0")/lib.sh"
WS=$T_TMP/ws
mkdir -p "$WS"
SECRET=$T_TMP/secret.txt
echo "host-secret-$$" >"$SECRET"
echo "inside" >"$WS/inside.txt"
ln -s "$SECRET" "$WS/link-out"
ln -s inside.txt "$WS/link-in"
B=$(box_new --workspace "$WS" --rw)
X() { "$WARD" box exec "$B" -- "$1" 2>&1; }

unlike "$(X "cat $SECRET")" "host-secret" "reading a host file outside /workspace fails"
like "$(X "cat /workspace/inside.txt")" "inside" "twin: reading a file in /workspace works"
unlike "$(X "cat /workspace/link-out")" "host-secret" "following a symlink out of /workspace fails"
unlike "$("$WARD" box tool "$B" read '{"path":"link-out"}')" "host-secret" "read tool: a symlink out of /workspace fails"
like "$(X "cat /workspace/link-in")" "inside" "twin: a symlink inside /workspace works"
is "$(X "touch /usr/evil 2>&1; touch /etc/evil 2>&1; touch /evil 2>&1" | grep -c 'Read-only file system')" 3 "writing /usr, /etc or / fails (read-only)"
like "$(X "touch /workspace/ok /tmp/ok && echo wrote")" "wrote" "twin: writing /workspace and /tmp works"
check "twin: the write reached the host's workspace" test -e "$WS/ok"
unlike "$(X "cat /etc/shadow 2>&1; ls /root 2>&1; ls /home 2>&1")" "root:" "no /etc/shadow, nothing of the host's home"

# The host's loopback is not the box's.
python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
sys.stdout.close()
while True:
    c, _ = s.accept(); c.sendall(b"host-listener\n"); c.close()
' >"$T_TMP/port" &
LP=$!
sleep 0.3
PORT=$(head -1 "$T_TMP/port")
probe="python3 -c 'import socket; c=socket.create_connection((\"127.0.0.1\", $PORT), 2); print(c.recv(64).decode())'"
unlike "$(X "$probe")" "host-listener" "a listener on the host's loopback is unreachable"
NB=$(box_new --net)
like "$("$WARD" box exec "$NB" -- "$probe" 2>&1)" "host-listener" "twin: with --net the same probe connects"
kill $LP

# Signals and ptrace of host processes.
sleep 1000 &
HP=$!
like "$(X "kill -0 $HP 2>&1; echo rc=\$?")" "rc=1" "kill -0 of a host process fails (not visible)"
like "$(X 'sleep 5 & kill -0 $! && echo rc=0')" "rc=0" "twin: signalling its own process works"
kill $HP
PT='import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
pid = os.fork()
if pid == 0:
    import time; time.sleep(2); os._exit(0)
r = libc.ptrace(16, pid, 0, 0)
print("ptrace", r, os.strerror(ctypes.get_errno()) if r else "attached")
os.kill(pid, 9)'
like "$(X "python3 -c '$PT'")" "ptrace -1" "ptrace (even of its own child) is refused"
like "$(python3 -c "$PT")" "ptrace 0 attached" "twin: the same ptrace works outside the box"

like "$(X 'mkdir -p /tmp/m; mount -t tmpfs none /tmp/m 2>&1; echo rc=$?')" "rc=[1-9]" "mount is refused"
like "$(X 'unshare -r true 2>&1; echo rc=$?')" "rc=[1-9]" "new user namespaces are refused"
like "$(unshare -rm sh -c 'mount -t tmpfs none /mnt && echo mounted' 2>&1)" "mounted" "twin: the same mount works outside the box"
MOD='import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(175, None, 0, b"")
print("init_module", r, os.strerror(ctypes.get_errno()))'
like "$(X "python3 -c '$MOD'")" "init_module -1 Operation not permitted" "loading a kernel module is refused (EPERM)"
like "$(python3 -c "$MOD")" "init_module -1 (Bad address|Function not implemented)" "twin: outside the box the same call reaches the kernel (EFAULT, or ENOSYS without module support)"
like "$(X 'cat /proc/self/status | grep CapEff')" "0000000000000000" "tool commands have no capabilities"
like "$(X 'id -u')" "^1000" "tool commands run as uid 1000"
like "$(X 'echo 1 > /proc/sys/kernel/core_pattern 2>&1; echo rc=$?')" "rc=1" "sysctls are read-only"
done_testing
