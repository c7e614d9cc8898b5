#!/bin/bash
# ward box fork of a vm box: the parent's running machine is saved (RAM
# and devices, through QEMU's migration) and its disk copied while it
# stands still; it goes on, and the fork resumes the same state over its
# copy. A python job running in the parent runs in both, with the same
# PID and memory; each box changes its own files; each has its own RNG
# (reseeded at the fork), clock and hostname. What cannot be saved whole
# (a 9p share: a box without --image, or with a --rw workspace) is
# refused in one line, beside twins that fork (a copy-on-write workspace
# is a block image, no 9p share).
. "$(dirname "$0")/lib.sh"
command -v qemu-system-x86_64 >/dev/null || skip_all "QEMU is not installed (apt-get install qemu-system-x86)"
ls /boot/vmlinuz-* >/dev/null 2>&1 || skip_all "no kernel in /boot (apt-get install linux-image-amd64)"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$HOME/.cache} ANTHROPIC_API_KEY=sk-ant-fake-key
qemu_of() { pgrep -f "qemu-system-x86_64.*/$1/" | head -1; }
novmm() { [ -z "$(qemu_of "$1")" ]; }
. "$(dirname "$0")/python-image.sh"
python_image

# The job: holds a 1 MB object and a counter, answers with its PID, the
# object's checksum and the count of requests it has served.
SRV='import hashlib, http.server, os
blob = os.urandom(1 << 20)
n = 0
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        global n
        n += 1
        b = ("%d %s %d\n" % (os.getpid(), hashlib.sha256(blob).hexdigest(), n)).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 8765), H)
open("/tmp/srv.ready.tmp", "w").write("%d %s\n" % (os.getpid(), hashlib.sha256(blob).hexdigest()))
os.rename("/tmp/srv.ready.tmp", "/tmp/srv.ready")
s.serve_forever()'
# The first box after a new guest makes the snapshot (a TCG boot): once
# more if a loaded machine did not finish within create's bound.
P=$(box_new --backend vm --image ward-test/python --memory 512M 2>/dev/null) ||
	P=$(box_new --backend vm --image ward-test/python --memory 512M)
like "$P" "^box-" "a vm box of the python image (no --workspace: no 9p share)"
W=$(python3 -c 'import json,sys; print(json.dumps({"path":"/tmp/srv.py","content":sys.argv[1]}))' "$SRV")
like "$(tool "$P" write "$W")" '"outcome":.*"ok"' "the job's script is written"
like "$(tool "$P" bash '{"command":"exec python3 /tmp/srv.py","background":true}')" "started job 1" "the python job starts"
# Its start is a minute under a loaded TCG: calls in a row wait for it.
ready() { ID=$("$WARD" box exec "$P" -- 'cat /tmp/srv.ready 2>/dev/null'); [ -n "$ID" ]; }
wait_until 300 ready
like "$ID" '^[0-9]+ [0-9a-f]{64}$' "the job listens"
ask() { "$WARD" box exec "$1" -- 'wget -qO- http://127.0.0.1:8765/' 2>&1; }
is "$(ask "$P")" "$ID 1" "it answers with its PID, its object's checksum and its count (1)"
"$WARD" box exec "$P" -- 'echo parent-change >/workspace/f.txt' >/dev/null
is "$("$WARD" box exec "$P" -- 'hostname')" ward "the parent's hostname is ward's"
# Its identity, read before the fork: a fork's must differ (the kernel's
# boot id is in the saved memory; the box's own is bound over it).
bootid() { "$WARD" box exec "$1" -- 'cat /proc/sys/kernel/random/boot_id'; }
BOOT=$(bootid "$P")
like "$BOOT" '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' "the parent's boot id is a UUID"
is "$(bootid "$P")" "$BOOT" "and the same at each call"
"$WARD" box exec "$P" -- 'echo 0123456789abcdef0123456789abcdef >/etc/machine-id' >/dev/null
# The kernel's own, which the read tool reads (it runs in ward-guest's
# namespace): what the box's stands in for.
kbootid() { tool "$1" read '{"path":"/proc/sys/kernel/random/boot_id"}' | json text | cut -f2; }
KB=$(kbootid "$P")
like "$KB" '^[0-9a-f-]{36}$' "the kernel's boot id is a UUID too"
[ "$KB" != "$BOOT" ]; ok $? "and not the box's"

