#!/bin/bash
# The vm backend, under whatever the machine has (TCG here): a microVM box
# boots, answers, runs every tool, bounds its hangs, and is destroyed; the
# VMM stopped or killed from outside is detected and handled.
. "$(dirname "$0")/lib.sh"
command -v qemu-system-x86_64 >/dev/null || skip_all "QEMU is not installed (apt-get install qemu-system-x86)"
ls /boot/vmlinuz-* >/dev/null 2>&1 || skip_all "no kernel in /boot (apt-get install linux-image-amd64)"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$HOME/.cache}
export XDG_STATE_HOME=$T_TMP/state ANTHROPIC_API_KEY=sk-ant-fake-key
WS=$T_TMP/ws
mkdir -p "$WS"
printf 'one\ntwo\nthree\n' >"$WS/a.txt"
qemu_of() { pgrep -f "qemu-system-x86_64.*/$1/" | head -1; }

R=$("$WARD" vm-image build)
like "$R" "^kernel .*vmlinux-" "ward vm-image build: the kernel, extracted for a PVH boot"
like "$R" "initrd .*initramfs-" "and the initramfs with ward-guest"
K=$(printf '%s\n' "$R" | awk '/^kernel/ {print $2}')
is "$(head -c 4 "$K" | od -An -c | tr -d ' ')" '177ELF' "the kernel is an uncompressed ELF"

R=$("$WARD" box create --backend vm --net host 2>&1); RC=$?
is "$RC" 4 "a vm box with --net host is refused (it has no network device)"
like "$R" "no network device" "and says so"

# A cold boot (no snapshot), then the snapshot made on first use and two
# boxes restored from it.
t0=$(now_ms)
C=$(box_new --backend vm --no-snapshot)
MS=$(( $(now_ms) - t0 ))
like "$C" "^box-" "a vm box cold-boots ($MS ms)"
like "$("$WARD" box exec "$C" -- 'echo cold')" "cold" "and answers"
"$WARD" box destroy "$C"
t0=$(now_ms)
B=$(box_new --backend vm --workspace "$WS")
MS=$(( $(now_ms) - t0 ))
like "$B" "^box-" "a vm box from the snapshot ($MS ms; the first one makes the snapshot)"
t0=$(now_ms)
B2=$(box_new --backend vm)
MS=$(( $(now_ms) - t0 ))
lt "$MS" 2000 "a second box restores from the snapshot, well under a cold boot"
like "$("$WARD" box info "$B2")" '"restored":.*true' "box info says it was restored"
U=$("$WARD" box exec "$B2" -- 'cut -d" " -f1 /proc/uptime')
like "$U" "^[0-9]" "the restored VM has the snapshot's state: its uptime ($U s) counts the template's boot"
lt "$MS" "$(awk -v u="$U" 'BEGIN { printf "%d", u * 1000 }')" "longer than the restore took"
"$WARD" box exec "$B2" -- 'echo only-in-b2 > /tmp/mark; echo w > /workspace/w2' >/dev/null
R=$("$WARD" box exec "$B" -- 'cat /tmp/mark 2>&1; ls /workspace')
like "$R" "No such file" "boxes restored from one snapshot are independent (/tmp)"
unlike "$R" "w2" "and so are their workspaces"
R1=$("$WARD" box exec "$B" -- 'head -c 16 /dev/urandom | od -An -tx1')
R2=$("$WARD" box exec "$B2" -- 'head -c 16 /dev/urandom | od -An -tx1')
[ -n "$R1" ] && [ "$R1" != "$R2" ]; ok $? "and do not share RNG state (fresh entropy at START)"
D1=$("$WARD" box exec "$B2" -- 'date +%s'); D0=$(date +%s)
lt "$(( D0 > D1 ? D0 - D1 : D1 - D0 ))" 3 "the restored guest's clock is the host's"
"$WARD" box destroy "$B2"
like "$("$WARD" box info "$B")" '"backend":.*"vm"' "box info says vm"
T() { "$WARD" box tool "$B" "$@" 2>&1; }
txt() { printf '%s' "$1" | json text 2>/dev/null; }

