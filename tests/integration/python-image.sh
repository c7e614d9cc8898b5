# python_image: the image ward-test/python (tests/images/make-python.sh),
# made once beside the image fixtures and imported; skips the whole test
# where it cannot be made. Sourced after lib.sh by the vm suites that run
# a python job (vm-hibernate.sh, vm-fork.sh, vm-ws.sh).
python_image() {
	FIX=${WARD_IMAGE_FIXTURES:-}
	[ -n "$FIX" ] || skip_all "WARD_IMAGE_FIXTURES is not set (meson test sets it)"
	sh "$(dirname "$0")/../images/make-python.sh" "$FIX" 2>"$T_TMP/python-image.err" ||
		skip_all "the python image could not be made: $(tail -1 "$T_TMP/python-image.err")"
	"$WARD" image import "$FIX/python.oci.tar" >/dev/null 2>&1
}
