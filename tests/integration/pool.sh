#!/bin/bash
# A warm pool: `ward box pool --backend vm --size N` keeps N restored VMs
# waiting for START; `ward box create` of the same kind takes one (its
# name is a pool box's, the pool's count drops and is made up again); a
# create of another kind does not; the pool's boxes go with the pool,
# killed or stopped. (What a pool buys is measured in bench/, not here.)
. "$(dirname "$0")/lib.sh"
command -v qemu-system-x86_64 >/dev/null && ls /boot/vmlinuz-* >/dev/null 2>&1 ||
	skip_all "QEMU or a kernel image is missing: pools are of vm boxes"

pooled() { "$WARD" box ls --json | python3 -c 'import json,sys
print(" ".join(sorted(b["name"] for b in json.load(sys.stdin) if b.get("state") == "pooled")))'; }
npooled() { local p; p=$(pooled); set -- $p; echo $#; }
wait_pooled() { # wait_pooled N MS
	local until=$(($(now_ms) + $2))
	while [ "$(now_ms)" -lt $until ]; do [ "$(npooled)" = "$1" ] && return 0; sleep 0.1; done
	return 1
}

ERR=$("$WARD" box pool --backend vm 2>&1); RC=$?
is "$RC" 64 "box pool without --size: refused (64)"
like "$ERR" "--size N is needed" "with one line"
ERR=$("$WARD" box pool --size 2 2>&1); RC=$?
is "$RC" 64 "box pool of ns boxes: refused"
like "$ERR" "it takes --backend vm" "saying what it takes"
ERR=$("$WARD" box pool --backend vm --size 0 2>&1); RC=$?
like "$ERR" '--size: "0" is not a number of boxes from 1 to 64' "--size 0: refused"

"$WARD" box pool --backend vm --size 2 2>"$T_TMP/pool.err" &
POOL=$!
trap 'kill -9 $POOL $POOL2 2>/dev/null' EXIT
wait_pooled 2 60000
ok $? "the pool fills: 2 boxes waiting ($(tail -1 "$T_TMP/pool.err"))"
P1=$(pooled)
for b in $P1; do
	OUT=$("$WARD" box exec "$b" -- true 2>&1); RC=$?
	ok "$([ "$RC" -ne 0 ]; echo $?)" "a call to a pool box is refused"
	like "$OUT" "waits in a pool" "saying it waits in a pool"
	break
done

B=$("$WARD" box create --backend vm --persistent --label via=pool)
is "$?" 0 "a create of the pool's kind"
ok "$([ -n "$B" ]; echo $?)" "the create named its box"
like " $P1 " " $B " "takes a box from the pool (its name is a pool box's)"
is "$("$WARD" box info "$B" | json state)" running "running"
is "$("$WARD" box exec "$B" -- echo hi)" hi "a call works in it"
is "$("$WARD" box info "$B" | json labels.via)" pool "with the create's labels"
like "$("$WARD" box info "$B" | json persistent)" "true" "and its lifetime"
wait_pooled 2 60000
ok $? "the pool makes another: 2 waiting again"
unlike " $(pooled) " " $B " "the box taken is not the pool's any more"

C=$("$WARD" box create --backend vm --persistent --memory 512M)
is "$?" 0 "a create of another kind (--memory 512M)"
unlike " $P1 $(pooled) " " $C " "is a box of its own, not the pool's"
is "$(npooled)" 2 "and the pool keeps its 2"
"$WARD" box destroy "$C"

# Two creates at once: each gets its own box.
"$WARD" box create --backend vm --persistent >"$T_TMP/x" &
XP=$!
"$WARD" box create --backend vm --persistent >"$T_TMP/y" &
YP=$!
wait "$XP" "$YP"
X=$(cat "$T_TMP/x") Y=$(cat "$T_TMP/y")
ok "$([ -n "$X" ] && [ -n "$Y" ] && [ "$X" != "$Y" ]; echo $?)" "two creates at once take two different boxes ($X, $Y)"
# Restored from one snapshot, each got its own entropy when it was taken.
RX=$("$WARD" box exec "$X" -- sh -c 'head -c 16 /dev/urandom | od -An -tx1')
RY=$("$WARD" box exec "$Y" -- sh -c 'head -c 16 /dev/urandom | od -An -tx1')
ok "$([ -n "$RX" ] && [ "$RX" != "$RY" ]; echo $?)" "two boxes from one pool draw different random bytes"
"$WARD" box destroy "$X" "$Y" 2>/dev/null

# The pool's boxes go with it: SIGTERM destroys them; a box taken stays.
wait_pooled 2 60000
kill -TERM "$POOL"
wait "$POOL"
is "$?" 0 "the pool ends on SIGTERM"
is "$(npooled)" 0 "and its waiting boxes are destroyed"
is "$("$WARD" box info "$B" | json state)" running "a box taken from it stays"
"$WARD" box destroy "$B"

# A pool killed outright: its boxes die with it (their keepers watch it).
"$WARD" box pool --backend vm --size 1 2>"$T_TMP/pool2.err" &
POOL2=$!
wait_pooled 1 60000
ok $? "a second pool fills"
kill -9 "$POOL2"
wait_pooled 0 10000
ok $? "SIGKILLed, its boxes are gone within 10 s"
done_testing
