#!/bin/sh
# The image ward-test/python, made once in OUT (OUT/python.oci.tar; flock:
# two makers at once, one makes, the other waits): busybox's applets, the
# host's python3.11, its libraries and its standard library without its
# tests. What the vm suites that run a python job use (vm-hibernate.sh,
# vm-fork.sh, vm-ws.sh, through python-image.sh) and the benchmark's vm
# hibernate and fork rows. Exits non-zero, saying why in one line, where
# it cannot be made here.
#   make-python.sh OUT
set -eu
OUT=$1
HERE=$(cd "$(dirname "$0")" && pwd)
command -v mkfs.erofs >/dev/null || { echo "mkfs.erofs is not installed (apt-get install erofs-utils)" >&2; exit 1; }
{ [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; } || { echo "/bin/busybox is not busybox-static's" >&2; exit 1; }
[ -x /usr/bin/python3.11 ] || { echo "no /usr/bin/python3.11 to put in the image" >&2; exit 1; }
mkdir -p "$OUT"
exec 9>"$OUT/.python.lock"
flock 9
[ -s "$OUT/python.oci.tar" ] && exit 0
P=$(mktemp -d "$OUT/pyimg.XXXXXX")
trap 'rm -rf "$P" "$OUT/python.tmp.oci.tar"' EXIT
mkdir -p "$P/bin" "$P/usr/bin" "$P/tmp" "$P/etc"
cp /bin/busybox "$P/bin/busybox"
for a in $(/bin/busybox --list-full); do
	[ "$a" = bin/busybox ] && continue
	mkdir -p "$P/$(dirname "$a")"
	ln -sf /bin/busybox "$P/$a"
done
cp /usr/bin/python3.11 "$P/usr/bin/"
ln -sf python3.11 "$P/usr/bin/python3"
for l in $(ldd /usr/bin/python3.11 | grep -o '/lib[^ ]*'); do mkdir -p "$P$(dirname "$l")"; cp -L "$l" "$P$l"; done
tar -C / --exclude='*/test' --exclude='*/tests' --exclude='*/idlelib' --exclude='*/tkinter' \
	--exclude='*/ensurepip' --exclude='*/__pycache__' --exclude='config-3.11-*' -cf - usr/lib/python3.11 |
	tar -C "$P" -xf -
echo "ID=ward-python" >"$P/etc/os-release"
python3 "$HERE/oci.py" image "$OUT/python.tmp.oci.tar" --name ward-test/python:latest \
	--env PATH=/usr/sbin:/usr/bin:/sbin:/bin --workdir / --layer "tree:$P:gzip"
mv "$OUT/python.tmp.oci.tar" "$OUT/python.oci.tar"