# Two forks of the running box.
T0=$(now_ms)
C1=$("$WARD" box fork "$P" 2>"$T_TMP/fork1.err"); RC=$?
T1=$(now_ms)
echo "$C1" >>"$T_TMP/boxes"
is "$RC" 0 "ward box fork of a running vm box: a new box ($((T1 - T0)) ms under this accelerator)"
like "$(cat "$T_TMP/fork1.err")" "forked $P as $C1 in [0-9]+ ms \\($P stood still [0-9]+ ms\\): its machine \\([0-9]+ bytes of state\\) and its disk \\([0-9]+ bytes\\) copied; its processes run on in both" \
	"stderr says the machine and the disk were copied and the processes carried"
C2=$("$WARD" box fork "$P" kid-two 2>/dev/null)
echo "$C2" >>"$T_TMP/boxes"
is "$C2" kid-two "a second fork, named as asked"
I=$("$WARD" box info "$C1")
is "$(json forked_from.box <<<"$I") $(json forked_from.processes <<<"$I")" "$P carried" "info: whose fork, processes carried"
like "$(json forked_from.state_bytes <<<"$I")" '^[1-9][0-9]*$' "info: the bytes of machine state the fork resumed"

for c in "$C1" "$C2"; do
	is "$(ask "$c")" "$ID 2" "fork $c: the job runs, the same PID and object, its count going on from the parent's"
	like "$(tool "$c" job_list '{}')" "running" "fork $c: its job is listed running"
	is "$("$WARD" box exec "$c" -- 'cat /workspace/f.txt')" parent-change "fork $c: the parent's changed file"
	is "$("$WARD" box exec "$c" -- 'hostname')" "$c" "fork $c: its hostname is its own name"
	B1=$(bootid "$c")
	like "$B1" '^[0-9a-f-]{36}$' "fork $c: a boot id"
	[ "$B1" != "$BOOT" ]; ok $? "fork $c: its boot id is its own ($B1, the parent's $BOOT)"
	is "$(kbootid "$c")" "$KB" "fork $c: the kernel's own is the parent's (it is in the saved memory)"
	MID=$("$WARD" box exec "$c" -- 'cat /etc/machine-id')
	like "$MID" '^[0-9a-f]{32}$' "fork $c: a machine id"
	[ "$MID" != 0123456789abcdef0123456789abcdef ]; ok $? "fork $c: its machine id is its own, not the parent's"
	echo "$B1 $MID" >>"$T_TMP/ids"
	# The guest's time lies between the host's before and after the call
	# (which is seconds under a loaded TCG); a guest starved of its timer
	# ticks there falls seconds behind, so 10 s either side.
	H0=$(date +%s); GT=$("$WARD" box exec "$c" -- 'date +%s'); H1=$(date +%s)
	[ "$GT" -ge $((H0 - 10)) ] && [ "$GT" -le $((H1 + 10)) ]; ok $? "fork $c: its clock is the host's (guest $GT, host $H0..$H1)"
	[ -n "$(qemu_of "$c")" ]; ok $? "fork $c: a VMM of its own"
done
is "$(ask "$P")" "$ID 2" "the parent's job runs on (its count its own)"
is "$(bootid "$P") $("$WARD" box exec "$P" -- 'cat /etc/machine-id')" "$BOOT 0123456789abcdef0123456789abcdef" \
	"the parent keeps its boot id and machine id"
[ "$(sort -u "$T_TMP/ids" | wc -l)" = 2 ]; ok $? "the two forks' ids differ from each other's"
is "$(ask "$C1")" "$ID 3" "and each job counts on its own"
rnd() { "$WARD" box exec "$1" -- 'head -c 16 /dev/urandom | od -An -tx1 | tr -d " \n"'; }
R0=$(rnd "$P"); R1=$(rnd "$C1"); R2=$(rnd "$C2")
like "$R0$R1$R2" '^[0-9a-f]{96}$' "each box's kernel RNG gives bytes"
[ "$R0" != "$R1" ] && [ "$R0" != "$R2" ] && [ "$R1" != "$R2" ]; ok $? "and no two give the same (each reseeded at the fork)"

"$WARD" box exec "$C1" -- 'echo child-one >/workspace/f.txt' >/dev/null
"$WARD" box exec "$C2" -- 'echo child-two >/workspace/f.txt' >/dev/null
is "$("$WARD" box exec "$C1" -- 'cat /workspace/f.txt')" child-one "the first fork changes its own copy"
is "$("$WARD" box exec "$C2" -- 'cat /workspace/f.txt')" child-two "the second its own"
is "$("$WARD" box exec "$P" -- 'cat /workspace/f.txt')" parent-change "the parent is unchanged"

