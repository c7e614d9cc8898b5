#!/bin/bash
# A warm pool: `ward box pool --size N` keeps N boxes made ahead (a vm box
# restored and waiting for START, an ns box made whole); `ward box create`
# of the same kind takes one (its name is a pool box's, the pool's count
# drops and is made up again); a create of another kind does not; the
# pool's boxes go with the pool, killed or stopped. The same suite runs for
# each backend here. (What a pool buys is measured in bench/, not here.)
. "$(dirname "$0")/lib.sh"

pooled() { "$WARD" box ls --json | python3 -c 'import json,sys
print(" ".join(sorted(b["name"] for b in json.load(sys.stdin) if b.get("state") == "pooled")))'; }
npooled() { local p; p=$(pooled); set -- $p; echo $#; }
wait_pooled() { # wait_pooled N MS
	local until=$(($(now_ms) + $2))
	while [ "$(now_ms)" -lt $until ]; do [ "$(npooled)" = "$1" ] && return 0; sleep 0.1; done
	return 1
}

ERR=$("$WARD" box pool --backend ns 2>&1); RC=$?
is "$RC" 64 "box pool without --size: refused (64)"
like "$ERR" "--size N is needed" "with one line"
ERR=$("$WARD" box pool --backend ns --size 0 2>&1); RC=$?
like "$ERR" '--size: "0" is not a number of boxes from 1 to 64' "--size 0: refused"
ERR=$("$WARD" box pool --backend ns --size 1 --name x 2>&1); RC=$?
is "$RC" 64 "--name: refused (a pool names its boxes)"
ERR=$("$WARD" box pool --backend ns --size 1 --secret K 2>&1); RC=$?
ok "$([ "$RC" -ne 0 ]; echo $?)" "--secret: refused (a pool box holds none: $ERR)"

POOL= POOL2=
trap 'kill -9 $POOL $POOL2 2>/dev/null' EXIT
suite() { # suite BACKEND
	local BE=$1 X Y
	"$WARD" box pool --backend $BE --size 2 2>"$T_TMP/pool.err" &
	POOL=$!
	wait_pooled 2 60000
	ok $? "$BE: the pool fills: 2 boxes waiting ($(tail -1 "$T_TMP/pool.err"))"
	P1=$(pooled)
	for b in $P1; do
		OUT=$("$WARD" box exec "$b" -- true 2>&1); RC=$?
		ok "$([ "$RC" -ne 0 ]; echo $?)" "$BE: a call to a pool box is refused"
		like "$OUT" "waits in a pool" "$BE: saying it waits in a pool"
		break
	done

	B=$("$WARD" box create --backend $BE --persistent --label via=pool)
	is "$?" 0 "$BE: a create of the pool's kind"
	ok "$([ -n "$B" ]; echo $?)" "$BE: the create named its box"
	like " $P1 " " $B " "$BE: takes a box from the pool (its name is a pool box's)"
	is "$("$WARD" box info "$B" | json state)" running "$BE: running"
	is "$("$WARD" box exec "$B" -- echo hi)" hi "$BE: a call works in it"
	is "$("$WARD" box info "$B" | json labels.via)" pool "$BE: with the create's labels"
	like "$("$WARD" box info "$B" | json persistent)" "true" "$BE: and its lifetime"
	wait_pooled 2 60000
	ok $? "$BE: the pool makes another: 2 waiting again"
	unlike " $(pooled) " " $B " "$BE: the box taken is not the pool's any more"

	C=$("$WARD" box create --backend $BE --persistent --memory 512M)
	is "$?" 0 "$BE: a create of another kind (--memory 512M)"
	unlike " $P1 $(pooled) " " $C " "$BE: is a box of its own, not the pool's"
	is "$(npooled)" 2 "$BE: and the pool keeps its 2"
	"$WARD" box destroy "$C"

	# Two creates at once: each gets its own box.
	"$WARD" box create --backend $BE --persistent >"$T_TMP/x" &
	XP=$!
	"$WARD" box create --backend $BE --persistent >"$T_TMP/y" &
	YP=$!
	wait "$XP" "$YP"
	X=$(cat "$T_TMP/x") Y=$(cat "$T_TMP/y")
	ok "$([ -n "$X" ] && [ -n "$Y" ] && [ "$X" != "$Y" ]; echo $?)" "$BE: two creates at once take two different boxes ($X, $Y)"
	# Restored from one snapshot, each got its own entropy when it was taken.
	RX=$("$WARD" box exec "$X" -- sh -c 'head -c 16 /dev/urandom | od -An -tx1')
	RY=$("$WARD" box exec "$Y" -- sh -c 'head -c 16 /dev/urandom | od -An -tx1')
	ok "$([ -n "$RX" ] && [ "$RX" != "$RY" ]; echo $?)" "$BE: two boxes from one pool draw different random bytes"
	"$WARD" box destroy "$X" "$Y" 2>/dev/null

	# The pool's boxes go with it: SIGTERM destroys them; a box taken stays.
	wait_pooled 2 60000
	kill -TERM "$POOL"
	wait "$POOL"
	is "$?" 0 "$BE: the pool ends on SIGTERM"
	is "$(npooled)" 0 "$BE: and its waiting boxes are destroyed"
	is "$("$WARD" box info "$B" | json state)" running "$BE: a box taken from it stays"
	"$WARD" box destroy "$B"

	# A pool killed outright: its boxes die with it (their keepers watch it).
	"$WARD" box pool --backend $BE --size 1 2>"$T_TMP/pool2.err" &
	POOL2=$!
	wait_pooled 1 60000
	ok $? "$BE: a second pool fills"
	kill -9 "$POOL2"
	wait_pooled 0 10000
	ok $? "$BE: SIGKILLed, its boxes are gone within 10 s"
}

suite ns
# An ns pool box is whole: what a call could change for its taker is refused
# too (a port published on it, an owner), and what it serves once taken is
# the slow path's box (tests/integration/escapes.sh runs against one: its
# pool part).
"$WARD" box pool --backend ns --size 1 2>"$T_TMP/pool3.err" &
POOL=$!
wait_pooled 1 30000
ok $? "ns: a pool of one fills"
P=$(pooled)
OUT=$("$WARD" box port "$P" 8080 2>&1); RC=$?
ok "$([ "$RC" -ne 0 ]; echo $?)" "ns: a port published on a pool box: refused"
like "$OUT" "waits in a pool" "saying it waits in a pool"
OUT=$("$WARD" box run -- sh -c 'echo run-$((6*7))')
like "$OUT" "run-42" "ns: ward box run takes a pool box and runs in it"
wait_until 10 grep -q "1 taken" "$T_TMP/pool3.err"
ok $? "the pool saw its box taken ($(tail -1 "$T_TMP/pool3.err"))"
wait_pooled 1 30000
ok $? "ns: the pool makes another after the run"
ok "$("$WARD" box info "$P" >/dev/null 2>&1; [ $? -ne 0 ]; echo $?)" "and the run's box is gone with the run"
kill -TERM "$POOL"; wait "$POOL"; POOL=

if command -v qemu-system-x86_64 >/dev/null && ls /boot/vmlinuz-* >/dev/null 2>&1; then
	suite vm
else
	skip "QEMU or a kernel image is missing: no vm pool"
fi
done_testing
