#!/bin/bash
# A vm box's copy-on-write workspace as a block image: the workspace's tree
# reaches the VM as a read-only erofs image (the box's own, beside its
# disk), the box's changes live on its own disk, and the guest sends them
# to the host's upper after every call (proto/changeset.h), so no 9p share
# is mounted and a hibernate keeps every process. The host never mounts
# the box's disk. The image is vm-hibernate.sh's (python-image.sh).
. "$(dirname "$0")/lib.sh"
command -v qemu-system-x86_64 >/dev/null || skip_all "QEMU is not installed (apt-get install qemu-system-x86)"
ls /boot/vmlinuz-* >/dev/null 2>&1 || skip_all "no kernel in /boot (apt-get install linux-image-amd64)"
command -v mkfs.erofs >/dev/null || skip_all "mkfs.erofs is not installed (apt-get install erofs-utils)"
[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 || skip_all "/bin/busybox is not busybox-static's"
[ -x /usr/bin/python3.11 ] || skip_all "no /usr/bin/python3.11 to put in the test's image"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$HOME/.cache} ANTHROPIC_API_KEY=sk-ant-fake-key
. "$(dirname "$0")/python-image.sh"
python_image
qemu_of() { pgrep -f "qemu-system-x86_64.*/$1/" | head -1; }
drive_of() { # drive_of BOX ID: the file behind the VM's -drive ID
	tr '\0' '\n' <"/proc/$(qemu_of "$1")/cmdline" | grep "^if=none,id=$2," | sed 's/.*,file=//'
}

WS=$T_TMP/ws
mkdir -p "$WS/sub" "$WS/keep"
printf 'one\ntwo\n' >"$WS/a.txt"
echo gone >"$WS/b.txt"
echo s >"$WS/sub/s.txt"
echo k >"$WS/keep/k.txt"
git -C "$WS" init -q && git -C "$WS" add -A && git -C "$WS" -c user.name=t -c user.email=t@t commit -qm init
TREE=$(cd "$WS" && find . | sort | md5sum)

B=$(box_new --backend vm --image ward-test/python --memory 512M --workspace "$WS" 2>/dev/null) ||
	B=$(box_new --backend vm --image ward-test/python --memory 512M --workspace "$WS")
like "$B" "^box-" "a vm box of an image with a copy-on-write workspace"
INFO=$("$WARD" box info "$B")
like "$INFO" '"loses":.*"nothing' "box info: its hibernate loses nothing (no 9p share)"
DISK=$XDG_STATE_HOME/ward/disks/$B.img
is "$(drive_of "$B" ws)" "$DISK.ws" "the workspace reaches the VM as the box's own image, beside its disk"
M=$("$WARD" box exec "$B" -- 'cat /proc/mounts')
like "$M" "^overlay /workspace overlay " "/workspace is an overlay in the guest"
unlike "$M" " 9p " "and no 9p share is mounted"
like "$("$WARD" box exec "$B" -- 'cat /workspace/a.txt /workspace/sub/s.txt')" "one" "the box reads the workspace's files"
R=$("$WARD" box exec "$B" -- 'echo x >/workspace/.git/hooks/pre-commit; echo hook=$?' 2>&1)
like "$R" "Read-only file system" ".git stays read-only in the box (as over 9p)"

