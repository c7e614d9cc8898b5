# TAP helpers for tests that drive the real ward binary.
# Each script: . lib.sh; tests...; done_testing
set -u
WARD=${WARD:?set WARD to the ward binary}
export WARD_GUEST=${WARD_GUEST:-}
T_N=0
T_FAILED=0
T_BOXES=""
T_TMP=$(mktemp -d /tmp/ward-test.XXXXXX)
chmod 755 "$T_TMP"
# Workspace layers (and their loop-mounted images, as root) live here.
export XDG_STATE_HOME=$T_TMP/state
# And images (ward image): each test starts with none.
export XDG_DATA_HOME=$T_TMP/data
# No config file or variable of the person running the tests applies.
export XDG_CONFIG_HOME=$T_TMP/config
# And boxes: each test's own runtime directory, so that `ward box ls` lists
# only this test's boxes, whatever other wards on the machine run.
export XDG_RUNTIME_DIR=$T_TMP/run
mkdir -m 700 "$XDG_RUNTIME_DIR"
unset WARD_MODEL ANTHROPIC_MODEL ANTHROPIC_BASE_URL OPENAI_BASE_URL

ok() { # ok COND-EXIT-STATUS DESCRIPTION
	T_N=$((T_N + 1))
	if [ "$1" -eq 0 ]; then echo "ok $T_N - $2"; else echo "not ok $T_N - $2"; T_FAILED=$((T_FAILED + 1)); fi
}
check() { # check DESCRIPTION CMD...
	local d=$1; shift
	if "$@" >/dev/null 2>&1; then ok 0 "$d"; else ok 1 "$d"; echo "#   command failed: $*"; fi
}
is() { # is GOT WANT DESCRIPTION
	if [ "$1" = "$2" ]; then ok 0 "$3"; else ok 1 "$3"; echo "#   got '$1', want '$2'" | head -c 300 | tr '\n' ' '; echo; fi
}
like() { # like TEXT REGEX DESCRIPTION
	if printf '%s' "$1" | grep -Eq -- "$2"; then ok 0 "$3"; else ok 1 "$3"; printf '%s\n' "$1" | head -c 600 | sed 's/^/#   | /'; echo "#   (no /$2/ in the above)"; fi
}
unlike() {
	if printf '%s' "$1" | grep -Eq -- "$2"; then ok 1 "$3"; printf '%s\n' "$1" | head -c 600 | sed 's/^/#   | /'; echo "#   (/$2/ found in the above)"; else ok 0 "$3"; fi
}
lt() { # lt A B DESCRIPTION  (integers)
	if [ "$1" -lt "$2" ]; then ok 0 "$3 ($1 < $2)"; else ok 1 "$3"; echo "#   $1 is not < $2"; fi
}
gone() { # gone PID: not running (no such process, or a zombie nobody reaped yet)
	[ ! -e "/proc/$1/stat" ] || [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -c1)" = Z ]
}
descends() { # descends PATTERN PID: a process whose command line matches PATTERN (pgrep -f) runs under PID
	local p pp
	for p in $(pgrep -f "$1"); do
		pp=$p
		while [ "$pp" -gt 1 ]; do
			pp=$(awk '{ print $4 }' "/proc/$pp/stat" 2>/dev/null) || break
			[ -n "$pp" ] || break
			[ "$pp" = "$2" ] && return 0
		done
	done
	return 1
}
box_calls() { # box_calls BOX N: the box runs N calls
	[ "$("$WARD" box info "$1" 2>/dev/null | json calls_running)" = "$2" ]
}
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
wait_until() { # wait_until SECONDS CMD...: until CMD succeeds (status 0) or SECONDS pass (status 1)
	local until=$(( $(now_ms) + $1 * 1000 )); shift
	while ! "$@"; do [ "$(now_ms)" -lt "$until" ] || return 1; sleep 0.05; done
}
skip_all() { echo "1..0 # SKIP $1"; exit 0; }

box_new() { # box_new [create flags] -> name (destroyed at exit)
	local n
	n=$("$WARD" box create --persistent "$@") || return 1
	# Called as $(box_new ...), a subshell: remember the name in a file.
	echo "$n" >>"$T_TMP/boxes"
	echo "$n"
}
json() { # json KEY < JSON
	python3 -c 'import json,sys; v=json.load(sys.stdin); k=sys.argv[1]
for p in k.split("."): v=v.get(p) if isinstance(v,dict) else None
print("" if v is None else (json.dumps(v) if not isinstance(v,str) else v))' "$1"
}
tool() { # tool BOX NAME JSON -> prints result JSON
	"$WARD" box tool "$@"
}

