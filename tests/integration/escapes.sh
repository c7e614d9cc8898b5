#!/bin/bash
# Escapes refused, each with a positive twin that shows the test can see
# success. With --pool, the box under test is taken from a warm pool (an
# ns pool box, made ahead whole): the fast path is held to the same.
. "$(dirname "$0")/lib.sh"
WS=$T_TMP/ws
mkdir -p "$WS"
SECRET=$T_TMP/secret.txt
echo "host-secret-$$" >"$SECRET"
echo "inside" >"$WS/inside.txt"
ln -s "$SECRET" "$WS/link-out"
ln -s inside.txt "$WS/link-in"
if [ "${1:-}" = --pool ]; then
	"$WARD" box pool --size 1 --workspace "$WS" --rw 2>"$T_TMP/pool.err" &
	POOL=$!
	inpool() { "$WARD" box ls --json | python3 -c 'import json,sys
print(" ".join(b["name"] for b in json.load(sys.stdin) if b.get("state") == "pooled"))'; }
	wait_until 30 test -n "$(inpool)"	# the pool's box is made
	P=$(inpool)
	B=$(box_new --workspace "$WS" --rw)
	kill -TERM $POOL; wait $POOL
	ok "$([ -n "$P" ] && [ "$B" = "$P" ]; echo $?)" "the box under test is the pool's ($B; pool: $P)"
else
	B=$(box_new --workspace "$WS" --rw)
fi
X() { "$WARD" box exec "$B" -- "$1" 2>&1; }

unlike "$(X "cat $SECRET")" "host-secret" "reading a host file outside /workspace fails"
like "$(X "cat /workspace/inside.txt")" "inside" "twin: reading a file in /workspace works"
unlike "$(X "cat /workspace/link-out")" "host-secret" "following a symlink out of /workspace fails"
unlike "$("$WARD" box tool "$B" read '{"path":"link-out"}')" "host-secret" "read tool: a symlink out of /workspace fails"
like "$(X "cat /workspace/link-in")" "inside" "twin: a symlink inside /workspace works"
mkdir -p "$T_TMP/outside-dir"; echo "host-secret-$$" >"$T_TMP/outside-dir/deep.txt"
ln -s "$T_TMP/outside-dir" "$WS/dir-out"
unlike "$("$WARD" box tool "$B" grep '{"pattern":"host-secret","mode":"content"}')" "host-secret" "grep's walk does not follow a symlink in the tree (file or directory)"
unlike "$("$WARD" box tool "$B" find '{"pattern":"deep*"}')" "deep.txt" "nor does find's"
like "$("$WARD" box tool "$B" grep '{"pattern":"inside","mode":"content"}')" "inside.txt" "twin: grep finds the workspace's own file"
# The box's root is its own: copy-on-write over the host view.
EV="/usr/evil-$$ /etc/evil-$$ /evil-$$ /usr/bin/evil-$$"
like "$(X "touch $EV && ls $EV | wc -l")" "^4$" "writes to /usr, /etc and / go to the box's own root layer"
is "$(ls $EV 2>/dev/null | wc -l)" 0 "and the host's /usr, /etc and / are unchanged"
like "$("$WARD" box run -- "ls $EV 2>&1 | grep -c 'No such file'")" "^4$" "a new box's root is clean: the first box's changes are its own"
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
wait_until 10 test -s "$T_TMP/port"	# the listener printed its port
PORT=$(head -1 "$T_TMP/port")
probe="python3 -c 'import socket; c=socket.create_connection((\"127.0.0.1\", $PORT), 2); print(c.recv(64).decode())'"
unlike "$(X "$probe")" "host-listener" "a listener on the host's loopback is unreachable"
NB=$(box_new --net host)
like "$("$WARD" box exec "$NB" -- "$probe" 2>&1)" "host-listener" "twin: with --net host the same probe connects"
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
# Who a tool command is: the box's root, with a container's default
# capabilities less CAP_MKNOD and CAP_SETFCAP, held in the call's own user
# namespace (pinned: CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID
# SETPCAP NET_BIND_SERVICE NET_RAW SYS_CHROOT AUDIT_WRITE).
like "$(X 'grep -E "^Cap(Eff|Bnd)" /proc/self/status' | tr '\n' ' ')" "CapEff:.00000000200425fb CapBnd:.00000000200425fb" "tool commands run with the default capabilities, bounding set too: never CAP_SYS_ADMIN, CAP_MKNOD or CAP_SETFCAP"
like "$(X 'id -u')" "^0$" "tool commands run as the box's root (uid 0)"
like "$(X 'mknod /tmp/nullx c 1 3 2>&1; echo rc=$?' | tr '\n' ' ')" "Operation not permitted.*rc=1" "mknod of a device node is refused (no CAP_MKNOD)"
like "$(X 'mknod /tmp/fifo p && test -p /tmp/fifo && echo fifo-ok')" "fifo-ok" "twin: mknod of a fifo works"
like "$(X 'echo 1 > /proc/sys/kernel/core_pattern 2>&1; echo rc=$?')" "rc=1" "sysctls are read-only"
# --- No way out through a descriptor, for every file tool and every path
# form (/proc/*/fd/N, cwd, root, /dev/fd): the tools resolve in the box's
# root and follow no /proc magic link; a command sees only its own /proc.
D=$(box_new --workspace "$WS")
UP=$(printf '/..%.0s' $(seq 16))
mkdir -p "$T_TMP/host-dir"
hits=0; tried=0
# What counts as reaching the host: its file's content, or its name listed
# as an entry (ls: "file  N  secret.txt"; find: a line of its own).
reached() { json text | grep -Eq "host-secret-$$|^(file +[0-9]+ +)?secret.txt$"; }
for fd in $(seq 0 16); do
	for base in "/proc/self/fd/$fd" "/proc/1/fd/$fd" "/proc/thread-self/fd/$fd" "/dev/fd/$fd" "/proc/1/task/1/fd/$fd"; do
		P="$base$UP"
		for call in "read {\"path\":\"$P$SECRET\"}" \
			"grep {\"pattern\":\"host-secret\",\"path\":\"$P$T_TMP\",\"mode\":\"content\"}" \
			"ls {\"path\":\"$P$T_TMP\"}" \
			"find {\"pattern\":\"secret*\",\"path\":\"$P$T_TMP\"}" \
			"edit {\"path\":\"$P$SECRET\",\"old_string\":\"host-secret\",\"new_string\":\"edited\"}" \
			"write {\"path\":\"$P$T_TMP/host-dir/escaped-$fd\",\"content\":\"x\"}"; do
			# Every tool through /proc/self/fd; read through the other forms.
			[ "$base" = "/proc/self/fd/$fd" ] || [ "${call%% *}" = read ] || continue
			tried=$((tried + 1))
			tool "$D" ${call%% *} "${call#* }" 2>&1 | reached && hits=$((hits + 1))
		done
	done
done
for P in "/proc/self/cwd$UP" "/proc/1/cwd$UP" "/proc/self/root" "/proc/1/root" "/proc/self/exe/.." "/proc/1/map_files/.."; do
	tried=$((tried + 1))
	tool "$D" read "{\"path\":\"$P$SECRET\"}" 2>&1 | reached && hits=$((hits + 1))
done
# The check can see a hit: the same read of the host's file outside the box.
printf '{"text":"%s"}' "$(cat "$SECRET")" | reached; ok $? "twin: the check recognises the host file's content"
is "$hits" 0 "no file tool reached the host through a /proc link ($tried calls: read, grep, ls, find, edit, write; fds 0-16; fd, cwd, root, exe, map_files)"
is "$(ls "$T_TMP/host-dir" | wc -l)" 0 "no write through a /proc link created a host file"
is "$(cat "$SECRET")" "host-secret-$$" "no edit through a /proc link changed the host's file"
like "$(tool "$D" read '{"path":"/proc/self/fd/3/workspace/inside.txt"}')" "/proc link" "a /proc link is refused with a line that says why"
like "$(tool "$D" read '{"path":"/workspace/inside.txt"}')" "inside" "twin: the same tool reads a workspace file"
like "$(tool "$D" ls '{"path":"/proc/self/fd"}')" "link .* 0 -> " "twin: /proc/self/fd itself can be listed"
like "$(tool "$D" write '{"path":"sub/dir/new.txt","content":"made"}')" "created" "twin: write makes a file and its directories"
like "$(tool "$D" read '{"path":"../../../../workspace/sub/dir/new.txt"}')" "made" "twin: a path with .. past the root resolves inside the box"
like "$("$WARD" box exec "$D" -- "for f in /proc/*/fd/* /proc/*/cwd /proc/*/root; do cat \$f$UP$SECRET; done 2>&1; echo done")" "done" "a command walked every /proc link it can see"
unlike "$("$WARD" box exec "$D" -- "for f in /proc/*/fd/* /proc/*/cwd /proc/*/root; do cat \$f$UP$SECRET; done 2>&1")" "host-secret" "and reached nothing of the host's"

# Every descriptor of every process in the box (the guest, its threads, a
# running call, the call's init) is the channel, a kernel object, or a file
# of the box.
GP=$("$WARD" box info "$D" | json guest_pid)
audit_box "$GP" "$WARD" box exec "$D" -- 'sleep 2 & sleep 2'
is "$AUD_RC" 0 "fd audit: no descriptor in the box points outside it"
like "$AUD" "checked [0-9]+ descriptors in [3-9] processes, 0 bad" "fd audit: the guest, a call's init, its command and a child were all checked"

# A call sees only its own processes, in its own /proc.
calls_view "$D" ward-canary-7777
unlike "$VIEW" "ward-guest" "a call's PID 1 is not ward-guest"
unlike "$VIEW" "ward-canary-7777" "a call does not see another call's processes"
like "$(printf '%s' "$VIEW" | tail -1)" "^[1-5]$" "a call's /proc lists only its own few processes"
like "$("$WARD" box exec "$D" -- 'sleep 3 & ps -eo args' 2>&1)" "sleep 3" "twin: a call sees its own background process"
OOM0=$(cat /proc/$GP/oom_score_adj)
"$WARD" box exec "$D" -- 'echo 1000 > /proc/1/oom_score_adj; for p in /proc/[0-9]*; do echo 1000 > $p/oom_score_adj; done' >/dev/null 2>&1
is "$(cat /proc/$GP/oom_score_adj)" "$OOM0" "a call cannot change ward-guest's oom_score_adj"

# A host mount under /usr is not in the box (an overlay's lower does not
# cross mounts), and what is not for everyone under a copied /etc
# directory is left out (/etc/ssl/private). Shown in a private mount
# namespace, so the host is untouched.
SUB=$(unshare -m --propagation private sh -c "
	mount -t tmpfs ward-test /usr/local/src && echo host-file > /usr/local/src/f &&
	mkdir -p /etc/ssl/private && mount -t tmpfs -o mode=700 ward-test /etc/ssl/private &&
	echo 'PRIVATE KEY' > /etc/ssl/private/k.key && chmod 600 /etc/ssl/private/k.key &&
	'$WARD' box run -- 'echo pwned >> /usr/local/src/f; cat /etc/ssl/private/k.key; ls /etc/ssl/certs | head -1; echo box-sees: \$(cat /usr/local/src/f)' 2>&1
	echo host-now: \$(cat /usr/local/src/f)")
unlike "$SUB" "box-sees:.*host-file" "a host mount below /usr is not in the box"
unlike "$SUB" "host-now:.*pwned" "and its file on the host is unchanged"
like "$SUB" "box-sees: pwned" "twin: what the box wrote there is the box's own"
unlike "$SUB" "PRIVATE KEY" "a host directory not open to everyone (/etc/ssl/private) is hidden"
like "$(X 'ls /etc/ssl/certs | wc -l')" "^[1-9]" "twin: /etc/ssl/certs is there"
# What /proc says about the host's kernel is masked; the rest reads.
like "$(X 'wc -c < /proc/slabinfo; wc -c < /proc/timer_list; wc -c < /proc/vmallocinfo; grep -c . /proc/meminfo' | tr '\n' ' ')" "^0 0 0 [1-9]" "/proc's slabinfo, timer_list and vmallocinfo are empty; twin: meminfo reads"
# /dev takes nothing new; /dev/shm is the smaller of --disk and 64 MiB.
like "$(X 'touch /dev/new 2>&1; echo x > /dev/shm/ok && echo shm-ok' | tr '\n' ' ')" "Read-only file system.*shm-ok" "/dev is read-only; twin: /dev/shm is writable"
SB=$(box_new --disk 16M)
like "$("$WARD" box exec "$SB" -- 'df -k /dev/shm | tail -1')" " 16384 " "/dev/shm is no larger than --disk"

# The box's device nodes are binds of the host's: their inodes cannot be
# changed from the box (the same chmod to the mode it has, and a touch,
# would show in the host's ctime).
before=$(stat -c '%a %u %Z %Y' /dev/null /dev/full /dev/zero)
O=$(X 'chmod 0666 /dev/null; chmod 0666 /dev/full; touch /dev/null /dev/zero; chown 0:0 /dev/full; echo end' 2>&1)
is "$(printf '%s\n' "$O" | grep -c 'Read-only file system')" 5 "chmod, touch and chown of /dev nodes fail (read-only)"
is "$(stat -c '%a %u %Z %Y' /dev/null /dev/full /dev/zero)" "$before" "the host's device inodes are unchanged"
like "$(X 'echo x > /dev/null && head -c 5 /dev/zero | wc -c && head -c 5 /dev/urandom | wc -c && { echo x > /dev/full; } 2>&1; echo rc=$?' | tr '\n' ' ')" "^5 5 .*No space left.*rc=1" "twin: the devices still work (null, zero, urandom, full)"

# Nothing the box makes carries privilege: setuid and setgid bits are refused
# (--rw writes the user's tree directly).
O=$(X 'cd /workspace; cp /bin/sh sh; chmod 4755 sh; chmod u+s sh; chmod g+s sh; install -m 4755 /bin/true t2 2>&1
python3 - <<PY
import os
for what, f in [("open", lambda: os.open("o", os.O_CREAT | os.O_WRONLY, 0o4755)),
                ("mkdir", lambda: os.mkdir("sg", 0o2755)),
                ("mknod", lambda: os.mknod("n", 0o104755)),
                ("O_TMPFILE", lambda: os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o4755)),
                ("setcap", lambda: os.setxattr("sh", "security.capability", bytes([1, 0, 0, 2]) + bytes(16)))]:
    try:
        f(); print(what, "allowed")
    except OSError as e:
        print(what, "refused:", e.strerror)
PY
touch script; chmod +x script; chmod 0750 script && echo twin-chmod-ok' 2>&1)
is "$(printf '%s\n' "$O" | grep -c 'Operation not permitted')" 9 "chmod u+s/g+s/4755, install -m 4755, open/mkdir/mknod/O_TMPFILE with setuid or setgid, setcap: all refused"
is "$(find "$WS" -perm /6000 | wc -l)" 0 "no setuid or setgid file or directory reached the host's tree"
like "$O" "twin-chmod-ok" "twin: chmod +x and chmod 0750 work"
is "$(stat -c %a "$WS/script")" 750 "twin: the mode reached the host's tree"
is "$(stat -c %a "$WS/sh")" 755 "the copied shell is an ordinary executable on the host"

# io_uring is denied to tool commands; ward-guest's own use predates the filter.
like "$(X "python3 -c '$IOU_PROBE'")" "io_uring_setup -1 Operation not permitted" "io_uring_setup is refused in the box (EPERM)"
like "$(python3 -c "$IOU_PROBE")" "io_uring_setup [0-9]+ ok" "twin: outside the box it works"
like "$(tool "$D" read '{"path":"/workspace/inside.txt"}')" "inside" "twin: ward-guest's in-process tools still read through io_uring"

# A NUL in a path: refused with a clear error, nothing written.
"$WARD" box tool "$D" write '{"path":"nul\u0000evil","content":"x"}' >/dev/null 2>"$T_TMP/err"
is $? 65 "a NUL in a path: bad input (exit 65)"
like "$(cat "$T_TMP/err")" "NUL character" "with a line that says so"
unlike "$("$WARD" box exec "$D" -- 'ls /workspace')" "^nul$" "nothing was written"
like "$(tool "$D" write '{"path":"nul-ok","content":"x"}')" "created" "twin: the same write without the NUL works"
# The box's disk: a box cannot fill the host's. The copy-on-write layer is
# an ext4 image of --disk's size (as root, with loop devices); /tmp is a
# tmpfs of at most that size.
if "$WARD" doctor | grep -q '^ok  *disk ceiling'; then
	DW=$T_TMP/disk-ws
	mkdir -p "$DW"
	# The first box of a user (no state directory yet) gets its cap too.
	export XDG_STATE_HOME=$T_TMP/fresh-state
	DB=$(box_new --workspace "$DW" --disk 64M)
	like "$("$WARD" box info "$DB")" '"disk_by":.*"an ext4 image' "box info says what enforces the disk ceiling"
	like "$("$WARD" box exec "$DB" -- 'head -c 1000000 /dev/zero > /workspace/small && echo small-ok' 2>&1)" "small-ok" "twin: a 1 MB file is written under a 64 MiB ceiling"
	O=$("$WARD" box exec "$DB" -- 'fallocate -l 3G /workspace/big; echo rc=$?; dd if=/dev/zero of=/workspace/fill bs=1M count=200; echo rc=$?; fallocate -l 3G /tmp/big; echo rc=$?' 2>&1)
	is "$(printf '%s\n' "$O" | grep -c 'No space left on device')" 3 "fallocate 3G and dd 200M in /workspace, fallocate 3G in /tmp: no space left"
	UPPER=$("$WARD" box info "$DB" | json workspace_changes)
	lt "$(du -k "$(dirname "$UPPER").img" | cut -f1)" 70000 "the host's disk holds no more than the ceiling (the image's blocks)"
	like "$(tool "$DB" write "{\"path\":\"w.txt\",\"content\":\"$(head -c 100000 /dev/zero | tr '\0' a)\"}" | json text)" "the box's disk is full" "the write tool says the disk is full"
	like "$(tool "$DB" bash '{"command":"cat /dev/zero > /workspace/more"}' | json text)" "hint: /workspace is full" "a failed command gets a hint that the disk is full"
	"$WARD" box exec "$DB" -- 'rm -f /workspace/fill /workspace/big' >/dev/null 2>&1
	like "$("$WARD" box exec "$DB" -- 'head -c 1000000 /dev/zero > /workspace/again && echo again-ok' 2>&1)" "again-ok" "twin: after rm, the space is usable again"
	"$WARD" box exec "$DB" -- 'mkdir -p /workspace/locked/deep && chmod 000 /workspace/locked' >/dev/null 2>&1
	"$WARD" box destroy "$DB"
	[ ! -e "$(dirname "$UPPER").img" ] && ! grep -q " $(dirname "$UPPER") " /proc/self/mountinfo; ok $? "a destroyed box's image is unmounted and removed"
	[ ! -e "$(dirname "$UPPER")" ]; ok $? "and its layers are gone, a directory the box made unreadable included"
	export XDG_STATE_HOME=$T_TMP/state
else
	echo "ok $((T_N += 1)) # SKIP the disk ceiling needs root and loop devices ($("$WARD" doctor | grep 'disk ceiling'))"
fi

done_testing
