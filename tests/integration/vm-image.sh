#!/bin/bash
# vm boxes with an image's root: the image's tree reaches the VM as a
# read-only erofs block device, made once per image and shared by its
# boxes; the box's changes live on its own disk; and a box of an image is
# restored from the same snapshot as any vm box, not cold-booted. The
# images are the image tests' fixtures (lib.sh's image_fixtures), imported
# into a store of this test's.
. "$(dirname "$0")/lib.sh"
command -v qemu-system-x86_64 >/dev/null || skip_all "QEMU is not installed (apt-get install qemu-system-x86)"
ls /boot/vmlinuz-* >/dev/null 2>&1 || skip_all "no kernel in /boot (apt-get install linux-image-amd64)"
command -v mkfs.erofs >/dev/null || skip_all "mkfs.erofs is not installed (apt-get install erofs-utils)"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$HOME/.cache} ANTHROPIC_API_KEY=sk-ant-fake-key
image_fixtures
qemu_of() { pgrep -f "qemu-system-x86_64.*/$1/" | head -1; }
drive_of() { # drive_of BOX ID: the file behind the VM's -drive ID
	tr '\0' '\n' <"/proc/$(qemu_of "$1")/cmdline" | grep "^if=none,id=$2," | sed 's/.*,file=//'
}
WS=$T_TMP/ws
mkdir -p "$WS"

if image_have debian; then
	DIG=$("$WARD" image import "$FIX/debian.oci.tar" 2>/dev/null | head -1)
	like "$DIG" "^sha256:[0-9a-f]{64}$" "the Debian image is imported"
	cp "$FIX/hello.deb" "$WS/"
	TREE=$(dirname "$(image_tree "$DIG")")
	t0=$(now_ms)
	B=$(box_new --backend vm --image ward-test/debian:bookworm --workspace "$WS")
	MS=$(( $(now_ms) - t0 ))
	like "$B" "^box-" "a vm box of the Debian image ($MS ms, its erofs made first)"
	EROFS=$TREE/root.erofs
	[ -f "$EROFS" ] && [ "$(drive_of "$B" root)" = "$EROFS" ]; ok $? "its root is the image's erofs, beside the unpacked tree"
	SUM=$(md5sum <"$EROFS")
	like "$("$WARD" box info "$B")" '"restored":.*true' "restored from the snapshot, not cold-booted"
	like "$("$WARD" box exec "$B" -- 'cat /etc/os-release')" 'ID=debian' "--image: the box's /etc/os-release is the image's"
	U=$("$WARD" box exec "$B" -- 'cut -d" " -f1 /proc/uptime')
	lt "$MS" "$(awk -v u="$U" 'BEGIN { printf "%d", u * 1000 }')" "its uptime ($U s) counts the template's boot: longer than the create took"
	R=$("$WARD" box exec "$B" -- 'id -u; dpkg -i /workspace/hello.deb && ward-hello && dpkg -s ward-hello | grep Status' 2>&1)
	like "$R" "^0" "tool commands run as the VM's root"
	like "$R" "hello from ward-hello" "dpkg -i of a local .deb works in the box"
	like "$R" "install ok installed" "and dpkg knows it"
	[ ! -e /usr/bin/ward-hello ] && [ ! -e "$TREE/root/usr/bin/ward-hello" ] && [ "$(md5sum <"$EROFS")" = "$SUM" ]
	ok $? "the host, the unpacked tree and the erofs are unchanged"
	like "$(cat "/proc/$(qemu_of "$B")/cmdline" | tr '\0' ' ')" "path=[^ ,]*/vmm/empty,.*readonly=on" \
		"a box with an image gets no share of the host's /usr (an empty directory)"
	B2=$(box_new --backend vm --image ward-test/debian:bookworm)
	like "$("$WARD" box exec "$B2" -- 'ward-hello; dpkg -s ward-hello' 2>&1)" "not found|not installed" \
		"the next box of the image is clean"
	[ "$(drive_of "$B2" root)" = "$EROFS" ] && [ "$(ls "$TREE" | grep -c erofs$)" = 1 ]
	ok $? "two boxes of one image share one erofs file"
	like "$("$WARD" box info "$B2")" '"restored":.*true' "and the second is restored from the snapshot too"
	"$WARD" box hibernate "$B" >/dev/null
	like "$("$WARD" box exec "$B" -- ward-hello 2>&1)" "hello from ward-hello" "hibernated and woken, the installed package is there"
	DISK=$XDG_STATE_HOME/ward/disks/$B.img
	"$WARD" box destroy "$B"
	[ ! -e "$DISK" ] && [ -f "$EROFS" ]; ok $? "destroy removes the box's disk, not the image's erofs"
	"$WARD" box destroy "$B2"
else
	skip "$(grep '^debian:' "$FIX/missing")"
fi

if image_have busybox; then
	"$WARD" image import "$FIX/busybox.oci.tar" >/dev/null 2>&1
	BB=$(box_new --backend vm --image ward-test/busybox)
	T() { "$WARD" box tool "$BB" "$@" 2>&1; }
	txt() { printf '%s' "$1" | json text 2>/dev/null; }
	like "$(txt "$(T read '{"path":"/etc/os-release"}')")" "ID=ward-busybox" "busybox image: read"
	like "$(T write '{"path":"/tmp/w.txt","content":"bee\n"}')" '"outcome":.*"ok"' "busybox image: write"
	like "$(T edit '{"path":"/tmp/w.txt","old_string":"bee","new_string":"BEE"}')" '"outcome":.*"ok"' "busybox image: edit"
	like "$(txt "$(T grep '{"pattern":"BEE","path":"/tmp","mode":"content"}')")" "w.txt:1:BEE" "busybox image: grep"
	like "$(txt "$(T find '{"pattern":"*.txt","path":"/tmp"}')")" "w.txt" "busybox image: find"
	like "$(txt "$(T ls '{"path":"/bin"}')")" "busybox" "busybox image: ls"
	like "$("$WARD" box exec "$BB" -- 'cat /tmp/w.txt; echo $0; busybox | head -1' 2>&1 | tr '\n' ' ')" "BEE sh BusyBox" \
		"busybox image: bash runs busybox sh"
	"$WARD" box destroy "$BB"
	# A warm pool of the image's boxes: a create of the image takes one, a
	# create of the host view does not.
	"$WARD" box pool --backend vm --size 1 --image ward-test/busybox 2>"$T_TMP/pool.err" &
	POOL=$!
	trap 'kill -9 $POOL 2>/dev/null' EXIT
	P=""
	for _ in $(seq 600); do
		P=$("$WARD" box ls --json | python3 -c 'import json,sys
print(" ".join(b["name"] for b in json.load(sys.stdin) if b.get("state") == "pooled"))')
		[ -n "$P" ] && break
		sleep 0.1
	done
	like "$P" "^box-" "a pool of the image's boxes fills"
	N=$(box_new --backend vm)
	[ -n "$N" ] && [ "$N" != "$P" ]; ok $? "a create of the host view does not take the image's pool box"
	I=$(box_new --backend vm --image ward-test/busybox)
	is "$I" "$P" "a create of the image takes it"
	like "$(txt "$("$WARD" box tool "$I" read '{"path":"/etc/os-release"}')")" "ID=ward-busybox" "and it is a box of the image"
	kill "$POOL"; wait "$POOL" 2>/dev/null
	trap - EXIT
else
	skip "$(grep '^busybox:' "$FIX/missing")"
fi
done_testing
