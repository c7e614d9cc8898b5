#!/bin/bash
# An ns box made with --image: its root copy-on-write over the image's
# unpacked tree (shared, never written), the guest and its tools brought
# in from outside, the image's config honoured; the busybox-only fixture
# and the Debian minimal one (tests/images/make-fixtures.sh).
. "$(dirname "$0")/lib.sh"
image_fixtures busybox
"$WARD" image import "$FIX/busybox.oci.tar" >/dev/null 2>&1 </dev/null
BBD=$("$WARD" image ls --json | python3 -c 'import json,sys; print([i["digest"] for i in json.load(sys.stdin) if "docker.io/ward-test/busybox:latest" in i["names"]][0])')
TREE=$(image_tree "$BBD")
TREESUM() { (cd "$1" && find . -printf '%p %m %U %G %s %T@\n' | sort | md5sum); }
SUM0=$(TREESUM "$TREE")

# ---- busybox alone: no libc, no bash
WS=$T_TMP/ws
mkdir -p "$WS"
echo "needle in the workspace" >"$WS/w.txt"
B=$(box_new --image ward-test/busybox --workspace "$WS")
like "$("$WARD" box exec "$B" -- 'cat /etc/os-release' 2>&1)" "^PRETTY_NAME=\"ward busybox\"" "--image busybox: the box's root is the image's"
O=$(tool "$B" write '{"path":"new.txt","content":"from the write tool\n"}'; tool "$B" read '{"path":"new.txt"}'
	tool "$B" grep '{"pattern":"needle","mode":"content"}'; tool "$B" find '{"pattern":"*.txt"}'
	tool "$B" ls '{"path":"/bin"}'; tool "$B" edit '{"path":"new.txt","old_string":"write tool","new_string":"edit tool"}')
like "$O" 'created /workspace/new.txt' "busybox image: write"
like "$O" '1\\tfrom the write tool' "read"
like "$O" 'w.txt:1:needle' "grep"
like "$O" 'new.txt' "find"
like "$O" 'busybox' "ls"
like "$O" '1 replacement' "edit"
like "$("$WARD" box exec "$B" -- 'echo $SHELL; cat new.txt; echo $WARD_IMAGE; pwd' 2>&1 | tr '\n' ' ')" \
	"^/bin/sh from the edit tool busybox /workspace" "bash through busybox sh, with the image's Env, in /workspace (the box has a workspace)"
like "$("$WARD" box run --image ward-test/busybox -- 'pwd' 2>&1)" "^/$" "with no workspace, calls start in the image's WorkingDir (/)"
like "$("$WARD" box exec "$B" -- 'echo changed > /etc/os-release; mkdir -p /opt/x; echo ok' 2>&1)" "^ok" "the image's root is writable in the box"
is "$(TREESUM "$TREE")" "$SUM0" "and the image's unpacked tree is unchanged"
like "$("$WARD" box run --image ward-test/busybox -- 'cat /etc/os-release; ls /opt 2>&1' 2>&1 | tr '\n' ' ')" \
	"PRETTY_NAME=\"ward busybox\".*No such file" "the next box of the image is clean"
# Every descriptor, on an image too.
GP=$("$WARD" box info "$B" | json guest_pid)
audit_box "$GP" "$WARD" box exec "$B" -- 'sleep 2 & sleep 2'
is "$AUD_RC" 0 "fd audit on an image: no descriptor in the box points outside it"
like "$AUD" "in [3-9] processes, 0 bad" "the guest, a call's init, its command and a child were checked"
UP=$(printf '/..%.0s' $(seq 16))
SECRET=$T_TMP/secret.txt
echo "host-secret-$$" >"$SECRET"
hits=0
for fd in $(seq 0 12); do
	tool "$B" read "{\"path\":\"/proc/self/fd/$fd$UP$SECRET\"}" 2>&1 | grep -q "host-secret-$$" && hits=$((hits + 1))
done
for p in /proc/1/root /proc/self/root /proc/1/cwd; do
	tool "$B" read "{\"path\":\"$p$SECRET\"}" 2>&1 | grep -q "host-secret-$$" && hits=$((hits + 1))
done
is "$hits" 0 "on an image, no file tool reaches the host through a /proc link"
like "$("$WARD" box exec "$B" -- 'cp /bin/busybox /tmp/s; chmod 4755 /tmp/s; echo rc=$?' 2>&1 | tr '\n' ' ')" \
	"Operation not permitted.*rc=1" "on an image, a setuid bit is refused"
like "$("$WARD" box exec "$B" -- 'grep -E "^CapEff" /proc/self/status; id -u' 2>&1 | tr '\n' ' ')" "00000000200425fb 0" \
	"on an image, tool commands are the box's root with the default capabilities"
"$WARD" box hibernate "$B" >/dev/null 2>"$T_TMP/err"
is "$?" 1 "a box of an image without GNU tar cannot be hibernated"
like "$(cat "$T_TMP/err")" "its /tmp cannot be saved, so it cannot be hibernated.*the box still runs" "with one line saying why"
like "$("$WARD" box exec "$B" -- 'cat /workspace/new.txt' 2>&1)" "from the edit tool" "twin: and it runs on, as it was"
"$WARD" box destroy "$B"

# ---- Debian minimal: dpkg -i, the root's changes through a hibernate
if image_have debian; then
	"$WARD" image import "$FIX/debian.oci.tar" >/dev/null 2>&1 </dev/null
	DD=$("$WARD" image ls --json | python3 -c 'import json,sys; print([i["digest"] for i in json.load(sys.stdin) if "docker.io/ward-test/debian:bookworm" in i["names"]][0])')
	DT=$(image_tree "$DD")
	DSUM=$(md5sum "$DT/var/lib/dpkg/status" | cut -d' ' -f1; ls "$DT/usr/bin" | md5sum)
	cp "$FIX/hello.deb" "$WS/"
	D=$(box_new --image ward-test/debian:bookworm --workspace "$WS")
	like "$("$WARD" box exec "$D" -- 'cd /workspace && dpkg -i hello.deb >/dev/null 2>&1; ward-hello; echo $WARD_IMAGE' 2>&1 | tr '\n' ' ')" \
		"hello from ward-hello debian" "--image debian: dpkg -i of a local .deb works in the box"
	is "$(md5sum "$DT/var/lib/dpkg/status" | cut -d' ' -f1; ls "$DT/usr/bin" | md5sum)" "$DSUM" "and the image's dpkg database and /usr/bin are unchanged"
	if "$WARD" box info "$D" | json root_user | grep -q "65536 uids"; then
		like "$("$WARD" box exec "$D" -- 'touch /tmp/a && chown _apt /tmp/a && stat -c %U /tmp/a' 2>&1)" "^_apt$" "chown to the image's _apt works"
	else
		skip "the box has one uid here"
	fi
	"$WARD" box hibernate "$D" >/dev/null
	like "$("$WARD" box exec "$D" -- 'ward-hello' 2>&1)" "hello from ward-hello" "an image box's installed package survives a hibernate and wake"
	like "$("$WARD" box run --image ward-test/debian:bookworm -- 'command -v ward-hello || echo not-here' 2>&1)" "not-here" "and the next box of the image does not have it"
	L=$("$WARD" box info "$D" | json workspace_changes)
	"$WARD" box destroy "$D"
	check "destroy removes the box's layers, the root's with them" test ! -e "$(dirname "$L")"
else
	skip "$(grep '^debian:' "$FIX/missing")"
fi

done_testing