# Every tool.
like "$(txt "$(T read '{"path":"a.txt"}')")" "2	two" "read"
like "$(T write '{"path":"b.txt","content":"bee\n"}')" '"outcome":.*"ok"' "write"
like "$(T edit '{"path":"b.txt","old_string":"bee","new_string":"BEE"}')" '"outcome":.*"ok"' "edit"
like "$(txt "$(T grep '{"pattern":"BEE","mode":"content"}')")" "b.txt:1:BEE" "grep"
like "$(txt "$(T find '{"pattern":"*.txt"}')")" "a.txt" "find"
like "$(txt "$(T ls '{"path":"."}')")" "b.txt" "ls"
R=$("$WARD" box exec "$B" -- 'id -u; uname -r; cat /workspace/b.txt' 2>&1)
like "$R" "^0" "bash: tool commands run as the VM's root (uid 0)"
like "$R" "BEE" "bash sees the edits"
[ ! -e "$WS/b.txt" ]; ok $? "the host's tree is untouched (copy-on-write)"
R=$("$WARD" box exec "$B" -- 'echo x > /sys/fs/cgroup/box/pids.max; cat /sys/fs/cgroup/box/pids.max; test -e /init || test -e /ward || echo no-initramfs
ls /dev/vda /dev/vdb /dev/ttyS0 /dev/console /dev/kmsg 2>&1 | grep -c "No such file"; echo x > /sys/kernel/uevent_helper' 2>&1)
like "$R" "pids.max: Read-only file system" "a tool command (the VM's root) cannot write the VM's cgroups"
like "$R" "^512$" "vm twin: it reads them (pids.max, the box's 512)"
like "$R" "uevent_helper: Read-only file system" "nor the VM's /sys"
like "$R" "(^|[^0-9])5($|[^0-9])" "the box's /dev has none of the VM's disks, serial console or kernel log"
like "$R" "no-initramfs" "ward-guest's own files (/init, its modules) are not in the box's root"

# A background job through the VM's guest (tests/integration/jobs.sh has
# the whole of it on ns): it serves later calls, its port is listed, its
# time limit and job_kill end it.
like "$(T bash '{"command":"mkdir -p /tmp/j && echo served-in-a-vm > /tmp/j/p.txt && cd /tmp/j && exec python3 -m http.server 8765 --bind 127.0.0.1","background":true}')" \
	'started job 1 in the background' "vm: a background bash call starts a job"
for _ in $(seq 150); do T job_list '{}' | grep -q '"port":[[:space:]]*8765' && break; sleep 0.2; done
like "$(T job_list '{}')" '"port":[[:space:]]*8765' "vm: job_list lists the port it listens on (the VM's /proc/net)"
for i in 1 2 3; do
	like "$(txt "$(T bash '{"command":"python3 -c \"import urllib.request; print(urllib.request.urlopen(\\\"http://127.0.0.1:8765/p.txt\\\", timeout=20).read().decode())\""}')")" \
		"served-in-a-vm" "vm: a later call ($i of 3) reaches the job's server"
done
like "$(txt "$(T job_kill '{"id":1}')")" "job 1 was killed by signal 15 \(TERM\).*killed by job_kill" "vm: job_kill ends it"
T0=$(now_ms)
T bash '{"command":"exec sleep 1000","background":true,"timeout":2}' >/dev/null
R=$(txt "$(T job_output '{"id":2,"wait":60}')")
MS=$(( $(now_ms) - T0 ))
like "$R" "its time limit \(2 s\) ran out" "vm: a job's time limit ends it"
lt "$MS" 15000 "vm: within moments of it under emulation (${MS} ms)"

# The model sees a job's end; ward run lists a job left running (a box
# given with --box keeps it). (A run's own box is ns: ward run has no
# --backend; tests/integration/jobs.sh has SIGKILL and the rest there.)
cat >"$T_TMP/vmtold.json" <<EOF
{"turns":[
 {"text":"start","tools":[{"name":"bash","input":{"command":"sleep 0.3; echo the-vm-job-said-goodbye; exit 3","background":true}}]},
 {"expect":"started job","text":"wait","tools":[{"name":"bash","input":{"command":"sleep 4"}}]},
 {"expect":"exited with status 3","text":"told","tools":[{"name":"bash","input":{"command":"exec sleep 1001","background":true}}]},
 {"text":"done"}]}
EOF
"$WARD" run --box "$B" --json --model "replay:$T_TMP/vmtold.json" "vm jobs" >"$T_TMP/vmtold.jsonl" 2>"$T_TMP/vmtold.err"
is "$?" 0 "vm: a run whose job ends while another call runs"
grep -v '^ward: session' "$T_TMP/vmtold.err" | head -5 | sed 's/^/# /'
like "$(grep -c '"type":"round"' "$T_TMP/vmtold.jsonl")" "^4$" "vm: the replay's expectations held: round 3's message told the model of the job's end"
J=$(ls -t "$XDG_STATE_HOME"/ward/sessions/*.jsonl | head -1)
like "$(grep '"role":"user"' "$J" | sed -n 3p)" "background job [0-9]+ .* exited with status 3.*the-vm-job-said-goodbye" \
	"vm: the message tells how the job ended and its last lines (journalled)"
RES=$(tail -1 "$T_TMP/vmtold.jsonl")
LEFT=$(printf '%s' "$RES" | python3 -c 'import json,sys
for j in json.load(sys.stdin).get("jobs", []):
    if j["command"] == "exec sleep 1001": print(j["id"], j["running_at_end"], j["ended_with_box"])')
like "$LEFT" "^[0-9]+ True False$" "vm: ward run's result lists the job left running, going on in the box given with --box"
like "$(txt "$(T job_kill "{\"id\":${LEFT%% *}}")")" "was killed by signal 15" "vm: and it was running there (job_kill ends it)"

# The root: copy-on-write over the host view, its changes on the box's
# own disk, which the host never mounts.
DISK=$XDG_STATE_HOME/ward/disks/$B.img
R=$("$WARD" box exec "$B" -- "echo mine >/usr/local/bin/ward-root-$$ && cat /usr/local/bin/ward-root-$$" 2>&1)
is "$R" mine "vm: the host view's /usr is writable in the box (copy-on-write)"
[ ! -e "/usr/local/bin/ward-root-$$" ]; ok $? "vm: and the host's /usr is unchanged"
[ -f "$DISK" ] && [ "$(stat -c %s "$DISK")" = $((10 << 30)) ] && [ "$(du -k "$DISK" | cut -f1)" -lt 65536 ]
ok $? "vm: the changes are on the box's own disk, sparse ($(du -k "$DISK" | cut -f1) KiB of a 10 GiB file)"
! grep -qF "$DISK" /proc/mounts && [ -z "$(losetup -j "$DISK" 2>/dev/null)" ]
ok $? "vm: the host does not mount the box's disk (no mount, no loop device)"
# A .deb of its own, installed over the host view's package database.
P=$T_TMP/deb
mkdir -p "$P/DEBIAN" "$P/usr/bin"
printf 'Package: ward-vm-hello\nVersion: 1.0\nArchitecture: all\nMaintainer: ward tests <t@ward.invalid>\nDescription: a test\n' >"$P/DEBIAN/control"
printf '#!/bin/sh\necho hello from the vm box\n' >"$P/usr/bin/ward-vm-hello"
chmod 755 "$P/usr/bin/ward-vm-hello"
dpkg-deb --root-owner-group --build "$P" "$WS/hello.deb" >/dev/null
R=$("$WARD" box exec "$B" -- 'dpkg -i /workspace/hello.deb >/dev/null && ward-vm-hello && dpkg -s ward-vm-hello | grep Status' 2>&1)
like "$R" "hello from the vm box" "vm: dpkg -i of a local .deb works over the host view"
! dpkg -s ward-vm-hello >/dev/null 2>&1 && [ ! -e /usr/bin/ward-vm-hello ]; ok $? "vm: and the host's package database is unchanged"
"$WARD" box hibernate "$B" >/dev/null
[ -f "$DISK" ]; ok $? "vm: hibernated, the box keeps its disk"
is "$("$WARD" box exec "$B" -- "cat /usr/local/bin/ward-root-$$")" mine "vm: woken, the root's changes are there"
DB=$(box_new --backend vm --disk 64M)
like "$("$WARD" box exec "$DB" -- "cat /usr/local/bin/ward-root-$$ 2>&1")" "No such file" \
	"vm: the next box's root does not have them"
R=$("$WARD" box exec "$DB" -- 'echo small >/usr/local/small && echo small-ok; head -c 100000000 /dev/urandom >/tmp/fill; echo rc=$?' 2>&1)
like "$R" "small-ok" "vm twin: a small change to the root fits under --disk 64M"
like "$R" "No space left on device" "vm: 100 MB into the root runs out of space at --disk"
like "$R" "rc=1" "vm: and fails"
ok "$([ "$(du -k "$XDG_STATE_HOME/ward/disks/$DB.img" | cut -f1)" -le 65536 ]; echo $?)" "vm: the box's disk holds no more than --disk on the host"
"$WARD" box destroy "$DB"
# A box whose keeper is killed: reap removes its disk as its keeper would.
KB=$(box_new --backend vm)
RT=$XDG_RUNTIME_DIR/ward/boxes	# lib.sh's, this test's own
KP=$(cat "$RT/$KB/keeper.pid")
[ -f "$XDG_STATE_HOME/ward/disks/$KB.img" ]; ok $? "vm: a box has its disk"
kill -9 "$KP"
for _ in $(seq 100); do gone "$KP" && break; sleep 0.05; done
"$WARD" box reap >/dev/null
[ ! -e "$XDG_STATE_HOME/ward/disks/$KB.img" ]; ok $? "vm: its keeper killed, ward box reap removes its disk"

# The same walls as the ns backend, inside the VM.
SECRET=$T_TMP/vm-secret.txt
echo "vm-secret-$$" >"$SECRET"
UP=$(printf '/..%.0s' $(seq 16))
hits=0
for fd in $(seq 0 12); do
	T read "{\"path\":\"/proc/self/fd/$fd$UP/workspace/a.txt\"}" | grep -q '"outcome":.*"ok"' && hits=$((hits + 1))
done
is "$hits" 0 "vm: no file tool follows a /proc/self/fd link (fds 0-12)"
like "$(T read '{"path":"/proc/self/fd/3/workspace/a.txt"}')" "/proc link" "vm: and says why"
like "$(txt "$(T read '{"path":"../../../workspace/a.txt"}')")" "two" "vm twin: a path with .. past the root resolves inside the box"
calls_view "$B" vm-canary-7777
unlike "$VIEW" "vm-canary-7777" "vm: a call does not see another call's processes"
unlike "$VIEW" "^/init|ward-guest" "vm: a call's PID 1 is not ward-guest"
like "$("$WARD" box exec "$B" -- 'sleep 3 & ps -eo args' 2>&1)" "sleep 3" "vm twin: a call sees its own background process"
like "$("$WARD" box exec "$B" -- "python3 -c '$IOU_PROBE'" 2>&1)" "io_uring_setup -1 Operation not permitted" "vm: io_uring_setup is refused to tool commands"
"$WARD" box tool "$B" write '{"path":"nul\u0000evil","content":"x"}' >/dev/null 2>&1
is $? 65 "vm: a NUL in a path is bad input"
# --rw: the workspace is the host's tree over 9p; setuid bits never reach it.
RWS=$T_TMP/rw
mkdir -p "$RWS"
RB=$(box_new --backend vm --workspace "$RWS" --rw)
R=$("$WARD" box exec "$RB" -- 'cd /workspace; cp /bin/sh sh; chmod 4755 sh; chmod g+s sh; touch s2; chmod 6755 s2; python3 -c "import os; os.open(\"o\", os.O_CREAT|os.O_WRONLY, 0o4755)"; touch x; chmod 0751 x && echo twin-ok' 2>&1)
is "$(printf '%s\n' "$R" | grep -c 'Operation not permitted')" 4 "vm --rw: chmod 4755, g+s, 6755 and open with 04755 are refused"
is "$(find "$RWS" -perm /6000 | wc -l)" 0 "vm --rw: no setuid or setgid file reached the host's tree (9p)"
like "$R" "twin-ok" "vm twin: chmod 0751 works"
is "$(stat -c %a "$RWS/x" 2>/dev/null)" 751 "vm twin: and reaches the host's tree"
# A job ends with its box, proven by a canary it would write into the
# host's tree (--rw) after a delay; the twin, a job left to run, writes it.
"$WARD" box tool "$RB" bash '{"command":"sleep 1; touch /workspace/job-twin","background":true}' >/dev/null 2>&1
wait_until 30 test -e "$RWS/job-twin"; ok $? "vm twin: a job left to run writes its file into the host's tree (--rw)"
R=$("$WARD" box tool "$RB" bash '{"command":"sleep 4; touch /workspace/job-canary","background":true}' 2>&1)
like "$R" "started job 2" "vm: a job that would write a canary in 4 s"
Q=$(qemu_of "$RB")
"$WARD" box destroy "$RB"
wait_until 10 gone "$Q"; ok $? "vm: destroying the box ends its VMM, and so every process in it"
# (the canary's time passes: nothing may write it now)
sleep 6	# time: past the job's 4 s delay, when its canary would be written
[ ! -e "$RWS/job-canary" ]; ok $? "vm: the job's canary never appears (6 s after the box went, 4 s its delay)"
# The disk ceiling holds over 9p: the layer is the same loop-mounted image.
if "$WARD" doctor | grep -q '^ok  *disk ceiling'; then
	DB=$(box_new --backend vm --workspace "$WS" --disk 64M)
	R=$("$WARD" box exec "$DB" -- 'echo small > /workspace/small && echo small-ok; dd if=/dev/zero of=/workspace/fill bs=1M count=200; echo rc=$?' 2>&1)
	like "$R" "small-ok" "vm twin: a small file is written under a 64 MiB ceiling"
	like "$R" "No space left on device" "vm: dd of 200 MiB into /workspace runs out of space"
	like "$R" "rc=1" "vm: and fails"
	"$WARD" box destroy "$DB"
fi

# Hangs end as time-outs, with the VM intact.
t0=$(now_ms)
R=$("$WARD" box exec "$B" --timeout 2s -- 'while true; do :; done' 2>&1)
MS=$(( $(now_ms) - t0 ))
like "$R" "timed out after 2 s" "a busy loop in the VM: timed out"
lt "$MS" 4000 "in under 4 s"
t0=$(now_ms)
R=$("$WARD" box exec "$B" --timeout 2s -- 'trap "" TERM; (setsid sh -c "trap \"\" TERM; sleep 3; touch /workspace/canary-vm" &); sleep 100' 2>&1)
MS=$(( $(now_ms) - t0 ))
lt "$MS" 4000 "TERM trapped, setsid, double fork: timed out in under 4 s"
# A 2 s limit; back by 1 s after the host's deadline (limit + 2 s grace +
# 1 s margin), where the keeper would destroy the VM: under emulation,
# killing hundreds of processes can take the guest seconds.
vtimed() { # vtimed DESC CMD
	local t0; t0=$(now_ms)
	OUT=$("$WARD" box exec "$B" --timeout 2s -- "$2" 2>&1); RC=$?
	lt "$(( $(now_ms) - t0 ))" 6000 "$1: back within 1 s of the host's deadline"
}
CAN='(sleep 3; touch /workspace/canary-vm) &'
vtimed "read -r with stdin closed" "read -r x; echo read-exit=\$?"
like "$OUT" "read-exit=1" "read -r ends on EOF"
vtimed "python input()" "python3 -c 'input()'"
like "$OUT" "EOFError|timed out" "python input() ends (EOFError, or the limit under emulation)"
vtimed "recv on a socket that never answers" "$CAN python3 -c \"
import socket
s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(1)
c=socket.create_connection(s.getsockname()); c.recv(1)\""
is "$RC" 124 "recv: time-out"
vtimed "retry loop without backoff" "$CAN while true; do (echo > /dev/tcp/127.0.0.1/9) 2>/dev/null || true; done"
is "$RC" 124 "retry loop: time-out"
vtimed "fork bomb" ':(){ :|:& };:; sleep 30'
is "$RC" 124 "fork bomb: time-out at the VM's pids ceiling"
R=$("$WARD" box exec "$B" --timeout 20s -- ':(){ :|:& };:; sleep 1; echo survived' 2>&1)
like "$("$WARD" box exec "$B" -- 'echo still here')" "still here" "a fork bomb in the VM: the VM still answers"
R=$(T bash '{"command":"python3 -c \"b=[]\nwhile True: b.append(bytearray(64<<20))\"; echo rc=$?","timeout":60}')
like "$R" "rc=(137|1)" "a memory balloon ends at the VM's memory ceiling"
like "$("$WARD" box exec "$B" -- 'echo alive')" "alive" "and the VM answers after it"
sleep 3.5	# time: past the 3 s after which any survivor writes its canary
[ ! -e "$WS/canary-vm" ] && ! "$WARD" box exec "$B" -- 'test -e /workspace/canary-vm'; ok $? "no survivor wrote a canary"

# The VMM stopped from outside: the host's deadline destroys the VM.
Q=$(qemu_of "$B")
like "$Q" "^[0-9]+$" "the box's VMM is a host process"
"$WARD" box exec "$B" --timeout 2s -- 'sleep 30' >"$T_TMP/stop.out" 2>&1 &
EP=$!
wait_until 10 box_calls "$B" 1
t0=$(now_ms)
kill -STOP "$Q"
wait $EP
MS=$(( $(now_ms) - t0 ))
like "$(cat "$T_TMP/stop.out")" "destroyed|did not answer" "a stopped VMM: the call says the box was destroyed"
lt "$MS" 6000 "detected by the host's deadline (2 s + grace + margin)"
wait_until 5 eval '! kill -0 "$Q" 2>/dev/null'
! kill -0 "$Q" 2>/dev/null; ok $? "the stopped VMM is gone"
like "$("$WARD" box exec "$B" -- 'cat /workspace/b.txt')" "BEE" "a new VM answers, and sees the workspace's changes"

# The VMM killed from outside during a call: the outcome is unknown, the
# box is remade.
Q=$(qemu_of "$B")
"$WARD" box tool "$B" bash '{"command":"sleep 20"}' >"$T_TMP/kill.out" 2>&1 &
EP=$!
wait_until 10 box_calls "$B" 1
kill -9 "$Q"
wait $EP
like "$(cat "$T_TMP/kill.out")" '"outcome":.*"unknown"' "a killed VMM: the call's outcome is unknown"
like "$("$WARD" box exec "$B" -- 'echo back')" "back" "and a new VM answers"

# ward run --box on a vm box: the changes in the box's layer (the tool
# commands' b.txt and the model's out.txt) are reported, patched and found
# by ward diff; the tree is untouched until --apply.
"$WARD" box exec "$B" -- 'echo root-only >/usr/local/ward-root-change' >/dev/null
serve tool
"$WARD" run --provider anthropic --base-url "$URL" --model fake-model --box "$B" --json \
	--patch "$T_TMP/vm.patch" "write a file" >"$T_TMP/vmrun.out" 2>"$T_TMP/vmrun.err" </dev/null
is "$?" 0 "vm --box run: exit 0"
like "$(cat "$T_TMP/vmrun.out")" '"changed_files":.*"path":"out.txt"' "vm --box run: the result lists the box's change"
like "$(cat "$T_TMP/vm.patch" 2>/dev/null)" "^\+\+\+ b/out.txt" "vm --box run: the patch has it"
like "$(cat "$T_TMP/vm.patch" 2>/dev/null)" "^\+BEE" "and the earlier change to b.txt"
unlike "$(cat "$T_TMP/vmrun.out" "$T_TMP/vm.patch" 2>/dev/null)" "ward-root-change" "vm --box run: the root's changes are in neither"
SID=$(tail -1 "$T_TMP/vmrun.out" | json session)
D=$("$WARD" diff "$SID" 2>&1)
like "$D" "\+made-by-tool" "vm --box run: ward diff SESSION shows it"
unlike "$D" "ward-root-change" "and not the root's changes (only /workspace is diffed)"
[ ! -e "$WS/out.txt" ]; ok $? "vm --box run: the tree is untouched"
kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null; SRV=""

# .git is read-only in a vm box too (the guest binds it before any call),
# with --rw: the box cannot plant a hook; git reads the repository and a
# git status changes nothing. Twin: --allow-git-changes leaves it writable.
GW=$T_TMP/gitws
mkdir -p "$GW/nested"
for d in "$GW" "$GW/nested"; do
	git -C "$d" init -q && echo g >"$d/g.txt" && git -C "$d" add g.txt &&
		git -C "$d" -c user.name=t -c user.email=t@t commit -qm init
done
IDX=$(md5sum <"$GW/.git/index")
G=$(box_new --backend vm --workspace "$GW" --rw)
R=$("$WARD" box exec "$G" -- 'cd /workspace; git status --short; echo st=$?; echo x >.git/hooks/pre-commit; echo hook=$?;
git config core.fsmonitor "touch /tmp/x"; echo cfg=$?; echo x >>nested/.git/config; echo nested=$?; echo p >p.txt' 2>&1 | tr '\n' ' ')
like "$R" "st=0" "vm: git status works in the box"
like "$R" "Read-only file system hook=1" "vm --rw: a write to .git/hooks/pre-commit fails (read-only)"
like "$R" "could not lock config file .git/config: Read-only file system cfg=255" "vm: git config core.fsmonitor fails"
like "$R" "nested=1" "vm: a nested repository's .git is read-only too"
[ ! -e "$GW/.git/hooks/pre-commit" ] && ! grep -q fsmonitor "$GW/.git/config" && [ "$(md5sum <"$GW/.git/index")" = "$IDX" ]
ok $? "vm --rw: the host's .git is as it was (no hook, no fsmonitor, the same index)"
is "$(cat "$GW/p.txt" 2>/dev/null)" p "vm --rw twin: the box writes the tree itself"
"$WARD" box destroy "$G"
G=$(box_new --backend vm --workspace "$GW")
R=$("$WARD" box exec "$G" -- 'cd /workspace; git status --short; echo x >.git/hooks/pre-commit; echo hook=$?' 2>&1 | tr '\n' ' ')
like "$R" "Read-only file system hook=1" "vm copy-on-write: a write to .git/hooks/pre-commit fails (read-only)"
UP=$("$WARD" box info "$G" | json workspace_changes)
[ -d "$UP" ] && [ ! -e "$UP/.git" ]; ok $? "vm copy-on-write: a git status in the box is no change (no .git in its layer)"
"$WARD" box destroy "$G"
G=$(box_new --backend vm --workspace "$GW" --allow-git-changes)
like "$("$WARD" box exec "$G" -- 'echo x >/workspace/.git/hooks/pre-commit; echo hook=$?' 2>&1)" "hook=0" \
	"vm twin: with --allow-git-changes the box writes .git (in its copy)"
[ ! -e "$GW/.git/hooks/pre-commit" ]; ok $? "and the host's tree is untouched (copy-on-write)"
"$WARD" box destroy "$G"

# Destroy: the VMM is gone at once.
Q=$(qemu_of "$B")
t0=$(now_ms)
"$WARD" box destroy "$B"
MS=$(( $(now_ms) - t0 ))
lt "$MS" 1000 "destroy returns in under 1 s"
! kill -0 "$Q" 2>/dev/null; ok $? "the VMM is gone"
[ ! -e "$DISK" ]; ok $? "the box's disk (its root's changes) is gone with it"
is "$(pgrep -fc "qemu-system-x86_64.*/$B/")" 0 "no process of the box is left"
done_testing
