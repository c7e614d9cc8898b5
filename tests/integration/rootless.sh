#!/bin/bash
# The ceilings as an ordinary user, with cgroups delegated by hand as a
# system would delegate them (a fixture: v1 memory and pids directories, and
# a v2 directory, made below this test's own groups and given to the
# wardtest user, its processes moved in first), and without. The tests
# check what holds the box's processes, not what ward reports.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip_all "run as root to delegate cgroups to the wardtest user"
id wardtest >/dev/null 2>&1 || skip_all "no wardtest user (.ci/test creates it)"
runuser -u wardtest -- test -x "$WARD" || skip_all "wardtest cannot reach $WARD (a parent directory is not searchable)"
M1=/sys/fs/cgroup/memory P1=/sys/fs/cgroup/pids
[ -w "$M1" ] && [ -w "$P1" ] && grep -q ":memory:" /proc/self/cgroup && grep -q ":pids:" /proc/self/cgroup ||
	skip_all "no v1 memory and pids hierarchies to delegate from"
own() { sed -n "s/^[0-9]*:$1:\(.*\)/\1/p" /proc/self/cgroup | sed 's:^/$::'; }
FX=ward-rootless-$$
DM=$M1$(own memory)/$FX DP=$P1$(own pids)/$FX
CGROUP_LEAF=ward-keepers	# sandbox/cgroup.h
V2=/sys/fs/cgroup/unified
[ -d "$V2" ] || V2=
DV=${V2:+$V2$(sed -n 's/^0::\(.*\)/\1/p' /proc/self/cgroup | sed 's:^/$::')/$FX}
cleanup_fx() {
	for d in "$DM" "$DP" "$DV"; do
		[ -n "$d" ] && [ -d "$d" ] || continue
		find "$d" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
		rmdir "$d" 2>/dev/null
	done
}
trap 'cleanup_fx' EXIT
mkdir "$DM" "$DP" && chown -R wardtest: "$DM" "$DP" || skip_all "cannot make the delegated groups"
# U: as wardtest, outside any group of its own; D: as wardtest, moved into
# the delegated v1 groups first (as a login into a delegated scope is).
# wardtest's boxes: in a runtime directory of this test's own.
mkdir -m 700 "$T_TMP/urun" && chown wardtest: "$T_TMP/urun"
U() { runuser -u wardtest -- env WARD_GUEST="$WARD_GUEST" HOME=/home/wardtest XDG_RUNTIME_DIR="$T_TMP/urun" XDG_STATE_HOME=/home/wardtest/.local/state "$@"; }
D() { sh -c 'echo $$ >"$1/cgroup.procs" && echo $$ >"$2/cgroup.procs" && shift 2 && exec "$@"' sh "$DM" "$DP" \
	runuser -u wardtest -- env WARD_GUEST="$WARD_GUEST" HOME=/home/wardtest XDG_RUNTIME_DIR="$T_TMP/urun" XDG_STATE_HOME=/home/wardtest/.local/state "$@"; }
WS=$(runuser -u wardtest -- mktemp -d /tmp/ward-rootless.XXXXXX)

# Delegated: doctor names the groups, and the box's processes are in them.
DOC=$(D "$WARD" doctor 2>&1)
like "$DOC" "memory ceiling +cgroup v1 memory controller \($DM\)" "delegated: doctor says the memory ceiling is the user's v1 group"
like "$DOC" "pids ceiling +cgroup v1 pids controller \($DP\)" "delegated: doctor says the pids ceiling is the user's v1 group"
# Three processes of 150 MB each, each under the old per-process limit
# (RLIMIT_AS 256M): together they cannot pass --memory 256M.
HOG='for i in 1 2 3; do python3 -c "x = bytearray(150 << 20); import time; time.sleep(2); print(\"alive\")" & done; wait; sed -n "s/^[0-9]*:memory://p" /proc/self/cgroup; ulimit -v'
OUT=$(D "$WARD" box run --memory 256M --timeout 30s -- "$HOG" 2>&1)
lt "$(grep -c '^alive$' <<<"$OUT")" 2 "delegated: three processes of 150 MB together cannot pass --memory 256M (the box's group kills)"
like "$OUT" "Killed" "delegated: the ones over the ceiling were OOM-killed"
like "$OUT" "^/ward-box-[^/]*\$" "delegated: the call's processes are in the box's own memory group"
like "$OUT" "unlimited\$" "delegated: no RLIMIT_AS stands in (the group holds the box)"
OUT=$(D "$WARD" box run --memory 640M --timeout 30s -- "$HOG" 2>&1)
is "$(grep -c '^alive$' <<<"$OUT")" 3 "twin: within --memory 640M the three all live"
BOMB="python3 -c '
import os, time
n = 0
try:
    while n < 300:
        if os.fork() == 0:
            time.sleep(4); os._exit(0)
        n += 1
