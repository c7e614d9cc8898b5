#!/bin/sh
# The image tests' fixtures, built here from Debian's archive and cached in
# OUT (the build directory's tests/images: a second run is instant):
#   busybox.oci.tar, busybox.docker.tar   busybox-static alone: /bin/busybox,
#       its applet links, /etc/os-release (ID=ward-busybox); three layers
#       (gzip, zstd, none) with a whiteout, an opaque directory and a hard
#       link to a lower layer's file; Env WARD_IMAGE=busybox, WorkingDir /
#   debian.oci.tar, debian.docker.tar     mmdebstrap --variant=minbase
#       bookworm (Env WARD_IMAGE=debian, WorkingDir /root), and hello.deb
#       beside it (package ward-hello: /usr/bin/ward-hello prints "hello
#       from ward-hello")
#   hostile-*.oci.tar and their twins     what tests/integration/image.sh
#       refuses or makes harmless (oci.py's made()); readonly.oci.tar:
#       directories of mode 0555 and 0000 (a tree an ordinary user removes)
# A piece that cannot be made here (no busybox-static, no mmdebstrap or
# no network) is left out, and OUT/missing says why; the tests that need
# it skip with that reason.
#   make-fixtures.sh OUT
set -eu
OUT=$1
HERE=$(cd "$(dirname "$0")" && pwd)
OCI="python3 $HERE/oci.py"
mkdir -p "$OUT"
# Two tests making them at once: one makes, the other waits.
exec 9>"$OUT/.lock"
flock 9
# Bump when what is made changes: everything is made again.
V=5
[ -e "$OUT/.v$V" ] && exit 0
rm -rf "$OUT"/*.tar "$OUT"/*.deb "$OUT"/missing "$OUT"/.v* "$OUT"/work
W=$OUT/work
mkdir -p "$W"
: >"$OUT/missing"

docker_archive() { # docker_archive NAME [OCI]: NAME.docker.tar from NAME.oci.tar (or OCI)
	skopeo --tmpdir "$W" copy --quiet "oci-archive:${2:-$OUT/$1.oci.tar}" "docker-archive:$OUT/$1.docker.tar:ward-test/$1:latest"
}

# busybox-static alone.
if [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; then
	T=$W/busybox
	mkdir -p "$T/bin" "$T/etc" "$T/usr/share/ward/old"
	cp /bin/busybox "$T/bin/busybox"
	for a in $(/bin/busybox --list-full); do
		[ "$a" = bin/busybox ] && continue
		mkdir -p "$T/$(dirname "$a")"
		ln -s /bin/busybox "$T/$a"
	done
	# What the second layer changes.
	echo "ID=not-yet" >"$T/etc/os-release"
	echo a >"$T/usr/share/ward/old/a"
	echo b >"$T/usr/share/ward/old/b"
	echo gone >"$T/usr/share/ward/gone"
	$OCI image "$OUT/busybox.oci.tar" --name ward-test/busybox:latest \
		--env PATH=/usr/sbin:/usr/bin:/sbin:/bin --env WARD_IMAGE=busybox --workdir / \
		--layer "tree:$T:gzip" --layer made:overlay2:zstd --layer made:overlay3:none
	# A docker archive holds no zstd layer: the same image, gzip.
	$OCI image "$W/busybox-gz.oci.tar" --name ward-test/busybox:latest \
		--env PATH=/usr/sbin:/usr/bin:/sbin:/bin --env WARD_IMAGE=busybox --workdir / \
		--layer "tree:$T:gzip" --layer made:overlay2:gzip --layer made:overlay3:none
	docker_archive busybox "$W/busybox-gz.oci.tar"
	# Hostile images, and their twins (one layer each but where said).
	for h in suid dev dotdot abs hardlink bigfile files3000 size longpath; do
		$OCI image "$OUT/hostile-$h.oci.tar" --name "ward-test/hostile-$h:latest" --layer "made:$h"
	done
	$OCI image "$OUT/hostile-bomb.oci.tar" --name ward-test/hostile-bomb:latest --layer made:bomb:zstd
	$OCI image "$OUT/hostile-links.oci.tar" --name ward-test/hostile-links:latest \
		--layer "tree:$T:gzip" --layer made:links --layer made:through
	$OCI image "$OUT/twin-usrmerge.oci.tar" --name ward-test/twin-usrmerge:latest \
		--layer made:usrmerge1 --layer made:usrmerge2
	$OCI image "$OUT/readonly.oci.tar" --name ward-test/readonly:latest --layer made:readonly
	$OCI index "$OUT/multiarch.oci.tar" --name ward-test/multiarch:latest \
		--image arm64=made:arch-arm64 --image amd64=made:arch-amd64
	$OCI image "$OUT/foreign.oci.tar" --name ward-test/foreign:latest --arch arm64 --layer made:arch-arm64
else
	echo "busybox: /bin/busybox is not busybox-static's (apt-get install busybox-static)" >>"$OUT/missing"
fi

# Debian minimal, and a small .deb for dpkg -i.
if command -v mmdebstrap >/dev/null 2>&1 && mmdebstrap --quiet --variant=minbase bookworm "$W/debian.tar" 2>"$W/mmdebstrap.log"; then
	$OCI image "$OUT/debian.oci.tar" --name ward-test/debian:bookworm \
		--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env LANG=C.UTF-8 \
		--env WARD_IMAGE=debian --workdir /root --layer "tar:$W/debian.tar:gzip"
	docker_archive debian
	P=$W/hello
	mkdir -p "$P/DEBIAN" "$P/usr/bin"
	printf 'Package: ward-hello\nVersion: 1.0\nArchitecture: all\nMaintainer: ward tests <tests@ward.invalid>\nDescription: a package for the image tests\n' >"$P/DEBIAN/control"
	printf '#!/bin/sh\necho hello from ward-hello\n' >"$P/usr/bin/ward-hello"
	chmod 755 "$P/usr/bin/ward-hello"
	dpkg-deb --root-owner-group --build "$P" "$OUT/hello.deb" >/dev/null
else
	echo "debian: mmdebstrap could not make a bookworm tree (apt-get install mmdebstrap; it needs Debian's archive): $(tail -1 "$W/mmdebstrap.log" 2>/dev/null)" >>"$OUT/missing"
fi
rm -rf "$W"
touch "$OUT/.v$V"
