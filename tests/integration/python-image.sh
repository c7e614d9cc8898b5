# python_image: the image ward-test/python (busybox's applets, the host's
# python3.11, its libraries and its standard library without its tests),
# made once beside the image fixtures (flock: two runs at once) and
# imported; skips the whole test where it cannot be made. Sourced after
# lib.sh by the vm suites that run a python job (vm-hibernate.sh,
# vm-fork.sh, vm-ws.sh).
python_image() {
	command -v mkfs.erofs >/dev/null || skip_all "mkfs.erofs is not installed (apt-get install erofs-utils)"
	[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 || skip_all "/bin/busybox is not busybox-static's"
	[ -x /usr/bin/python3.11 ] || skip_all "no /usr/bin/python3.11 to put in the test's image"
	FIX=${WARD_IMAGE_FIXTURES:-}
	[ -n "$FIX" ] || skip_all "WARD_IMAGE_FIXTURES is not set (meson test sets it)"
	local oci=$FIX/python.oci.tar
	mkdir -p "$FIX"
	(
		flock 9
		[ -s "$oci" ] && exit 0
		P=$T_TMP/pyimg
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
		python3 "$(dirname "$0")/../images/oci.py" image "$T_TMP/python.oci.tar" --name ward-test/python:latest \
			--env PATH=/usr/sbin:/usr/bin:/sbin:/bin --workdir / --layer "tree:$P:gzip" && mv "$T_TMP/python.oci.tar" "$oci"
	) 9>"$FIX/.python.lock"
	[ -s "$oci" ] || skip_all "the python image could not be made"
	"$WARD" image import "$oci" >/dev/null 2>&1
}
