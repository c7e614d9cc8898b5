#!/bin/bash
# A box's own root (ns): copy-on-write over the host view, or over a tree
# standing for an image (ns-root, the backend without a keeper); its
# changes in the box's root layer, never the host's and never the diff's.
. "$(dirname "$0")/lib.sh"
NS_ROOT=${NS_ROOT:?set NS_ROOT to the ns-root driver}
WS=$T_TMP/ws
mkdir -p "$WS"

# A small package and a wheel, made here (offline).
mkdir -p "$T_TMP/pkg/DEBIAN" "$T_TMP/pkg/usr/bin"
printf 'Package: ward-hello\nVersion: 1.0\nArchitecture: all\nMaintainer: ward <ward@example.org>\nDescription: a test package\n' \
	>"$T_TMP/pkg/DEBIAN/control"
printf '#!/bin/sh\necho hello-from-deb\n' >"$T_TMP/pkg/usr/bin/ward-hello"
chmod 755 "$T_TMP/pkg/usr/bin/ward-hello"
dpkg-deb --root-owner-group -b "$T_TMP/pkg" "$WS/ward-hello.deb" >/dev/null
python3 - "$WS" <<'PY'
import base64, hashlib, sys, zipfile
n, v = "ward_probe", "1.0"
files = {f"{n}/__init__.py": b'VALUE = "probe-ok"\n',
         f"{n}-{v}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {n}\nVersion: {v}\n".encode(),
         f"{n}-{v}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: ward-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
rec = "".join(f"{k},sha256={base64.urlsafe_b64encode(hashlib.sha256(c).digest()).rstrip(b'=').decode()},{len(c)}\n"
              for k, c in files.items()) + f"{n}-{v}.dist-info/RECORD,,\n"
files[f"{n}-{v}.dist-info/RECORD"] = rec.encode()
with zipfile.ZipFile(f"{sys.argv[1]}/{n}-{v}-py3-none-any.whl", "w") as z:
    for k, c in files.items():
        z.writestr(k, c)
PY
sums() { find /usr/bin /usr/local /var/lib/dpkg -xdev -maxdepth 3 -type f -newer "$T_TMP/pkg/DEBIAN/control" 2>/dev/null | sort; md5sum /var/lib/dpkg/status; }
BEFORE=$(sums)

if [ "$(id -u)" = 0 ]; then
	like "$("$WARD" doctor)" "box root +copy-on-write over the image or the host view \(ns\); its users: (65536 uids|one uid)" "ward doctor says who a box's root is"
fi

# --- The host view ---
B=$(box_new --workspace "$WS")
like "$("$WARD" box info "$B" | json root)" "copy-on-write" "box info: the box's root is copy-on-write"
like "$("$WARD" box info "$B" | json root_user)" "uids|one uid" "and says who its root is"
like "$("$WARD" box exec "$B" -- 'dpkg -i ward-hello.deb 2>&1 | tail -1; ward-hello; dpkg -s ward-hello | grep Status' 2>&1 | tr '\n' ' ')" \
	"hello-from-deb.*Status: install ok installed" "host view: dpkg -i of a local .deb works in the box"
like "$("$WARD" box exec "$B" -- 'pip install --no-index --break-system-packages ward_probe-1.0-py3-none-any.whl >/dev/null 2>&1; cd /; python3 -c "import ward_probe; print(ward_probe.VALUE, ward_probe.__file__)"' 2>&1)" \
	"probe-ok /usr/(local/)?lib/python3" "host view: pip install into the system site-packages works in the box"
if command -v npm >/dev/null; then
	mkdir -p "$T_TMP/npm-probe"
	printf '{"name": "ward-npm-probe", "version": "1.0.0", "bin": {"ward-npm-probe": "cli.js"}}\n' >"$T_TMP/npm-probe/package.json"
	printf '#!/usr/bin/env node\nconsole.log("npm-probe-ok")\n' >"$T_TMP/npm-probe/cli.js"
	(cd "$T_TMP/npm-probe" && npm pack --silent >/dev/null 2>&1 && mv ward-npm-probe-1.0.0.tgz "$WS/")
	like "$("$WARD" box exec "$B" -- 'npm i -g --offline --no-audit --no-fund ./ward-npm-probe-1.0.0.tgz >/dev/null 2>&1; ward-npm-probe' 2>&1)" \
		"npm-probe-ok" "host view: npm i -g works in the box"
	check "and the host's global node_modules do not have it" test ! -e "$(npm root -g)/ward-npm-probe"
else
	skip "no npm here"
fi
is "$(sums)" "$BEFORE" "the host's /usr, /usr/local and dpkg database are unchanged (checksums, no new file)"
check "and the host has neither the package nor the module" sh -c "! command -v ward-hello && ! python3 -c 'import ward_probe' 2>/dev/null"
like "$("$WARD" box run -- 'command -v ward-hello || echo no-hello; dpkg -s ward-hello 2>&1 | head -1; cd /; python3 -c "import ward_probe" 2>&1 | tail -1' | tr '\n' ' ')" \
	"no-hello.*not installed.*No module named" "the next box's root is clean: neither is there"

# Who the box's root is: as root (where the kernel shifts mounts' owners),
# 65536 uids of no host user; else one, ward's own.
if "$WARD" box info "$B" | json root_user | grep -q "65536 uids"; then
	GP=$("$WARD" box info "$B" | json guest_pid)
	is "$(stat -c %u "/proc/$GP")" 1879048192 "as root, the box's processes are host uid 1879048192: no user of the host"
	like "$("$WARD" box exec "$B" -- 'touch /tmp/o && chown 42:42 /tmp/o && stat -c %u:%g /tmp/o' 2>&1)" "^42:42$" \
		"chown to another uid of the box (_apt's 42) works"
	like "$("$WARD" box exec "$B" -- 'stat -c %U /usr/bin/env' 2>&1)" "^root$" "and what the host's root owns is the box's root's"
else
	echo "ok $((T_N += 1)) # SKIP the box has one uid here ($("$WARD" box info "$B" | json root_user))"
fi

# Hibernate keeps the root's changes (files, not processes); destroy ends them.
R=$("$WARD" box info "$B" | json workspace_changes)
"$WARD" box hibernate "$B" >/dev/null
like "$("$WARD" box exec "$B" -- 'ward-hello' 2>&1)" "hello-from-deb" "the root's changes survive a hibernate and wake"
ROOTL=$(dirname "$R")/root
check "they are in the box's root layer, beside the workspace's" test -d "$ROOTL"
"$WARD" box destroy "$B"
check "and are gone with the box" test ! -e "$ROOTL"

# Never part of the diff: a session's run installs a package and writes a
# file; the patch has the file, and nothing of /usr.
cat >"$T_TMP/install.json" <<'EOF'
{"turns": [
 {"text": "Installing.", "tools": [{"name": "bash", "input": {"command": "dpkg -i ward-hello.deb >/dev/null && ward-hello > made.txt && touch /etc/ward-root-change"}}]},
 {"text": "Done."}
]}
EOF
"$WARD" run --json --model "replay:$T_TMP/install.json" --workspace "$WS" --patch "$T_TMP/install.patch" "install" >"$T_TMP/run.out" 2>"$T_TMP/run.err"
is "$?" 0 "ward run that installs a package: exit 0"
like "$(cat "$T_TMP/install.patch")" '\+\+\+ b/made.txt' "its patch has the workspace's file"
unlike "$(cat "$T_TMP/install.patch")" "usr/bin|ward-root-change|var/lib/dpkg" "and nothing of the root's changes (/usr, /etc, the dpkg database)"
SID=$(tail -1 "$T_TMP/run.out" | json session)
L=$XDG_STATE_HOME/ward/workspaces/s-$SID
if [ -e "$L.img" ]; then
	# Its layers are an image, mounted only while in use: look inside.
	mkdir -p "$T_TMP/mnt"
	mount -o loop,ro "$L.img" "$T_TMP/mnt"
	check "the session keeps its workspace layer" test -e "$T_TMP/mnt/upper/made.txt"
	check "but not the root's: that went with the box" test ! -e "$T_TMP/mnt/root"
	umount "$T_TMP/mnt"
else
	check "the session keeps its workspace layer" test -e "$L/upper/made.txt"
	check "but not the root's: that went with the box" test ! -e "$L/root"
fi

# The root's changes count against --disk.
if "$WARD" doctor | grep -q '^ok  *disk ceiling'; then
	DB=$(box_new --disk 64M)
	like "$("$WARD" box exec "$DB" -- 'head -c 1000000 /dev/zero > /usr/small && echo small-ok' 2>&1)" "small-ok" "twin: a 1 MB file in /usr under a 64 MiB ceiling"
	like "$("$WARD" box exec "$DB" -- 'dd if=/dev/zero of=/opt/fill bs=1M count=200 2>&1; echo rc=$?' | tr '\n' ' ')" \
		"No space left on device.*rc=1" "filling the root (200 MB in /opt) past --disk 64M: no space left"
	"$WARD" box destroy "$DB"
else
	echo "ok $((T_N += 1)) # SKIP the disk ceiling needs root and loop devices"
fi

# --- A root of an image's kind: trees made here (ns-root) ---
BUSYBOX=$(command -v busybox || true)
if [ -z "$BUSYBOX" ] || ldd "$BUSYBOX" >/dev/null 2>&1; then
	skip "the trees need a static busybox (apt-get install busybox-static)"
	done_testing
	exit
fi
BB=$T_TMP/busybox
mkdir -p "$BB/bin" "$BB/etc"
cp "$BUSYBOX" "$BB/bin/busybox"
for a in sh ls cat echo id mkdir touch rm env pwd; do ln -s busybox "$BB/bin/$a"; done
printf 'root:x:0:0:root:/root:/bin/sh\napp:x:1001:1002:app:/home/app:/bin/sh\n' >"$BB/etc/passwd"
printf 'root:x:0:\napp:x:1002:\nstaff:x:50:\n' >"$BB/etc/group"
echo "busybox-image" >"$BB/etc/os-release"
TREESUM() { (cd "$1" && find . -printf '%p %m %U %s\n' | sort | md5sum); }
BBSUM=$(TREESUM "$BB")
O=$("$NS_ROOT" "$BB" "$T_TMP/l1" -- \
	write '{"path":"/workspace/a.txt","content":"hello\n"}' read '{"path":"a.txt"}' \
	grep '{"pattern":"hell","mode":"content"}' find '{"pattern":"*.txt"}' ls '{"path":"/etc"}' \
	edit '{"path":"a.txt","old_string":"hello","new_string":"bye"}' \
	bash '{"command":"cat /etc/os-release a.txt; echo $SHELL; touch /etc/changed /bin/new && echo root-writable"}' 2>&1)
like "$O" '"created /workspace/a.txt' "busybox-only image: write"
like "$O" '1\\thello' "read"
like "$O" 'a.txt:1:hello' "grep"
like "$O" '"a.txt\\n"' "find"
like "$O" 'passwd' "ls"
like "$O" '1 replacement' "edit"
like "$O" 'busybox-image\\nbye\\n/bin/sh\\nroot-writable' "bash runs through busybox sh, and the root is writable"
is "$(TREESUM "$BB")" "$BBSUM" "the image's tree is unchanged"
like "$("$NS_ROOT" "$BB" "$T_TMP/l2" -- bash '{"command":"ls /etc/changed 2>&1"}' 2>&1)" "No such file" "the next box of the image is clean"
like "$("$NS_ROOT" "$BB" "$T_TMP/l1" -- bash '{"command":"ls /etc/changed"}' 2>&1)" '"/etc/changed' "twin: the same root layer again (a woken box) has it"

# No shell at all: one clear line; the file tools still work.
NOSH=$T_TMP/nosh
mkdir -p "$NOSH/etc"
echo "no-shell-image" >"$NOSH/etc/os-release"
O=$("$NS_ROOT" "$NOSH" "$T_TMP/l3" -- bash '{"command":"echo hi"}' read '{"path":"/etc/os-release"}' 2>&1)
like "$O" '"outcome":"failed","text":"this box has no shell: its root has neither /bin/bash nor /bin/sh' "an image with no shell: a bash call fails saying so"
like "$O" 'no-shell-image' "twin: the file tools work there"

# The guest depends on nothing of the image: not its loader, not its
# /etc/ld.so.preload (a library that would leave a canary in every process
# that loads it), not its libc.
if command -v gcc >/dev/null; then
	HOST=$T_TMP/hostile
	mkdir -p "$HOST/etc" "$HOST/lib" "$HOST/lib64" "$HOST/bin"
	cp "$BUSYBOX" "$HOST/bin/sh"
	printf '#include <fcntl.h>\n#include <unistd.h>\n__attribute__((constructor)) static void c(void) { int f = open("/tmp/preload-canary", O_CREAT | O_WRONLY, 0644); if (f >= 0) close(f); f = open("/workspace/preload-canary", O_CREAT | O_WRONLY, 0644); if (f >= 0) close(f); }\n' >"$T_TMP/evil.c"
	gcc -shared -fPIC -o "$HOST/lib/evil.so" "$T_TMP/evil.c"
	echo /lib/evil.so >"$HOST/etc/ld.so.preload"
	echo "not a loader" >"$HOST/lib64/ld-linux-x86-64.so.2"
	O=$("$NS_ROOT" "$HOST" "$T_TMP/l4" -- write '{"path":"/workspace/w.txt","content":"guest-ok\n"}' read '{"path":"w.txt"}' \
		bash '{"command":"ls /tmp /workspace"}' 2>&1)
	like "$O" 'guest-ok' "an image with a hostile loader and ld.so.preload: the guest starts and its tools work"
	unlike "$O" 'preload-canary' "and no process of ward's loaded the image's preload library"
	# nosuid: a setuid-root program of the image runs as the caller.
	printf '#include <stdio.h>\n#include <unistd.h>\nint main(void) { printf("euid=%%d\\n", (int)geteuid()); return 0; }\n' >"$T_TMP/euid.c"
	gcc -static -o "$BB/bin/euid" "$T_TMP/euid.c" && chmod 4755 "$BB/bin/euid"
	O=$("$NS_ROOT" "$BB" "$T_TMP/l5" --user app -- bash '{"command":"ls -l /bin/euid; /bin/euid"}' 2>&1)
	like "$O" '-rwsr-xr-x' "twin: the image's file is setuid-root in the box"
	like "$O" 'euid=1001' "a setuid-root file of the image gives no privilege (nosuid): it runs as the caller"
	rm -f "$BB/bin/euid"
else
	echo "ok $((T_N += 1)) # SKIP no gcc to build the hostile image's library and the setuid probe"
fi
# nodev: a device node of the image is not a device.
if mknod "$BB/null-node" c 1 3 2>/dev/null; then
	O=$("$NS_ROOT" "$BB" "$T_TMP/l6" -- bash '{"command":"echo x > /null-node; echo rc=$?; echo x > /dev/null && echo box-null-ok"}' 2>&1)
	like "$O" 'Permission denied.*rc=1' "a device node of the image is not honoured (nodev)"
	like "$O" 'box-null-ok' "twin: the box's own /dev/null works"
	rm -f "$BB/null-node"
else
	echo "ok $((T_N += 1)) # SKIP cannot make a device node here (not root)"
fi

# Who a tool command is: the image's User, mapped; Env merged.
O=$("$NS_ROOT" "$BB" "$T_TMP/l7" --user app -- bash '{"command":"id -u; id -g; echo $USER"}' write '{"path":"/workspace/by-tool","content":"x"}' bash '{"command":"ls -ln /workspace/by-tool; echo more >> /workspace/by-tool && echo appended"}' 2>&1)
like "$O" '"text":"1001\\n1002\\napp\\n"' "User \"app\": uid and gid from the image's /etc/passwd, and USER"
like "$O" 'appended' "the file tools act as the same user: a command can change what write made"
like "$("$NS_ROOT" "$BB" "$T_TMP/l7" --user 1001:50 -- bash '{"command":"id -u; id -g"}' 2>&1)" '"text":"1001\\n50\\n"' "User \"1001:50\": both numbers"
like "$("$NS_ROOT" "$BB" "$T_TMP/l7" --user app:staff -- bash '{"command":"id -g"}' 2>&1)" '"text":"50\\n"' "User \"app:staff\": the group by name"
like "$("$NS_ROOT" "$BB" "$T_TMP/l7" --user 4242 -- bash '{"command":"id -u; id -g"}' 2>&1)" '"text":"4242\\n0\\n"' "User \"4242\" with no account: that uid, group 0"
O=$("$NS_ROOT" "$BB" "$T_TMP/l7" --user nosuch -- bash '{"command":"id"}' read '{"path":"/etc/passwd"}' 2>&1)
like "$O" "the image's User \"nosuch\" names no account in its /etc/passwd" "a User with no account: the box is not made, with one line saying why"
unlike "$O" 'root:x:0' "and no tool runs"
like "$("$NS_ROOT" "$BB" "$T_TMP/l7" --user 70000 -- bash '{"command":"id -u"}' 2>&1)" "outside the box's 65536 uids|\"text\":\"70000" "a User past the box's uids is refused (with one uid, it is that uid)"
O=$("$NS_ROOT" "$BB" "$T_TMP/l7" --env FOO=bar --env PATH=/opt/x:/bin --env CI=0 --env DEBIAN_FRONTEND=readline -- bash '{"command":"echo $FOO $PATH $CI $DEBIAN_FRONTEND $TERM"}' 2>&1)
like "$O" '"text":"bar /opt/x:/bin 1 noninteractive dumb\\n"' "Env: the image's variables, its PATH; ward's non-interactive ones win"

done_testing
