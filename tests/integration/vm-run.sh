#!/bin/bash
# ward run --backend vm: a run's box is a microVM, and every way the run
# ends leaves nothing of it: a replayed model starts a job that would
# write a canary into the workspace (--rw: the host's directory itself)
# some seconds later; ward is killed (SIGKILL, SIGTERM) or its deadline
# passes; then no VMM and no keeper of the run's box are left and the
# canary is never written (its delay is past the deadline's). Its twin: a run that lives long enough sees its
# job write the canary. Under TCG each box is seconds: the runs are few.
. "$(dirname "$0")/lib.sh"
command -v qemu-system-x86_64 >/dev/null || skip_all "QEMU is not installed (apt-get install qemu-system-x86)"
ls /boot/vmlinuz-* >/dev/null 2>&1 || skip_all "no kernel in /boot (apt-get install linux-image-amd64)"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$HOME/.cache} ANTHROPIC_API_KEY=sk-ant-fake-key
BOXES=$XDG_RUNTIME_DIR/ward/boxes
vmm_left() { pgrep -f "qemu-system-x86_64.*$BOXES/" >/dev/null; }	# a VMM of this test's boxes runs
keeper_left() { # keeper_left NAME: its keeper runs
	[ -n "$1" ] && pgrep -f "^ward-keeper $1\$" >/dev/null
}
nothing_left() { ! vmm_left && ! keeper_left "$1"; }

# Flags: the backend is checked as box create checks it.
E=$("$WARD" run --backend qemu --model replay:/dev/null hi 2>&1); RC=$?
is "$RC $E" "64 ward: --backend: \"qemu\" is not a backend; use ns, vm or auto" "ward run --backend: an unknown backend is refused (64), one line"
echo '{"turns":[{"text":"done"}]}' >"$T_TMP/done.json"
E=$("$WARD" run --backend vm --box some-box --model "replay:$T_TMP/done.json" hi 2>&1); RC=$?
is "$RC" 64 "--backend with --box: refused (64)"
like "$E" "--backend is for the box a run makes; box some-box runs on its own" "saying why"

WS=$T_TMP/ws; mkdir -p "$WS"
runjob() { # runjob NAME DELAY [run flags]: ward run --backend vm in the background; its job writes NAME after DELAY s, then a long call holds the run; RPID
	local n=$1 d=$2; shift 2
	cat >"$T_TMP/$n.json" <<EOF2
{"turns":[
 {"text":"start","tools":[{"name":"bash","input":{"command":"echo started >/workspace/$n.started; sleep $d; echo written >/workspace/$n","background":true}}]},
 {"text":"hold","tools":[{"name":"bash","input":{"command":"i=0; while [ ! -e /workspace/$n ] && [ \$i -lt 600 ]; do sleep 0.2; i=\$((i+1)); done; cat /workspace/$n 2>/dev/null; sleep 60","timeout":180}}]},
 {"text":"done"}]}
EOF2
	"$WARD" run --json --backend vm --rw --model "replay:$T_TMP/$n.json" --workspace "$WS" "$@" "hold" \
		>"$T_TMP/$n.jsonl" 2>"$T_TMP/$n.err" &
	RPID=$!
}
started() { [ -e "$WS/$1.started" ]; }
box_of_run() { ls "$BOXES" 2>/dev/null | head -1; }

# The twin: a run that lives on sees its job write the canary.
runjob twin 2
wait_until 240 started twin; ok $? "twin: the run's job started in its vm box"
wait_until 60 test -e "$WS/twin"; ok $? "twin: the job writes its canary 2 s later"
is "$(cat "$WS/twin" 2>/dev/null)" written "twin: what it wrote"
B=$(box_of_run)
like "$("$WARD" box info "$B" 2>/dev/null)" '"backend":[[:space:]]*"vm"' "twin: the run's box is a vm box"
kill -TERM "$RPID"; wait "$RPID" 2>/dev/null
wait_until 20 nothing_left "$B"; ok $? "twin: after the run, no VMM and no keeper of its box"

for how in KILL TERM deadline; do
	n=canary-$how
	# The job writes its canary D s after it starts: past the deadline,
	# which counts the box's start too (tens of seconds under a loaded TCG).
	D=25; [ $how = deadline ] && D=90
	if [ $how = deadline ]; then runjob "$n" $D --deadline 60s; else runjob "$n" $D; fi
	wait_until 240 started "$n"; ok $? "$how: the run's job started"
	B=$(box_of_run)
	[ -n "$B" ] && vmm_left && keeper_left "$B"; ok $? "$how: its box $B runs (a VMM and a keeper)"
	T0=$(now_ms)
	if [ $how = deadline ]; then
		wait "$RPID"; RC=$?
		is "$RC" 2 "deadline: the run stops at its deadline (exit 2)"
	else
		kill -$how "$RPID"; wait "$RPID" 2>/dev/null
	fi
	wait_until 20 nothing_left "$B"; ok $? "$how: no VMM and no keeper of the box are left ($(( $(now_ms) - T0 )) ms)"
	# The job would have written its canary D s after it started: wait
	# past that, by the started file's age.
	past() { [ $(( $(date +%s) - $(stat -c %Y "$WS/$n.started") )) -gt $((D + 5)) ]; }
	wait_until $((D + 30)) past; ok $? "$how: $((D + 5)) s have passed since the job started"
	[ ! -e "$WS/$n" ]; ok $? "$how: the canary is never written"
	rm -rf "$BOXES"/*
done
done_testing