# The box's changes, of every kind, and the host's copy after the call.
"$WARD" box exec "$B" -- 'cd /workspace; echo changed >>a.txt; rm b.txt; rm -r sub; mkdir sub; echo n >sub/n.txt;
ln -s a.txt l; mkdir -p d/e; echo deep >d/e/f.txt; chmod 600 d/e/f.txt; chmod u+s d/e/f.txt' >/dev/null
like "$(tool "$B" write '{"path":"/workspace/w.txt","content":"by the write tool\n"}')" '"outcome":.*"ok"' "the write tool writes /workspace"
UP=$(printf '%s' "$INFO" | json workspace_changes)
is "$(cat "$UP/a.txt" 2>/dev/null)" "$(printf 'one\ntwo\nchanged')" "the host's upper has the changed file once the call ended"
is "$(cat "$UP/w.txt" 2>/dev/null)" "by the write tool" "and the write tool's file"
[ -c "$UP/b.txt" ] && [ "$(stat -c %t:%T "$UP/b.txt")" = 0:0 ]; ok $? "a deleted file is a whiteout"
[ "$(python3 -c 'import os,sys; print(os.getxattr(sys.argv[1], "user.overlay.opaque").decode())' "$UP/sub" 2>/dev/null)" = y ] &&
	[ ! -e "$UP/sub/s.txt" ]
ok $? "a directory removed and made again is opaque"
is "$(readlink "$UP/l")" a.txt "a symlink is itself"
is "$(stat -c %a "$UP/d/e/f.txt")" 600 "a mode is kept, its setuid bit is not"
[ ! -e "$UP/keep" ]; ok $? "an untouched directory is not in the upper"
is "$(cd "$WS" && find . | sort | md5sum)" "$TREE" "the host's tree is untouched"

# Incremental: a second change sends only what changed; the rest is linked.
I1=$(stat -c %i "$UP/w.txt")
"$WARD" box exec "$B" -- 'echo more >/workspace/m.txt' >/dev/null
is "$(stat -c %i "$UP/w.txt")" "$I1" "a file unchanged since the last sync is the same inode (linked, not sent again)"
is "$(cat "$UP/m.txt")" more "and the new one is there"

# Hibernate keeps every process with a workspace: a job, and a file in
# /workspace written before; the same PID after the wake; diff and apply
# after the wake show the file.
# The job beats: its PID into /tmp/beat every second (a call cannot see
# the job's processes: each has its own PID namespace).
R=$(tool "$B" bash '{"command":"while :; do echo $$ >/tmp/beat.tmp; mv /tmp/beat.tmp /tmp/beat; sleep 1; done","background":true}')
like "$R" "started job 1" "a job starts"
pid() { "$WARD" box exec "$B" -- 'cat /tmp/beat 2>/dev/null' 2>/dev/null; }
has_pid() { [ -n "$(pid)" ]; }
wait_until 60 has_pid; ok $? "the job is up"
P0=$(pid)
"$WARD" box exec "$B" -- 'echo before-hibernate >/workspace/before.txt' >/dev/null
OUT=$("$WARD" box hibernate "$B" 2>&1)
like "$OUT" "$B: hibernated in [0-9]+ ms, [0-9]+ bytes saved, its processes kept" "hibernated with a workspace, its processes kept"
[ -z "$(qemu_of "$B")" ]; ok $? "no VMM of the box runs on the host"
OUT=$("$WARD" box wake "$B" 2>&1)
like "$OUT" "$B: woken in [0-9]+ ms, its processes where they were" "woken, its processes where they were"
like "$(tool "$B" job_list '{}')" "running" "the job is listed running"
"$WARD" box exec "$B" -- 'rm -f /tmp/beat' >/dev/null
wait_until 30 has_pid; ok $? "the job beats again after the wake"
is "$(pid)" "$P0" "with the same PID inside the box"
is "$("$WARD" box exec "$B" -- 'cat /workspace/before.txt')" before-hibernate "the file in /workspace is there after the wake"
"$WARD" box exec "$B" -- 'echo after-wake >/workspace/after.txt' >/dev/null
is "$(cat "$UP/after.txt" 2>/dev/null)" after-wake "a change after the wake reaches the host's upper"

