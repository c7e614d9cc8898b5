#!/bin/bash
# ward box fork: a second box that goes on from another's files (its
# workspace's and its root's changes, copied as checkpoints copy a layer);
# its processes are not carried. Each fork changes its own copy; the
# parent and the user's tree are unchanged.
. "$(dirname "$0")/lib.sh"

WS=$T_TMP/ws; mkdir -p "$WS/o"; echo original >"$WS/f.txt"; echo gone-later >"$WS/g.txt"; echo old >"$WS/o/old.txt"
P=$(box_new --workspace "$WS" --memory 300M --publish 8000 --label role=parent)
"$WARD" box exec "$P" -- 'echo parent-change >/workspace/f.txt && rm /workspace/g.txt && mkdir -p /workspace/d &&
	echo new >/workspace/d/n.txt && echo root-change >/etc/ward-fork-test && ln -s f.txt /workspace/link && rm -rf /workspace/o && mkdir /workspace/o && echo fresh >/workspace/o/new.txt' >/dev/null 2>&1
ok $? "the parent changes its workspace (a change, a deletion, a new directory, a symlink, a directory made anew) and its root (/etc)"
# A process of the parent's, running while it is forked: it beats into a
# file (a call sees only its own processes, so the file is how another
# call sees it run).
"$WARD" box exec "$P" --timeout 60s -- 'while :; do date +%s%N >/workspace/beat; sleep 0.1; done' >/dev/null 2>&1 &
CP=$!
beats() { # beats BOX: whether /workspace/beat changes within 1.5 s
	local a b
	a=$("$WARD" box exec "$1" -- 'cat /workspace/beat' 2>/dev/null)
	for _ in $(seq 15); do
		sleep 0.1
		b=$("$WARD" box exec "$1" -- 'cat /workspace/beat' 2>/dev/null)
		[ -n "$a" ] && [ "$a" != "$b" ] && { echo beating; return; }
	done
	echo still
}
for _ in $(seq 50); do [ -n "$("$WARD" box exec "$P" -- 'cat /workspace/beat' 2>/dev/null)" ] && break; sleep 0.1; done
is "$(beats "$P")" beating "the parent runs a process (it beats into /workspace/beat)"

C1=$("$WARD" box fork "$P" 2>"$T_TMP/fork1.err"); RC=$?
echo "$C1" >>"$T_TMP/boxes"
is "$RC" 0 "ward box fork BOX: a new box"
like "$C1" '^box-[0-9a-f]+$' "its name on stdout"
# As root its layers are on an image, copied whole; else file by file.
if [ "$(id -u)" = 0 ]; then COPIED="its layers image whole, [0-9]+ entries"; else COPIED="[0-9]+ files"; fi
like "$(cat "$T_TMP/fork1.err")" "forked $P as $C1 in [0-9]+ ms: $COPIED, [0-9]+ bytes copied; its processes, /tmp and ports were not carried" \
	"stderr says what was copied and that processes were not carried"
C2=$("$WARD" box fork "$P" kid-two 2>/dev/null)
echo "$C2" >>"$T_TMP/boxes"
is "$C2" kid-two "ward box fork BOX NAME: named as asked"

for c in "$C1" "$C2"; do
	is "$("$WARD" box exec "$c" -- 'cat /workspace/f.txt' 2>&1)" parent-change "fork $c: the parent's changed file"
	is "$("$WARD" box exec "$c" -- 'cat /etc/ward-fork-test' 2>&1)" root-change "fork $c: the parent's change to its root (/etc)"
	is "$("$WARD" box exec "$c" -- 'cat /workspace/d/n.txt; readlink /workspace/link; test -e /workspace/g.txt && echo g-back || echo g-gone' 2>&1)" \
		"$(printf 'new\nf.txt\ng-gone')" "fork $c: the new directory, the symlink, and the deletion (a whiteout) too"
	is "$("$WARD" box exec "$c" -- 'ls /workspace/o' 2>&1)" new.txt "fork $c: a directory made anew holds only its new file (the overlay's opaque mark came along)"
	is "$(beats "$c")" still "fork $c: nothing beats (the parent's process is not carried)"