audit_box() { # audit_box GUEST_PID CMD...: CMD runs a call in the box while
	# fd-audit.py checks every descriptor of every process in it; sets AUD, AUD_RC
	local gp=$1; shift
	"$@" >/dev/null 2>&1 &
	local xp=$!
	# Audited once the call's command runs: a sleep under the guest.
	wait_until 10 descends '^sleep ' "$gp" || echo "# audit_box: no sleep under $gp within 10 s"
	AUD=$(python3 "$(dirname "$0")/fd-audit.py" "$gp" 2>&1); AUD_RC=$?
	wait $xp
}
calls_view() { # calls_view BOX CANARY: while another call runs sleep as CANARY,
	# VIEW is what a second call sees: its /proc/1/cmdline, ps, the count of /proc's pids
	"$WARD" box exec "$1" -- "exec -a $2 sleep 8" >/dev/null 2>&1 &
	local xp=$!
	# The box runs the call, and (where the host sees the box's processes:
	# not on vm) its canary has started.
	wait_until 10 box_calls "$1" 1 || echo "# calls_view: no call running in $1 within 10 s"
	wait_until 3 pgrep -f "^$2 8\$" >/dev/null
	VIEW=$("$WARD" box exec "$1" -- 'cat /proc/1/cmdline | tr "\0" " "; echo; ps -eo args; ls /proc | grep -c "^[0-9]"' 2>&1)
	kill $xp 2>/dev/null; wait $xp 2>/dev/null
}
# io_uring_setup(8 entries): "io_uring_setup FD ok" or "io_uring_setup -1 ERROR".
IOU_PROBE='import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
p = ctypes.create_string_buffer(120)
r = libc.syscall(425, 8, p)
print("io_uring_setup", r, os.strerror(ctypes.get_errno()) if r < 0 else "ok")'

# Image fixtures (tests/images/make-fixtures.sh), made once and cached in
# the build directory. image_fixtures [busybox|debian]...: FIX is where they
# are; the whole test skips, saying why, when one of those named cannot be
# made here. Call it before the first test.
image_fixtures() {
	FIX=${WARD_IMAGE_FIXTURES:-}
	[ -n "$FIX" ] || skip_all "WARD_IMAGE_FIXTURES is not set (meson test sets it)"
	sh "$(dirname "$0")/../images/make-fixtures.sh" "$FIX" >"$T_TMP/fixtures.log" 2>&1 ||
		skip_all "the image fixtures could not be made: $(tail -1 "$T_TMP/fixtures.log")"
	local p why
	for p in "$@"; do
		why=$(grep "^$p:" "$FIX/missing")
		[ -z "$why" ] || skip_all "$why"
	done
}
image_have() { ! grep -q "^$1:" "$FIX/missing"; }	# image_have busybox|debian: that fixture was made
image_tree() { echo "$XDG_DATA_HOME/ward/images/trees/${1#sha256:}/root"; }	# image_tree DIGEST: its unpacked tree
skip() { T_N=$((T_N + 1)); echo "ok $T_N # SKIP $1"; }	# skip WHY: one test skipped

FAKE=$(dirname "$0")/../fake-llm.py
SRV=""
serve() { # serve SCENARIO [SERVER FLAGS]: start the fake LLM server; sets URL and LOG
	[ -n "$SRV" ] && { kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null; }
	local sc=$1; shift
	LOG=$T_TMP/req-$sc.jsonl
	rm -f "$T_TMP/port"
	python3 "$FAKE" --scenario "$sc" --port-file "$T_TMP/port" --log "$LOG" "$@" &
	SRV=$!
	for _ in $(seq 100); do [ -s "$T_TMP/port" ] && break; sleep 0.05; done
	URL=http://127.0.0.1:$(cat "$T_TMP/port")
}

box_run() { # box_run BOX NAME: a ward run on BOX (--box, the fake server's "tool"
	# scenario) with --patch $T_TMP/NAME.patch; sets RUN_RC and SID, its
	# events in $T_TMP/NAME.out
	serve tool
	"$WARD" run --provider anthropic --base-url "$URL" --model fake-model --box "$1" --json \
		--patch "$T_TMP/$2.patch" "write a file" >"$T_TMP/$2.out" 2>"$T_TMP/$2.err" </dev/null
	RUN_RC=$?
	SID=$(tail -1 "$T_TMP/$2.out" | json session)
}

nreq() { [ -e "$LOG" ] && wc -l <"$LOG" | tr -d ' ' || echo 0; }	# requests the fake server logged
req() { sed -n "${1}p" "$LOG"; }	# request N, as the fake server logged it

done_testing() {
	# The fake LLM server holds the test's output open: it goes first.
	[ -n "$SRV" ] && { kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null; }
	for b in $T_BOXES $(cat "$T_TMP/boxes" 2>/dev/null); do "$WARD" box destroy "$b" >/dev/null 2>&1; done
	# A terminal session's box outlives it, hibernated: the ones over this
	# test's workspaces go too.
	for b in $("$WARD" box ls --json 2>/dev/null | python3 -c 'import json,sys
for b in json.load(sys.stdin):
    if (b.get("workspace") or "").startswith(sys.argv[1]): print(b["name"])' "$T_TMP/"); do
		"$WARD" box destroy "$b" >/dev/null 2>&1
	done
	# Kept workspace layers are loop-mounted images where ward runs as root;
	# a ward still ending (a session's hangup) may mount one as it goes.
	for _ in $(seq 15); do
		ms=$(awk -v t="$T_TMP/" 'index($2, t) == 1 { print $2 }' /proc/mounts | sort -r)
		[ -z "$ms" ] && break
		for m in $ms; do umount -l "$m" 2>/dev/null; done
		sleep 0.2
	done
	rm -rf "$T_TMP"
	echo "1..$T_N"
	[ "$T_FAILED" -eq 0 ]
}

# Validate every line of an events file (ward run --json) against
# tests/run-events.schema.json; prints "valid N" or the first error.
validate_events() {
	python3 - "$(dirname "$0")/../run-events.schema.json" "$1" <<'PY'
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
n = 0
for line in open(sys.argv[2]):
    jsonschema.validate(json.loads(line), schema)
    n += 1
print("valid", n)
PY
}