# A fork hibernates and wakes with its processes, as any box.
like "$("$WARD" box hibernate "$C2" 2>&1)" "its processes kept" "a fork hibernates, its processes kept"
"$WARD" box wake "$C2" >/dev/null 2>&1
is "$(ask "$C2")" "$ID 3" "and wakes with its job where it was"
is "$("$WARD" box exec "$C2" -- 'hostname')" kid-two "its hostname kept"
is "$(bootid "$C2") $("$WARD" box exec "$C2" -- 'cat /etc/machine-id')" "$(sed -n 2p "$T_TMP/ids")" \
	"and its boot id and machine id (a wake is not a fork)"

# Refused: a hibernated vm box (wake it first) and a running call.
"$WARD" box hibernate "$C2" >/dev/null 2>&1
E=$("$WARD" box fork "$C2" 2>&1); RC=$?
is "$RC $(echo "$E" | wc -l)" "1 1" "fork of a hibernated vm box: refused, one line"
like "$E" "box $C2 is hibernated: a vm box forks from its running machine; wake it first" "saying what to do"

# Destroy: each box's VMM goes, and the others run on.
for c in "$C1" "$C2"; do
	"$WARD" box destroy "$c" >/dev/null 2>&1
	wait_until 10 novmm "$c"; ok $? "destroy $c: no VMM of it is left"
	[ ! -e "$XDG_STATE_HOME/ward/disks/$c.img" ]; ok $? "destroy $c: its disk is gone"
done
is "$(ask "$P")" "$ID 3" "the parent's job runs on after its forks are destroyed"
ls "$XDG_STATE_HOME/ward/disks/" | grep -q '\.fork'; [ $? -ne 0 ]; ok $? "no fork's file is left beside the disks"

# What cannot be saved whole is refused in one line; the twin above forks.
H=$(box_new --backend vm --memory 512M)
E=$("$WARD" box fork "$H" 2>&1); RC=$?
is "$RC $(echo "$E" | wc -l)" "1 1" "fork of a vm box without --image: refused, one line"
like "$E" "cannot fork box $H: a vm box without --image reads the host's /usr over a 9p share, which QEMU 7.2 cannot save, so its running machine cannot be forked" \
	"saying why"
[ -n "$(qemu_of "$H")" ] && like "$("$WARD" box exec "$H" -- 'echo still-here')" still-here "and that box runs on"
WS=$T_TMP/ws; mkdir -p "$WS"; echo tree >"$WS/t.txt"
K=$(box_new --backend vm --image ward-test/python --memory 512M --workspace "$WS" --rw)
E=$("$WARD" box fork "$K" 2>&1); RC=$?
is "$RC $(echo "$E" | wc -l)" "1 1" "fork of a vm box with a --rw workspace: refused, one line"
like "$E" "cannot fork box $K: a vm box's --rw workspace is a 9p share" "saying why"
"$WARD" box destroy "$K" >/dev/null 2>&1
# The twin: a copy-on-write workspace (a block image) forks, each box with
# its own copy of the workspace's changes.
K=$(box_new --backend vm --image ward-test/python --memory 512M --workspace "$WS")
"$WARD" box exec "$K" -- 'echo parent >/workspace/w.txt' >/dev/null
KC=$("$WARD" box fork "$K" 2>/dev/null | tail -1)
like "$KC" "^box-" "twin: a vm box with a copy-on-write workspace forks"
is "$("$WARD" box exec "$KC" -- 'cat /workspace/w.txt /workspace/t.txt' 2>&1)" "parent
tree" "the fork has the parent's change and the tree"
"$WARD" box exec "$KC" -- 'echo child >/workspace/w.txt' >/dev/null
is "$("$WARD" box exec "$K" -- 'cat /workspace/w.txt')" parent "the parent's workspace is its own"
is "$(cat "$WS/t.txt")" tree "and the tree is untouched"
"$WARD" box destroy "$KC" >/dev/null 2>&1
"$WARD" box destroy "$K" >/dev/null 2>&1
"$WARD" box destroy "$P" >/dev/null 2>&1
wait_until 10 novmm "$P"; ok $? "destroy of the parent: no VMM of it is left"
done_testing