done
"$WARD" box exec "$C1" -- 'echo child-one >/workspace/f.txt; echo c1 >/etc/ward-fork-test' >/dev/null 2>&1
"$WARD" box exec "$C2" -- 'echo child-two >/workspace/f.txt' >/dev/null 2>&1
is "$("$WARD" box exec "$C1" -- 'cat /workspace/f.txt /etc/ward-fork-test' 2>&1)" "$(printf 'child-one\nc1')" "the first fork changes its own copy"
is "$("$WARD" box exec "$C2" -- 'cat /workspace/f.txt /etc/ward-fork-test' 2>&1)" "$(printf 'child-two\nroot-change')" "the second its own"
is "$("$WARD" box exec "$P" -- 'cat /workspace/f.txt /etc/ward-fork-test' 2>&1)" "$(printf 'parent-change\nroot-change')" "the parent is unchanged"
is "$(cat "$WS/f.txt"; test -e "$WS/g.txt" && echo g-kept)" "$(printf 'original\ng-kept')" "and the user's tree too"
is "$(beats "$P")" beating "the parent's process runs on after the forks"
kill $CP 2>/dev/null; wait $CP 2>/dev/null
I=$("$WARD" box info "$C1")
is "$(json forked_from.box <<<"$I")" "$P" "info says whose fork it is"
is "$(json limits.memory_bytes <<<"$I") $(json labels.role <<<"$I") $(json workspace <<<"$I")" "314572800 parent $WS" \
	"a fork has its parent's options (its memory limit, labels, workspace)"
is "$("$WARD" box port "$C1")" "" "but none of its ports"
like "$("$WARD" box port "$P")" "^8000 127.0.0.1:" "(twin: the parent's port is still open)"
if [ "$(id -u)" = 0 ]; then
	is "$(json forked_from.copied <<<"$I")" image "as root the parent's layers image is copied whole"
	like "$(json forked_from.entries <<<"$I")" '^[1-9][0-9]*$' "and how many entries it holds"
else
	is "$(json forked_from.copied <<<"$I")" files "without root the layers are copied file by file"
	like "$(json forked_from.files <<<"$I")" '^[1-9][0-9]*$' "and how many files were copied"
fi

# A hibernated box forks too (nothing of it runs; its layers are on disk).
"$WARD" box hibernate "$C2" >/dev/null
C3=$("$WARD" box fork "$C2" 2>/dev/null); RC=$?
echo "$C3" >>"$T_TMP/boxes"
is "$RC $("$WARD" box exec "$C3" -- 'cat /workspace/f.txt' 2>&1)" "0 child-two" "a hibernated box forks: the fork has its files"
is "$("$WARD" box exec "$C2" -- 'cat /workspace/f.txt' 2>&1)" child-two "and the hibernated box wakes as it was"

# The fork lives on its own: the parent destroyed, it keeps its files.
"$WARD" box destroy "$P"
is "$("$WARD" box exec "$C1" -- 'cat /workspace/f.txt' 2>&1)" child-one "the parent destroyed, the fork keeps its files"
# Bad input: one line each.
E=$("$WARD" box fork no-such-box 2>&1); RC=$?
is "$RC" 69 "fork of a box that does not exist: 69"
like "$E" "cannot fork box no-such-box" "saying which"
E=$("$WARD" box fork "$C1" kid-two 2>&1); RC=$?
is "$RC" 64 "fork to a name a box has: refused (64)"
like "$E" "a box named kid-two already exists" "saying so"
E=$("$WARD" box fork 2>&1); RC=$?
is "$RC" 64 "fork without a box: usage (64)"

done_testing