except OSError as e:
    print(\"stopped at\", n, e)
'; ulimit -u"
OUT=$(D "$WARD" box run --pids 64 --timeout 20s -- "$BOMB" 2>&1)
like "$OUT" "stopped at [0-9]+ .*Resource temporarily unavailable" "delegated: a fork bomb stops at --pids 64"
N=$(sed -n 's/.*stopped at \([0-9]*\).*/\1/p' <<<"$OUT")
lt "${N:-999}" 64 "delegated: before 64 processes"
unlike "$OUT" "^64\$" "delegated: the box's group, not RLIMIT_NPROC, stopped it (ulimit -u is not 64)"
like "$(D "$WARD" box run --pids 64 --timeout 20s -- 'for i in $(seq 30); do sleep 1 & done; wait; echo pids-twin-ok' 2>&1)" \
	"pids-twin-ok" "twin: 30 processes within --pids 64 run"
B=$(D "$WARD" box create --persistent --memory 256M --pids 64 --workspace "$WS" --rw)
INFO=$(D "$WARD" box info "$B")
like "$INFO" '"memory_by":.*"cgroup"' "delegated: box info says memory_by cgroup"
like "$INFO" '"pids_by":.*"cgroup"' "delegated: box info says pids_by cgroup"
unlike "$INFO" '"memory_why"' "delegated: and names no weaker memory ceiling"
# Destroy ends every process the box had, a setsid'd double fork too.
D "$WARD" box exec "$B" -- '(setsid sh -c "sleep 3; touch /workspace/canary" &); sleep 30' >/dev/null 2>&1 &
EXEC=$!
BG=$(ls -d "$DM"/ward-"$B"-* 2>/dev/null | head -1)
for i in $(seq 200); do
	[ "$(wc -l <"$BG/cgroup.procs" 2>/dev/null)" -ge 5 ] && break
	sleep 0.05
done
PIDS=$(cat "$BG/cgroup.procs" 2>/dev/null | tr '\n' ' ')
lt 4 "$(wc -w <<<"$PIDS")" "the box's group holds the guest, the call and the setsid'd canary ($PIDS)"
D "$WARD" box destroy "$B"
dead=0
for i in $(seq 100); do
	alive=0
	for p in $PIDS; do gone "$p" || alive=1; done
	[ $alive -eq 0 ] && { dead=1; break; }
	sleep 0.05
done
is "$dead" 1 "destroy kills every process of the box (each pid its group held is gone)"
wait "$EXEC"
check "so the canary, due after 3 s, is never written" test ! -e "$WS/canary"
check "the box's group is removed" test ! -e "$BG"

# Without delegation: each weaker ceiling, and why, in doctor and box info.
DOC=$(U "$WARD" doctor 2>&1)
like "$DOC" "memory ceiling +weaker: RLIMIT_AS per process stands in .*not writable by uid $(id -u wardtest)" \
	"no delegation: doctor says the memory ceiling is weaker, and why"
like "$DOC" "pids ceiling +weaker: RLIMIT_NPROC per user namespace stands in: .*not writable" \
	"no delegation: doctor says the pids ceiling is weaker, and why"
like "$DOC" "cgroup delegation +none for this user: .*Delegate=yes.*systemd-run --user --scope -p Delegate=yes" \
	"no delegation: doctor names the systemd setting that delegates"
unlike "$(D "$WARD" doctor 2>&1)" "cgroup delegation" "twin: delegated, doctor has no such line"
B=$(U "$WARD" box create --persistent --memory 256M --pids 64)
INFO=$(U "$WARD" box info "$B")
like "$INFO" '"memory_by":.*"rlimit \(per process\)"' "no delegation: box info says memory_by rlimit"
like "$INFO" '"memory_why":.*"cgroup v2 .* not writable by uid' "no delegation: box info says why"
like "$INFO" '"pids_why":.*not writable' "no delegation: box info says why for pids"
like "$INFO" '"kill_why":' "no delegation: box info says why destroy has no cgroup.kill"
U "$WARD" box destroy "$B"

# Where systemd manages the session and nothing is delegated, each box's
# keeper asks for a delegated scope (systemd-run --user --scope -p
# Delegate=yes). This machine has no systemd: a fake systemd-run on PATH
# (its mode and log beside it) and the user manager's socket as a file in
# the runtime directory stand in. What only a systemd machine shows (the
# scope's own group and controllers) is not tested here.
SDRUN=$T_TMP/fake-sd
mkdir -p "$SDRUN" && cat >"$SDRUN/systemd-run" <<'EOS'
#!/bin/sh
d=$(dirname "$0")
echo "$*" >>"$d/log"
if [ "$(cat "$d/mode")" = fail ]; then echo "Failed to connect to bus: No medium found" >&2; exit 1; fi
while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done
shift
exec "$@"
EOS
chmod 755 "$SDRUN/systemd-run"; echo ok >"$SDRUN/mode"; : >"$SDRUN/log"; chown -R wardtest: "$SDRUN"
runuser -u wardtest -- mkdir -p "$T_TMP/urun/systemd"; runuser -u wardtest -- touch "$T_TMP/urun/systemd/private"
SD() { U env PATH="$SDRUN:$PATH" "$@"; }
B=$(SD "$WARD" box create --persistent)
like "$(cat "$SDRUN/log")" "^--user --scope -p Delegate=yes --quiet --collect -- /.*/ward-keeper $B\$" \
	"systemd there, nothing delegated: the keeper is started through systemd-run --user --scope -p Delegate=yes"
like "$(SD "$WARD" box exec "$B" -- echo scope-ok 2>&1)" "scope-ok" "and its box runs commands"
SD "$WARD" box destroy "$B"
DOC=$(SD "$WARD" doctor 2>&1)
like "$DOC" "systemd scope +systemd-run --user --scope -p Delegate=yes gives each box's keeper a delegated scope" \
	"doctor says each box's keeper gets a systemd scope"
unlike "$DOC" "cgroup delegation +none" "and does not say nothing is delegated"
echo fail >"$SDRUN/mode"; : >"$SDRUN/log"
B=$(SD "$WARD" box create --persistent)
is $? 0 "systemd-run refused: the box is made all the same (the keeper starts where ward is)"
like "$(cat "$SDRUN/log")" "Delegate=yes" "after asking for the scope"
like "$(SD "$WARD" box exec "$B" -- echo fallback-ok 2>&1)" "fallback-ok" "and its box runs commands"
like "$(SD "$WARD" box info "$B")" '"memory_by":.*"rlimit \(per process\)"' "and box info says the weaker memory ceiling"
SD "$WARD" box destroy "$B"
DOC=$(SD "$WARD" doctor 2>&1)
like "$DOC" "systemd scope +refused \(systemd-run --user --scope -p Delegate=yes exited 1\)" "doctor says systemd refused the scope, and how"
like "$DOC" "cgroup delegation +none for this user" "and that nothing is delegated"
runuser -u wardtest -- rm -r "$T_TMP/urun/systemd"; : >"$SDRUN/log"
B=$(SD "$WARD" box create --persistent)
is "$(cat "$SDRUN/log")" "" "twin: where systemd does not manage the session, systemd-run is not asked"
SD "$WARD" box destroy "$B"

# A group made but refused: a v2 directory the user may write in, under a
# group whose cgroup.procs is not the user's, so the kernel refuses to start
# the box in it (clone3 CLONE_INTO_CGROUP needs the common ancestor's). ward
# must not report cgroup.kill for a box that is not in the group.
if [ -n "$DV" ] && mkdir "$DV" 2>/dev/null && [ -e "$DV/cgroup.kill" ]; then
	chown wardtest: "$DV"	# the directory only: its cgroup.procs stays root's
	V() { sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$DV" \
		runuser -u wardtest -- env WARD_GUEST="$WARD_GUEST" HOME=/home/wardtest XDG_RUNTIME_DIR="$T_TMP/urun" XDG_STATE_HOME=/home/wardtest/.local/state "$@"; }
	B=$(V "$WARD" box create --persistent)
	INFO=$(V "$WARD" box info "$B")
	GP=$(json guest_pid <<<"$INFO")
	unlike "$(grep '^0::' "/proc/$GP/cgroup")" "ward-$B" "a v2 group the box could not start in: the guest is not in it"
	like "$INFO" '"kill_by":.*"the PID namespace"' "and box info does not claim cgroup.kill for it"
	V "$WARD" box destroy "$B"
	check "its processes are gone all the same (the PID namespace)" gone "$GP"
	# Twin: the v2 directory delegated whole (its cgroup.procs the user's
	# too, as systemd's Delegate=yes gives it): the box starts in its
	# group, and destroy's cgroup.kill ends what is in it.
	chown -R wardtest: "$DV"
	B=$(V "$WARD" box create --persistent)
	INFO=$(V "$WARD" box info "$B")
	GP=$(json guest_pid <<<"$INFO")
	like "$(grep '^0::' "/proc/$GP/cgroup")" "/ward-$B-[0-9]+\$" "twin: delegated whole, the guest starts in its v2 group"
	like "$INFO" '"kill_by":.*"cgroup.kill and the PID namespace"' "and box info says destroy uses cgroup.kill"
	V "$WARD" box exec "$B" -- 'setsid sleep 30 & sleep 30' >/dev/null 2>&1 &
	EXEC=$!
	VG=$(ls -d "$DV"/ward-"$B"-* | head -1)
	for i in $(seq 200); do
		[ "$(wc -l <"$VG/cgroup.procs" 2>/dev/null)" -ge 4 ] && break
		sleep 0.05
	done
	PIDS=$(cat "$VG/cgroup.procs" | tr '\n' ' ')
	lt 3 "$(wc -w <<<"$PIDS")" "the v2 group holds the guest, the call and a setsid'd sleep ($PIDS)"
	V "$WARD" box destroy "$B"
	wait "$EXEC"
	for i in $(seq 100); do
		alive=0
		for p in $PIDS; do gone "$p" || alive=1; done
		[ $alive -eq 0 ] && break
		sleep 0.05
	done
	is "$alive" 0 "destroy (cgroup.kill of the v2 group) leaves none of them"
	# The delegated group found from below: the user's process in a group
	# of the delegated one that is not its own (root's), or in ward's own
	# leaf there: the box's group goes in the delegated group.
	for sub in rootowned "$CGROUP_LEAF"; do
		mkdir -p "$DV/$sub"
		[ "$sub" = rootowned ] && chown -R root: "$DV/$sub"
		S() { sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$DV/$sub" \
			runuser -u wardtest -- env WARD_GUEST="$WARD_GUEST" HOME=/home/wardtest XDG_RUNTIME_DIR="$T_TMP/urun" XDG_STATE_HOME=/home/wardtest/.local/state "$@"; }
		B=$(S "$WARD" box create --persistent)
		GP=$(S "$WARD" box info "$B" | json guest_pid)
		like "$(grep '^0::' "/proc/$GP/cgroup")" "/$FX/ward-$B-[0-9]+\$" "from $sub below the delegated v2 group: the box's group is in the delegated group"
		S "$WARD" box destroy "$B"
	done
else
	skip "no v2 hierarchy with cgroup.kill to make a refused group in"
	for i in 1 2 3 4 5 6 7 8; do skip "-"; done
fi
# A disk ceiling without root, the first part: a layers image mounted by
# fuse2fs in a user namespace of wardtest's own (workspace/layersfuse.h),
# no loop device. A fill stops at the image's size; nothing of it is on
# the host's mount table; a process in a user namespace below the holder's
# (where a box would be) reaches it, one beside it does not; ending the
# holder leaves no mount and no daemon. (Boxes do not use it yet.)
LF=$(runuser -u wardtest -- mktemp -d /tmp/ward-lf.XXXXXX)
runuser -u wardtest -- mkdir "$LF/layers"
OUT=$(runuser -u wardtest -- "$LAYERS_FUSE" mount "$LF/img" "$LF/layers" $((64 << 20)) 2>&1)
RC=$?
if [ $RC -eq 0 ]; then
	read -r HP HPATH <<<"$OUT"
	check "fuse2fs holds the image over the layers directory, in its own namespaces" runuser -u wardtest -- "$LAYERS_FUSE" mounted "$HP" "$LF/layers"
	is "$(grep -c " $LF/layers " /proc/mounts)" 0 "the mount is not in the host's mount table"
	FILL=$(runuser -u wardtest -- dd if=/dev/zero of="$HPATH/fill" bs=1M count=100 conv=fsync 2>&1)
	like "$FILL" "No space left on device" "a fill of 100M into a 64M image stops with ENOSPC"
	KB=$(runuser -u wardtest -- du -k "$HPATH/fill" | cut -f1)
	lt "$KB" $((64 << 10)) "what it holds is under 64M ($KB KiB)"
	lt $((48 << 10)) "$KB" "and near it"
	runuser -u wardtest -- rm "$HPATH/fill"
	check "twin: 10M into the same image is written whole" runuser -u wardtest -- dd if=/dev/zero of="$HPATH/ten" bs=1M count=10 conv=fsync status=none
	is "$(runuser -u wardtest -- stat -c %s "$HPATH/ten")" $((10 << 20)) "and reads back 10M"
	is "$(ls -A "$LF/layers")" "" "the host's layers directory itself holds nothing (the image does)"
	is "$(runuser -u wardtest -- nsenter -t "$HP" -U -m --preserve-credentials unshare -Urm stat -c %s "$LF/layers/ten" 2>&1)" \
		$((10 << 20)) "a process in a user namespace below the holder's sees it at the layers directory"
	unlike "$(runuser -u wardtest -- unshare -Ur stat -c %s "$HPATH/ten" 2>&1)" "^$((10 << 20))\$" \
		"one in a user namespace beside it does not reach it"
	check "ending the holder" runuser -u wardtest -- "$LAYERS_FUSE" unmount "$HP" "$LF/layers"
	check "leaves no fuse2fs process" gone "$HP"
	is "$(grep -c "$LF" /proc/mounts)" 0 "and no mount"
else
	like "$OUT" "^incapable: " "fuse2fs cannot mount here, and says why ($OUT)"
	for i in $(seq 12); do skip "no fuse2fs mount here"; done
fi
rm -rf "$LF"
# The copy-on-write over it, as a box's keeper makes it (layers-fuse cow:
# workspace/layersfuse.h's layersfuse_enter, _serve and _overlay): fuse2fs
# and fuse-overlayfs children of a process in a user and mount namespace
# of its own, the tree the lower, the image the upper; the command runs in
# a user namespace below it, where a box is.
CW=$(runuser -u wardtest -- mktemp -d /tmp/ward-cow.XXXXXX)
runuser -u wardtest -- sh -c 'mkdir "$1/L" "$1/tree" "$1/tree/d" "$1/m" && echo old >"$1/tree/a.txt" &&
	echo bee >"$1/tree/d/b.txt" && echo stay >"$1/tree/d/stay.txt"' sh "$CW"
M=$CW/m
OUT=$(runuser -u wardtest -- "$LAYERS_FUSE" cow "$CW/img" "$CW/L" $((64 << 20)) "$CW/tree" "$M" \
	"echo new >$M/a.txt && echo fresh >$M/new.txt && rm $M/d/b.txt &&
	 dd if=/dev/zero of=$M/fill bs=1M count=100 conv=fsync 2>&1; du -k $M/fill; rm -f $M/fill" 2>&1)
RC=$?
if [ $RC -eq 0 ]; then
	like "$OUT" "No space left on device" "cow: a fill of 100M through fuse-overlayfs into a 64M image stops with ENOSPC"
	KB=$(sed -n 's:^\([0-9]*\)	.*/fill$:\1:p' <<<"$OUT")
	lt "${KB:-999999}" $((64 << 10)) "cow: what it wrote is under 64M (${KB:-?} KiB)"
	like "$OUT" "^modified a.txt\$" "cow: the upper read back says a.txt is modified"
	like "$OUT" "^added new.txt\$" "cow: new.txt is added"
	like "$OUT" "^deleted d/b.txt\$" "cow: d/b.txt is deleted"
	is "$(grep -cE '^(added|modified|deleted) ' <<<"$OUT")" 3 "cow: and nothing else is a change (no fill, no .wh. entry)"
	like "$OUT" "^wh-files 1\$" "cow: fuse-overlayfs wrote the deletion as a .wh. file (the form read)"
	is "$( (cat "$CW/tree/a.txt"; ls "$CW/tree/d") | tr '\n' ' ')" "old b.txt stay.txt " "cow: the tree itself is untouched"
	read -r _ P1 P2 <<<"$(grep '^daemons ' <<<"$OUT")"
	check "cow: no fuse2fs left" gone "$P1"
	check "cow: no fuse-overlayfs left" gone "$P2"
	is "$(grep -c "$CW" /proc/mounts)" 0 "cow: no mount in the host's table"
	OUT=$(runuser -u wardtest -- "$LAYERS_FUSE" cow "$CW/img2" "$CW/L" $((64 << 20)) "$CW/tree" "$M" \
		"dd if=/dev/zero of=$M/ten bs=1M count=10 conv=fsync status=none && stat -c 'size %s' $M/ten" 2>&1)
	like "$OUT" "^size $((10 << 20))\$" "twin: cow: 10M through it is written whole"
	like "$OUT" "^added ten\$" "twin: cow: and is read back as the one change"
else
	like "$OUT" "(fuse-overlayfs|fuse2fs) is missing" "cow: cannot here, and says why ($OUT)"
	for i in $(seq 13); do skip "no fuse-overlayfs here"; done
fi
rm -rf "$CW"

# A box's disk ceiling as wardtest: its keeper serves the layers image with
# fuse2fs in a user and mount namespace of its own, the box's workspace is
# fuse-overlayfs over the tree and the image (both the keeper's children,
# outside the box's PID namespace), and the box is cloned below it.
DW=$(runuser -u wardtest -- mktemp -d /tmp/ward-dw.XXXXXX)
runuser -u wardtest -- sh -c 'echo old >"$1/a.txt" && mkdir "$1/d" && echo bee >"$1/d/b.txt" && echo stay >"$1/d/stay.txt"' sh "$DW"
fusers() { pgrep -u wardtest -f "^/usr/bin/(fuse2fs|fuse-overlayfs) .*$1" | tr '\n' ' '; }
run_diff() { # run_diff AS WS BOX: ward run --box BOX over WS, as AS (U or I); its session's ward diff into D, its id SID
	serve tool
	"$1" env ANTHROPIC_API_KEY=sk-ant-fake "$WARD" run --provider anthropic --base-url "$URL" --model fake-model \
		--workspace "$2" --box "$3" --json "write a file" >"$T_TMP/fo" 2>"$T_TMP/fe" </dev/null
	is "$?" 0 "$3: the run over it succeeded ($(tail -1 "$T_TMP/fe"))"
	SID=$(tail -1 "$T_TMP/fo" | json session)
	D=$("$1" "$WARD" diff "$SID" 2>&1)
}
DOC=$(U "$WARD" doctor 2>&1)
if grep -q '^ok  *disk ceiling  *fuse2fs' <<<"$DOC"; then
	like "$DOC" "disk ceiling +fuse2fs: an ext4 image of that size, served in the keeper's user namespace; the workspace through fuse-overlayfs, and the box's root too where --disk is given" \
		"box disk: doctor says the disk ceiling is enforced, by fuse2fs and fuse-overlayfs, for the workspace and the root"
	B=$(U "$WARD" box create --persistent --disk 64M --workspace "$DW")
	INFO=$(U "$WARD" box info "$B")
	like "$INFO" '"disk_by":[[:space:]]*"fuse2fs: ' "box disk: box info says fuse2fs enforces it"
	DAEMONS=$(fusers "$B")
	is "$(pgrep -u wardtest -f "^/usr/bin/fuse2fs .*$B" | wc -l) $(pgrep -u wardtest -f "^/usr/bin/fuse-overlayfs .*lowerdir=$DW,.*$B" | wc -l)" "1 1" \
		"box disk: a fuse2fs and the workspace's fuse-overlayfs serve the box (the root's too: $DAEMONS)"
	like "$(U "$WARD" box exec "$B" -- 'df -P /workspace | tail -1' 2>&1)" "^fuse-overlayfs " "box disk: the box's /workspace is fuse-overlayfs"
	unlike "$(U "$WARD" box exec "$B" -- 'for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline; echo; done' 2>&1)" "fuse" \
		"box disk: no daemon of it is in the box's PID namespace"
	OUT=$(U "$WARD" box exec "$B" -- 'dd if=/dev/zero of=/workspace/fill bs=1M count=100 conv=fsync 2>&1; df -Pk /workspace | awk "NR == 2 { print \"used\", \$3 }"; rm -f /workspace/fill' 2>&1)
	like "$OUT" "No space left on device" "box disk: a fill of 100M into --disk 64M stops with ENOSPC in the box"
	KB=$(sed -n 's/^used \([0-9]*\)$/\1/p' <<<"$OUT")
	lt "${KB:-999999}" $((64 << 10)) "box disk: the workspace holds under 64M when it is full (${KB:-?} KiB)"
	IMG=/home/wardtest/.local/state/ward/workspaces/$B.img
	lt "$(du -k "$IMG" | cut -f1)" $(((64 << 10) + 1)) "box disk: the host's disk holds no more than the image ($(du -k "$IMG" | cut -f1) KiB)"
	check "box disk: and the tree has no fill" test ! -e "$DW/fill"
	like "$(U "$WARD" box exec "$B" -- 'dd if=/dev/zero of=/workspace/ten bs=1M count=10 conv=fsync status=none && stat -c "size %s" /workspace/ten && rm /workspace/ten' 2>&1)" \
		"size $((10 << 20))" "twin: box disk: 10M within --disk 64M is written whole"
	U "$WARD" box exec "$B" -- 'echo new >a.txt && echo fresh >new.txt && rm d/b.txt' >/dev/null 2>&1
	# A fork of it: its keeper holds the parent's layers through
	# descriptors opened before it enters a namespace of its own (the
	# parent's mount is not reachable from there).
	F=$(U "$WARD" box fork "$B" 2>"$T_TMP/fe")
	is "$(U "$WARD" box exec "$F" -- 'cat /workspace/a.txt /workspace/new.txt' 2>&1 | tr '\n' ' ')" "new fresh " \
		"box disk: a fork has the workspace's changes ($(tail -1 "$T_TMP/fe"))"
	FD=$(fusers "$F")
	U "$WARD" box destroy "$F"
	is "$(for p in $FD; do gone "$p" || echo "$p"; done)$(fusers "$F")" "" "box disk: destroying the fork leaves none of its daemons"
	# ward run --box over it: the session finds the box's changes (read
	# through the keeper's namespace) for ward diff and ward apply.
	run_diff U "$DW" "$B"
	like "$D" "^\+new\$" "box disk: ward diff shows the changed file"
	like "$D" "^\+fresh\$" "box disk: and the new one"
	like "$D" "^-bee\$" "box disk: and the deleted one"
	unlike "$D" "\.wh\.|stay" "box disk: and nothing else (no .wh. entry)"
	# --force: the changes were made before the run, so its base sees the
	# tree's files as changed meanwhile (as root does).
	U "$WARD" apply --force "$SID" >/dev/null 2>"$T_TMP/fe"
	is "$(cat "$DW/a.txt" "$DW/new.txt"; ls -A "$DW/d")" "new
fresh
stay.txt" "box disk: ward apply makes the tree the box's (a.txt changed, new.txt made, d/b.txt gone)"
	is "$(find "$DW" -name '.wh.*' | wc -l)" 0 "box disk: no .wh. entry reaches the tree"
	U "$WARD" box destroy "$B"
	is "$(for p in $DAEMONS; do gone "$p" || echo "$p"; done)" "" "box disk: destroy leaves no fuse2fs or fuse-overlayfs"
	is "$(fusers "$B")" "" "box disk: none of the user's is left for the box"
	is "$(grep -c "$B" /proc/mounts)" 0 "box disk: and no mount"
	# A host-view box without a workspace: its root's changes are its
	# only ones, on the image all the same, an overlay of the root (and
	# one per host directory of it: /usr, /var/lib/dpkg, ...) each a
	# fuse-overlayfs of the keeper's.
	NB=$(U "$WARD" box create --persistent --disk 64M)
	like "$(U "$WARD" box info "$NB")" '"root_changes_by":[[:space:]]*"the layers image \(disk_bytes, with the workspace.s changes\): fuse-overlayfs over fuse2fs"' \
		"host-view root: box info says the layers image caps the root's changes"
	NDAEMONS=$(fusers "$NB")
	lt 2 "$(wc -w <<<"$NDAEMONS")" "host-view root: fuse2fs and a fuse-overlayfs per overlay of the root serve it ($NDAEMONS)"
	OUT=$(U "$WARD" box exec "$NB" -- 'df -P / /usr | awk "NR > 1 { print \"fs\", \$1 }"; dd if=/dev/zero of=/root/fill bs=1M count=100 2>&1; rm -f /root/fill
		dd if=/dev/zero of=/usr/ten bs=1M count=10 conv=fsync status=none && stat -c "size %s" /usr/ten' 2>&1)
	is "$(grep -c '^fs fuse-overlayfs$' <<<"$OUT")" 2 "host-view root: the box's / and /usr are fuse-overlayfs"
	like "$OUT" "No space left on device" "host-view root: a fill of 100M into /root stops with ENOSPC in the box"
	like "$OUT" "^size $((10 << 20))\$" "twin: host-view root: 10M into /usr after it is written whole"
	U "$WARD" box destroy "$NB"
	is "$(for p in $NDAEMONS; do gone "$p" || echo "$p"; done)" "" "host-view root: destroy leaves none of them"
	is "$(grep -c "$NB" /proc/mounts)" 0 "host-view root: and no mount"
	# Twin: without --disk (only the default ceiling), a box without a
	# workspace has no image and no daemon; its root's changes are
	# beside, as before, and info says they are not capped.
	NB=$(U "$WARD" box create --persistent)
	INFO=$(U "$WARD" box info "$NB")
	is "$(json limits.disk_bytes <<<"$INFO")" 0 "twin: box disk: a box without --disk or a workspace has no layers image"
	like "$INFO" '"root_changes_by":[[:space:]]*"not enforced: without root, the root.s changes are capped only where a ceiling is asked for \(--disk, or the config key disk\), not by the default one"' \
		"twin: and says its root's changes are not capped, and why"
	is "$(fusers "$NB")" "" "twin: and nothing serves one"
	U "$WARD" box destroy "$NB"
else
	like "$DOC" "disk ceiling +not enforced" "box disk: doctor says not enforced here ($(grep 'disk ceiling' <<<"$DOC"))"
	for i in $(seq 31); do skip "no fuse2fs and fuse-overlayfs here"; done
fi
rm -rf "$DW"

# An image box's root under the same ceiling as wardtest: its writable
# root is fuse-overlayfs (the keeper's child) over the image's tree, its
# changes in root/ on the layers image fuse2fs serves, beside the
# workspace's; nothing of them beside the image on the host's disk.
FIXD=${WARD_IMAGE_FIXTURES:-}
if grep -q '^ok  *disk ceiling  *fuse2fs' <<<"$DOC" && [ -n "$FIXD" ] &&
	sh "$(dirname "$0")/../images/make-fixtures.sh" "$FIXD" >/dev/null 2>&1 &&
	[ -f "$FIXD/debian.oci.tar" ] && runuser -u wardtest -- test -r "$FIXD/debian.oci.tar"; then
	UD=$(runuser -u wardtest -- mktemp -d /tmp/ward-rootless-img.XXXXXX)
	I() { U env XDG_DATA_HOME="$UD" "$@"; }
	DG=$(I "$WARD" image import "$FIXD/debian.oci.tar" 2>/dev/null)
	RW=$(runuser -u wardtest -- mktemp -d /tmp/ward-rootless-rw.XXXXXX)
	runuser -u wardtest -- sh -c 'echo old >"$1/a.txt"' sh "$RW"
	B=$(I "$WARD" box create --persistent --disk 64M --image "$DG" --workspace "$RW")
	INFO=$(I "$WARD" box info "$B")
	like "$INFO" '"root_changes_by":[[:space:]]*"the layers image \(disk_bytes, with the workspace.s changes\): fuse-overlayfs over fuse2fs"' \
		"image root: box info says the layers image caps the root's changes, through fuse-overlayfs over fuse2fs"
	DAEMONS=$(fusers "$B")
	is "$(pgrep -u wardtest -f "^/usr/bin/fuse-overlayfs .*lowerdir=$UD/ward/images/trees/.*$B" | wc -l) $(wc -w <<<"$DAEMONS")" "1 3" \
		"image root: fuse-overlayfs over the image's tree serves the root, beside fuse2fs and the workspace's ($DAEMONS)"
	like "$(I "$WARD" box exec "$B" -- 'df -P / | tail -1' 2>&1)" "^fuse-overlayfs " "image root: the box's / is fuse-overlayfs"
	unlike "$(I "$WARD" box exec "$B" -- 'for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline; echo; done' 2>&1)" "fuse" \
		"image root: no daemon of it is in the box's PID namespace"
	T0=$(now_ms)
	OUT=$(I "$WARD" box exec "$B" --timeout 60s -- 'dd if=/dev/zero of=/root/fill bs=1M count=100 2>&1; stat -c "stopped %s" /root/fill
		df -Pk / | awk "NR == 2 { print \"used\", \$3 }"; rm -f /root/fill' 2>&1)
	MS=$(($(now_ms) - T0))
	like "$OUT" "No space left on device" "image root: a fill of 100M into /root stops with ENOSPC in the box"
	lt "$MS" 30000 "image root: and comes back well within its 60 s limit (ms)"
	N=$(sed -n 's/^stopped \([0-9]*\)$/\1/p' <<<"$OUT")
	lt "${N:-999999999}" $((64 << 20)) "image root: what the fill wrote is under 64M (${N:-?} bytes)"
	lt $((32 << 20)) "${N:-0}" "image root: and near it"
	KB=$(sed -n 's/^used \([0-9]*\)$/\1/p' <<<"$OUT")
	lt "${KB:-999999}" $((64 << 10)) "image root: the box's / holds under 64M when it is full (${KB:-?} KiB)"
	IMG=/home/wardtest/.local/state/ward/workspaces/$B.img
	lt "$(du -k "$IMG" | cut -f1)" $(((64 << 10) + 1)) "image root: the host's disk holds no more than the image ($(du -k "$IMG" | cut -f1) KiB)"
	is "$(ls -A /home/wardtest/.local/state/ward/workspaces | grep -c "^$B\.root")" 0 "image root: nothing of the root's changes is beside the image"
	OUT=$(I "$WARD" box exec "$B" -- 'dd if=/dev/zero of=/var/tmp/ten bs=1M count=10 conv=fsync status=none && stat -c "size %s" /var/tmp/ten &&
		head -c 10485760 /dev/zero | cmp - /var/tmp/ten && echo same; echo kept >/root/kept; rm /etc/issue' 2>&1)
	like "$OUT" "^size $((10 << 20))\$" "twin: image root: 10M within --disk 64M is written whole"
	like "$OUT" "^same\$" "twin: image root: and reads back"
	# The readers of a box's changes: the root's are never diffed; a
	# hibernate keeps them (on the image); a fork copies them.
	I "$WARD" box exec "$B" -- 'echo new >/workspace/a.txt' >/dev/null 2>&1
	run_diff I "$RW" "$B"
	like "$D" "^\+new\$" "image root: ward diff shows the workspace's change"
	unlike "$D" "kept|issue|ten" "image root: and none of the root's"
	I "$WARD" box hibernate "$B" >/dev/null 2>&1
	is "$(fusers "$B")" "" "image root: a hibernated box has no daemon"
	I "$WARD" box wake "$B" >/dev/null 2>&1
	is "$(I "$WARD" box exec "$B" -- 'cat /root/kept; test -e /etc/issue || echo gone' 2>&1 | tr '\n' ' ')" "kept gone " \
		"image root: a wake finds the root's changes (a file, a deletion) on the image"
	F=$(I "$WARD" box fork "$B" 2>/dev/null)
	is "$(I "$WARD" box exec "$F" -- 'cat /root/kept; stat -c %s /var/tmp/ten; test -e /etc/issue || echo gone' 2>&1 | tr '\n' ' ')" \
		"kept $((10 << 20)) gone " "image root: its fork has the root's changes"
	like "$(I "$WARD" box info "$F")" '"root_changes_by":[[:space:]]*"the layers image' "image root: and its own are capped too"
	DAEMONS="$DAEMONS $(fusers "$B") $(fusers "$F")"
	T0=$(now_ms)
	I "$WARD" box destroy "$F"
	I "$WARD" box destroy "$B"
	MS=$(($(now_ms) - T0))
	lt "$MS" 10000 "image root: destroying both comes back within 10 s"
	is "$(for p in $DAEMONS; do gone "$p" || echo "$p"; done)" "" "image root: destroy leaves no fuse2fs or fuse-overlayfs"
	is "$(fusers "$B")$(fusers "$F")" "" "image root: none of the user's is left for either box"
	is "$(grep -cE "$B|$F" /proc/mounts)" 0 "image root: and no mount"
	check "image root: and no image" test ! -e "$IMG"
	rm -rf "$RW"
	I "$WARD" image rm "$DG" >/dev/null 2>&1
	rm -rf "$UD"
else
	for i in $(seq 24); do skip "no fuse2fs and fuse-overlayfs, or no Debian image fixture wardtest can read"; done
fi
rm -rf "$WS"
done_testing