# diff, --patch and apply of the box's changes (ward run --box).
box_run "$B" ws
is "$RUN_RC" 0 "ward run --box: exit 0"
like "$(cat "$T_TMP/ws.patch" 2>/dev/null)" "^\+before-hibernate" "--patch has the file written before the hibernate"
like "$(cat "$T_TMP/ws.patch" 2>/dev/null)" "^\+made-by-tool" "and the run's own change"
D=$("$WARD" diff "$SID" 2>&1)
like "$D" "\+before-hibernate" "ward diff SESSION shows it"
like "$D" "\+after-wake" "and the change after the wake"
"$WARD" apply --force "$SID" >/dev/null 2>&1
is "$(cat "$WS/before.txt" 2>/dev/null)" before-hibernate "ward apply writes it to the tree"
[ ! -e "$WS/b.txt" ] && [ "$(cat "$WS/w.txt")" = "by the write tool" ]; ok $? "with the deletion and the write tool's file"
kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null; SRV=""

# Rewind is refused for such a box (the guest's copy would not follow).
# --rw twin: the live tree over 9p, whose processes end at a hibernate.
RWS=$T_TMP/rws
mkdir -p "$RWS"
RB=$(box_new --backend vm --image ward-test/python --memory 512M --workspace "$RWS" --rw)
like "$("$WARD" box info "$RB")" '"loses":.*"every process' "--rw twin: its hibernate loses every process (9p)"
"$WARD" box exec "$RB" -- 'echo live >/workspace/live.txt' >/dev/null
is "$(cat "$RWS/live.txt" 2>/dev/null)" live "--rw: the box writes the tree itself"
"$WARD" box destroy "$RB" >/dev/null 2>&1

# The seed: a session's changes outlive its box. A second run of the same
# session (--resume) gets a new box, which starts from the changes the
# host kept: the host sends them to the fresh guest (proto/changeset-writer.c)
# before it mounts the workspace's overlay.
SWS=$T_TMP/sws
mkdir -p "$SWS/sub"
echo keep >"$SWS/a.txt"; echo del >"$SWS/b.txt"; echo s >"$SWS/sub/s.txt"
cat >"$T_TMP/seed1.json" <<'EOF2'
{"turns":[{"text":"change","tools":[{"name":"bash","input":{"command":"cd /workspace && echo one >new.txt && rm b.txt && rm -r sub && mkdir sub && echo n >sub/n.txt && ln -s a.txt l && echo done1"}}]},{"text":"done"}]}
EOF2
# A replay answers by the conversation's turn: the first run's two come first.
cat >"$T_TMP/seed2.json" <<'EOF2'
{"turns":[{"text":"change","tools":[]},{"text":"done"},{"text":"look","tools":[{"name":"bash","input":{"command":"cd /workspace && echo \"new=$(cat new.txt) b=$(ls b.txt 2>&1 | grep -c 'No such') sub=$(ls sub | tr '\\n' ,) l=$(readlink l)\""}}]},{"text":"done"}]}
EOF2
"$WARD" run --json --backend vm --image ward-test/python --workspace "$SWS" \
	--model "replay:$T_TMP/seed1.json" change >"$T_TMP/seed1.out" 2>"$T_TMP/seed1.err"
is "$?" 0 "seed: a first run changes the workspace in its vm box"
SS=$(tail -1 "$T_TMP/seed1.out" | json session)
"$WARD" run --json --backend vm --image ward-test/python --resume "$SS" \
	--model "replay:$T_TMP/seed2.json" look >"$T_TMP/seed2.out" 2>"$T_TMP/seed2.err"
is "$?" 0 "seed: the session resumed, in a new vm box"
like "$(cat "$T_TMP/seed2.out")" "new=one b=1 sub=n.txt, l=a.txt" \
	"the new box starts from the kept changes: a new file, a deletion, a directory made anew (opaque), a symlink"
[ "$(cat "$SWS/b.txt" 2>/dev/null)" = del ] && [ ! -e "$SWS/new.txt" ]; ok $? "and the host's tree is untouched"

"$WARD" box destroy "$B"
[ ! -e "$DISK" ] && [ ! -e "$DISK.ws" ]; ok $? "destroy removes the box's disk and its workspace image"
done_testing
