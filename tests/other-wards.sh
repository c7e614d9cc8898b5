#!/bin/bash
# Two other wards at work on the machine while the suites run: the suites
# must not depend on being alone (a box list, a cgroup, a port, a lock, a
# directory of /tmp shared with a stranger).
#   other-wards.sh start DIR   starts them, each with a runtime and state
#                              directory of its own under DIR
#   other-wards.sh stop DIR    stops them and says, in TAP, what they did:
#                              each did work, none of it failed, and nothing
#                              of theirs is left (a box, a keeper, a process)
# One is a stream of tasks (`ward run`, a box each, a bash call that writes
# and sorts); the other keeps a box, runs commands in it, and hibernates and
# wakes it every fifth round. WARD: the binary (default: build/cmd/ward).
set -u
cmd=${1:-}
D=${2:-}
[ -n "$cmd" ] && [ -n "$D" ] || { echo "usage: other-wards.sh start|stop DIR" >&2; exit 64; }
WARD=${WARD:-$(cd "$(dirname "$0")/.." && pwd)/build/cmd/ward}
now_ms() { date +%s%3N; }

env_of() { # env_of NAME: the environment of that ward
	echo "XDG_RUNTIME_DIR=$D/$1/run XDG_STATE_HOME=$D/$1/state XDG_CONFIG_HOME=$D/$1/config"
}

tasks() { # a stream of tasks, each its own box
	local ws=$D/tasks/ws
	mkdir -p "$ws"
	printf 'def add(a, b):\n    return a + b\n' >"$ws/calc.py"
	cat >"$D/tasks/replay.json" <<'EOF'
{"turns":[{"text":"working","tools":[{"name":"bash","input":{"command":"for i in $(seq 1 200); do echo $((i * 7919 % 1000)) >n$i; done; cat n* | sort -n | tail -1; rm n*"}}]},{"text":"done"}]}
EOF
	local n=0
	while [ ! -e "$D/stop" ]; do
		n=$((n + 1))
		if env $(env_of tasks) "$WARD" run --workspace "$ws" --model "replay:$D/tasks/replay.json" \
			"round $n" >"$D/tasks/last.out" 2>&1; then
			echo ok >>"$D/tasks/rounds"
		else
			echo "fail: round $n: $(tail -1 "$D/tasks/last.out")" >>"$D/tasks/rounds"
		fi
		sleep 1 # time: pacing, so that the machine is shared, not taken
	done
}

keeper() { # a box that is kept, used, hibernated and woken
	mkdir -p "$D/box/ws"
	local b
	if ! b=$(env $(env_of box) "$WARD" box create --persistent --workspace "$D/box/ws" 2>"$D/box/create.err"); then
		echo "fail: create: $(tail -1 "$D/box/create.err")" >>"$D/box/rounds"
		return
	fi
	echo "$b" >"$D/box/name"
	local n=0
	while [ ! -e "$D/stop" ]; do
		n=$((n + 1))
		if [ $((n % 5)) = 0 ] && ! env $(env_of box) "$WARD" box hibernate "$b" >"$D/box/last.out" 2>&1; then
			echo "fail: hibernate $n: $(tail -1 "$D/box/last.out")" >>"$D/box/rounds"
		elif env $(env_of box) "$WARD" box exec "$b" --timeout 60s -- \
			sh -c 'echo round >>/tmp/rounds; seq 1 20000 | sort -rn | head -1 >/dev/null; wc -l </tmp/rounds' \
			>"$D/box/last.out" 2>&1 && [ "$(cat "$D/box/last.out")" = "$n" ]; then
			echo ok >>"$D/box/rounds"
		else
			echo "fail: round $n: $(tail -1 "$D/box/last.out")" >>"$D/box/rounds"
		fi
		sleep 1 # time: pacing, so that the machine is shared, not taken
	done
	env $(env_of box) "$WARD" box destroy "$b" >/dev/null 2>&1 || echo "fail: destroy" >>"$D/box/rounds"
}

case $cmd in
start)
	[ -x "$WARD" ] || { echo "other-wards.sh: no ward at $WARD (build it, or set WARD)" >&2; exit 1; }
	rm -rf "$D"
	for w in tasks box; do
		mkdir -p "$D/$w/state" "$D/$w/config"
		mkdir -m 700 "$D/$w/run"
		: >"$D/$w/rounds"
	done
	setsid bash -c "$(declare -f env_of tasks); D='$D' WARD='$WARD' tasks" </dev/null >"$D/tasks.log" 2>&1 &
	echo $! >"$D/tasks.pid"
	setsid bash -c "$(declare -f env_of keeper); D='$D' WARD='$WARD' keeper" </dev/null >"$D/box.log" 2>&1 &
	echo $! >"$D/box.pid"
	;;
stop)
	[ -d "$D" ] || { echo "other-wards.sh: $D: not started" >&2; exit 1; }
	touch "$D/stop"
	T=0
	t() { T=$((T + 1)); if [ "$1" = 0 ]; then echo "ok $T - other wards: $2"; else echo "not ok $T - other wards: $2"; fi; }
	for w in tasks box; do
		p=$(cat "$D/$w.pid")
		# A round in flight ends by itself (its bounds are its own).
		until=$(($(now_ms) + 120000))
		while kill -0 "$p" 2>/dev/null && [ "$(now_ms)" -lt $until ]; do sleep 0.1; done
		kill -0 "$p" 2>/dev/null
		t "$((1 - $?))" "the $w ward ended its last round within 120 s"
		kill -KILL -- -"$p" 2>/dev/null
		good=$(grep -c '^ok$' "$D/$w/rounds")
		bad=$(grep -c '^fail' "$D/$w/rounds")
		t "$([ "$good" -gt 0 ]; echo $?)" "the $w ward did $good rounds of work while the suites ran"
		t "$([ "$bad" = 0 ]; echo $?)" "none of the $w ward's rounds failed ($bad did)"
		grep '^fail' "$D/$w/rounds" | head -5 | sed 's/^/#   /'
		left=$(env $(env_of $w) "$WARD" box ls 2>/dev/null | tail -n +2)
		t "$([ -z "$left" ]; echo $?)" "the $w ward left no box behind"
		[ -z "$left" ] || printf '#   %s\n' "$left"
		# Reported, and then not left for the machine's next user.
		for b in $(printf '%s\n' "$left" | awk '{print $1}'); do
			env $(env_of $w) "$WARD" box destroy "$b" >/dev/null 2>&1
		done
	done
	# A process that still has one of their runtime directories (a ward,
	# a keeper, a proxy) was left running by one of them.
	left=$(for e in /proc/[0-9]*/environ; do
		{ tr '\0' '\n' <"$e"; } 2>/dev/null | grep -q "^XDG_RUNTIME_DIR=$D/" || continue
		p=${e#/proc/}; p=${p%/environ}
		echo "$p $({ tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null)"
	done)
	t "$([ -z "$left" ]; echo $?)" "no process of theirs is left running"
	[ -z "$left" ] || printf '#   %s\n' "$left"
	echo "1..$T"
	;;
*)
	echo "usage: other-wards.sh start|stop DIR" >&2
	exit 64
	;;
esac
