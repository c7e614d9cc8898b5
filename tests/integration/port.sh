#!/bin/bash
# A box's port opened to the host (ward box port, --publish): a server in
# the box answers on the host's loopback through the keeper; another box
# cannot reach it; it is counted; it closes with the box; a headless
# Chromium on the host loads the page through it and a screenshot shows it.
# port.sh vm: the same on the vm backend (its streams cross the VM's
# network port; the ns helper's checks are ns's own).
. "$(dirname "$0")/lib.sh"
BE=${1:-ns}
if [ "$BE" = vm ]; then
	command -v qemu-system-x86_64 >/dev/null || skip_all "QEMU is not installed (apt-get install qemu-system-x86)"
	ls /boot/vmlinuz-* >/dev/null 2>&1 || skip_all "no kernel in /boot (apt-get install linux-image-amd64)"
	export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$HOME/.cache}
	"$WARD" vm-image build >"$T_TMP/vm-image.log" 2>&1 || skip_all "no vm image here: $(tail -1 "$T_TMP/vm-image.log")"
fi
# bnew [create flags]: a box on the backend. vm: booted cold (a snapshot
# is made at the first create of a new guest, which a loaded machine may
# not finish within a create's time), tried three times.
bnew() {
	[ "$BE" = vm ] || { box_new "$@"; return; }
	local i
	for i in 1 2 3; do box_new --backend vm --no-snapshot "$@" && return 0; done
	return 1
}

SRV_PIDS=""
trap 'for p in $SRV_PIDS; do kill $p 2>/dev/null; done' EXIT
# serve_in BOX PORT: a web server in the box, a long call in the
# background (jobs of their own come with issue 25's jobs); its page is
# the box's /tmp/www.
serve_in() {
	local page='<!doctype html><html><body style="margin:0;background:#fff">
<div style="width:100%;height:400px;background:rgb(255,0,0)"></div>
<h1 style="font:48px sans-serif">served from the box</h1></body></html>'
	"$WARD" box exec "$1" -- "mkdir -p /tmp/www && printf '%s\n' '$3' >/tmp/www/index.html" >/dev/null 2>&1
	tool "$1" write "$(python3 -c 'import json,sys; print(json.dumps({"path": "/tmp/www/page.html", "content": sys.argv[1]}))' "$page")" >/dev/null
	"$WARD" box exec "$1" --timeout 300s -- "cd /tmp/www && exec python3 -m http.server $2 --bind 127.0.0.1" \
		>"$T_TMP/srv-$1-$2.log" 2>&1 &
	SRV_LAST=$!
	SRV_PIDS="$SRV_PIDS $!"
}
# answer ADDR PATH: what the server says, waiting for it to be up (bounded: 15 s).
answer() {
	local r
	for _ in $(seq 75); do
		r=$(curl -sS -m 2 "http://$1$2" 2>/dev/null) && { printf '%s' "$r"; return 0; }
		sleep 0.2
	done
	return 1
}

A=$(bnew --publish 8000)
L=$("$WARD" box port "$A")
like "$L" '^8000 127\.0\.0\.1:[0-9]+$' "--publish 8000: ward box port lists it, on the host's loopback"
ADDR=${L#8000 }
is "$("$WARD" box port "$A" 8000)" "$ADDR" "ward box port BOX 8000 prints the same address (asked again: the one open)"
serve_in "$A" 8000 "hello from box A"
SRV_A=$SRV_LAST
R=$(answer "$ADDR" /index.html)
is "$R" "hello from box A" "the box's server answers on the host's loopback through the published port"
I=$("$WARD" box info "$A")
is "$(json ports <<<"$I" | python3 -c 'import json,sys; p=json.load(sys.stdin)[0]; print(p["port"], p["connections"] >= 1, p["bytes_in"] > 0, p["bytes_out"] > 0)')" \
	"8000 True True True" "info counts the port's connections and bytes both ways"

# The keeper's helper (ward-port): in the box's user and network
# namespaces, in none of its others, holding /dev/null and its socket to
# the keeper only.
if [ "$BE" = ns ]; then
KP=$(json keeper_pid <<<"$I"); GP=$(json guest_pid <<<"$I")
HP_PID=$(for c in $(cat "/proc/$KP/task/$KP/children"); do [ "$(cat "/proc/$c/comm")" = ward-port ] && echo "$c"; done | head -1)
[ -n "$HP_PID" ]; ok $? "the keeper has a helper for the port (ward-port)"
ns_same() { [ "$(readlink "/proc/$1/ns/$3")" = "$(readlink "/proc/$2/ns/$3")" ] && echo same || echo other; }
is "$(ns_same "$HP_PID" "$GP" net) $(ns_same "$HP_PID" "$GP" user)" "same same" "the helper is in the box's network and user namespaces"
is "$(ns_same "$HP_PID" "$GP" pid) $(ns_same "$HP_PID" "$GP" mnt) $(ns_same "$HP_PID" "$KP" pid) $(ns_same "$HP_PID" "$KP" mnt)" \
	"other other same same" "and in none of its others (the keeper's PID and mount namespaces: no process of the box sees it)"
is "$(for f in /proc/$HP_PID/fd/*; do readlink "$f"; done | sed 's/socket:.*/socket/' | sort | uniq -c | awk '{print $1, $2}' | paste -sd,)" \
	"3 /dev/null,1 socket" "it holds /dev/null (0, 1, 2) and one socket, nothing else of the host's"
else
	# vm: no helper; the VM's loopback is its own (it has no network
	# device), so the published address does not lead back to the host.
	R=$("$WARD" box exec "$A" -- "curl -sS --noproxy '*' -m 5 http://$ADDR/index.html; echo rc=\$?" 2>&1)
	like "$R" "rc=7" "vm: inside the box, the host's published address is the VM's own loopback (refused)"
fi

# ward box port BOX PORT on a box made without --publish.
P2=$("$WARD" box port "$A" 8001)
like "$P2" '^127\.0\.0\.1:[0-9]+$' "ward box port opens another port later"
R=$(curl -sS -m 5 "http://$P2/" 2>&1); RC=$?
[ "$RC" -eq 52 ] || [ "$RC" -eq 56 ]; ok $? "nothing listens on 8001 in the box: the connection is closed at once (curl rc $RC)"
is "$(json ports <<<"$("$WARD" box info "$A")" | python3 -c 'import json,sys; print([p["refused"] for p in json.load(sys.stdin) if p["port"]==8001][0] >= 1)')" \
	True "and counted as refused"
# An address asked for: another loopback address (and twin: the default is 127.0.0.1).
P3=$("$WARD" box port "$A" 127.0.0.2:0:8000 2>&1); RC=$?
is "$RC" 64 "the same box port at another address: refused (64)"
like "$P3" "port 8000 is open at 127.0.0.1:" "saying where it is open"
HP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
P4=$("$WARD" box port "$A" "127.0.0.2:$HP:8000" 2>&1)
like "$P4" "already" "asked twice with another host port: refused too" # (positive twin below)
B2=$(bnew)
P5=$("$WARD" box port "$B2" "127.0.0.2:$HP:8000")
is "$P5" "127.0.0.2:$HP" "an address and a host port asked for: listened on exactly there"
serve_in "$B2" 8000 "hello from box B2"
is "$(answer "$P5" /index.html)" "hello from box B2" "and it answers there"
# At most 16 ports a box (B2 has one).
for p in $(seq 8100 8114); do "$WARD" box port "$B2" "$p" >/dev/null || break; done
is "$("$WARD" box port "$B2" | wc -l)" 16 "a box takes 16 ports"
E=$("$WARD" box port "$B2" 8115 2>&1); RC=$?
like "$RC $E" "^1 .*has 16 ports open to the host, as many as it may" "a 17th is refused, saying so"
# Bad input: one line saying what was wrong.
for bad in 0 70000 x 1.2.3:80:8000 "127.0.0.1:99999:80" ""; do
	E=$("$WARD" box port "$A" "$bad" 2>&1); RC=$?
	is "$RC" 64 "ward box port \"$bad\": refused (64)"
done
like "$E" "PORT" "saying what a port spec looks like"
E=$("$WARD" box create --backend "$BE" --publish x:8000 2>&1); RC=$?
is "$RC" 64 "--publish x:8000: refused (64)"
like "$E" "host's port is not a number" "saying which part"
E=$("$WARD" box create --backend "$BE" --publish "127.0.0.1:$HP:8000" --publish "127.0.0.1:$HP:8001" 2>&1); RC=$?
is "$RC" 4 "--publish twice on one host port: the create fails (4: no box)"
like "$E" "cannot listen on 127.0.0.1:$HP" "saying which listener"

# Another box: no route to the host's loopback, and its egress proxy
# refuses the address (twin: the host reached it above).
O=$(bnew --allow-host example.test)
R=$("$WARD" box exec "$O" -- "curl -sS --noproxy '*' -m 5 http://$ADDR/index.html; echo rc=\$?" 2>&1)
unlike "$R" "hello from box A" "another box cannot reach the published port directly"
like "$R" "rc=7" "(its loopback is its own: connection refused)"
R=$("$WARD" box exec "$O" -- "NO_PROXY= no_proxy= curl -sS -v -m 5 http://$ADDR/index.html 2>&1; echo rc=\$?" 2>&1)
unlike "$R" "hello from box A" "nor through its egress proxy"
like "$R" "403 Forbidden by ward: 127.0.0.1" "(the proxy refuses a loopback address no rule names)"

# At most 64 connections carried at once: a server in the box that never
# accepts (its backlog holds them) keeps 64 open; the 65th is closed.
P8=$("$WARD" box port "$O" 8200)
"$WARD" box exec "$O" --timeout 120s -- "exec python3 -c 'import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((\"127.0.0.1\", 8200)); s.listen(512); print(\"up\", flush=True); time.sleep(110)'" >"$T_TMP/hold.log" 2>&1 &
HOLD=$!
for _ in $(seq 100); do grep -q up "$T_TMP/hold.log" && break; sleep 0.1; done
CAP=$(python3 - "$P8" <<'PY'
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
def held(s):
    s.settimeout(1.0)
    try:
        return "closed" if s.recv(1) == b"" else "data"
    except socket.timeout:
        return "held"
    except OSError:
        return "closed"
conns = [socket.create_connection((host, int(port))) for _ in range(64)]
time.sleep(0.5)
out = [str(sum(held(c) == "held" for c in conns[:4]) == 4)]
extra = socket.create_connection((host, int(port)))
t0 = time.monotonic()
out.append(held(extra) + (" fast" if time.monotonic() - t0 < 0.9 else " slow"))
# (reset, not a half-close: a half-closed connection is carried on until
# the box's side ends it too)
gone = conns.pop()
gone.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
gone.close()
time.sleep(0.3)
again = socket.create_connection((host, int(port)))
out.append(held(again))
print(" ".join(out))
PY
)
kill $HOLD 2>/dev/null; wait $HOLD 2>/dev/null
like "$CAP" "^True" "64 connections at once are carried"
# A client that gives up while the box's side still connects (a full
# backlog drops the handshake): its place is freed, not held. (ns: the
# keeper connects; vm: the guest does, and a client gone closes its
# stream whatever state it is in.)
if [ "$BE" = ns ]; then
P9=$("$WARD" box port "$O" 8300)
"$WARD" box exec "$O" --timeout 120s -- "exec python3 -c 'import socket, time
s = socket.socket(); s.bind((\"127.0.0.1\", 8300)); s.listen(0); print(\"up\", flush=True); time.sleep(110)'" >"$T_TMP/hold2.log" 2>&1 &
HOLD=$!
for _ in $(seq 100); do grep -q up "$T_TMP/hold2.log" && break; sleep 0.1; done
opened() { "$WARD" box info "$O" | python3 -c 'import json,sys; p = [p for p in json.load(sys.stdin)["ports"] if p["port"] == 8300][0]
print(p["open"], p["connections"])'; }
python3 - "$P9" "$T_TMP/hold2.go" <<'PY' &
import os, socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
cs = [socket.create_connection((host, int(port))) for _ in range(6)]
open(sys.argv[2], "w").close()
while os.path.exists(sys.argv[2]):
    time.sleep(0.05)
PY
CL=$!
for _ in $(seq 100); do [ -e "$T_TMP/hold2.go" ] && break; sleep 0.05; done
wait_until 5 eval '[ "$(opened | cut -d" " -f1)" = 6 ]'
N6=$(opened)
rm -f "$T_TMP/hold2.go"; wait $CL
# The ones connected stay, half-closed (the box's side never ended them);
# the ones still connecting are freed.
for _ in $(seq 40); do set -- $(opened); [ "$1" = "$2" ] && break; sleep 0.1; done
N0=$(opened)
kill $HOLD 2>/dev/null; wait $HOLD 2>/dev/null
set -- $N6
is "$1" 6 "six connections held into a server whose backlog is full"
lt "$2" 6 "some of them still connecting (the box dropped their handshakes)"
set -- $N0
is "$1" "$2" "the client gone: those still connecting are freed, only the connected (half-closed) ones stay"
fi
like "$CAP" "^True closed fast" "a 65th is closed at once"
like "$CAP" "held$" "twin: one closed, a new one is carried again"

# Hibernated: a connection is closed at once; woken: it answers again.
# (its server's call ended first: a box hibernates between calls)
kill "$SRV_A"; wait "$SRV_A" 2>/dev/null
for _ in $(seq 50); do "$WARD" box hibernate "$A" >/dev/null 2>&1 && break; sleep 0.2; done
t0=$(now_ms)
R=$(curl -sS -m 5 "http://$ADDR/index.html" 2>&1); RC=$?
MS=$(( $(now_ms) - t0 ))
[ "$RC" -eq 52 ] || [ "$RC" -eq 56 ]; ok $? "a hibernated box's port: the connection is closed (curl rc $RC)"
lt "$MS" 3000 "at once, never left waiting"
like "$("$WARD" box port "$A")" "^8000 $ADDR" "the port stays open over hibernation"
"$WARD" box wake "$A" >/dev/null
serve_in "$A" 8000 "hello again"
is "$(answer "$ADDR" /index.html)" "hello again" "woken: the same address reaches the new server"

# A headless Chromium on the host loads the page through the port.
CHROME=$(command -v chromium || command -v chromium-browser)
PIL_PY=$(for p in python3 /usr/bin/python3; do $p -c 'import PIL' 2>/dev/null && { echo "$p"; break; }; done)
if [ -z "$PIL_PY" ]; then
	skip "no python3 with PIL here (Debian's python3-pil; .ci/setup installs it)"
	skip "(the screenshot)"
elif [ -z "$CHROME" ]; then
	skip "no chromium on this machine (Debian's chromium package; .ci/setup installs it)"
	skip "(the screenshot)"
else
	SHOT=$T_TMP/shot.png
	timeout 90 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
		--user-data-dir="$T_TMP/chrome" --window-size=800,600 --screenshot="$SHOT" "http://$ADDR/page.html" \
		>"$T_TMP/chrome.log" 2>&1
	[ -s "$SHOT" ]; ok $? "headless Chromium took a screenshot of the page through the published port"
	[ -n "${WARD_ARTIFACTS:-}" ] && mkdir -p "$WARD_ARTIFACTS" && cp "$SHOT" "$WARD_ARTIFACTS/port-chromium.png" 2>/dev/null
	is "$("$PIL_PY" -c 'import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("RGB")
w, h = im.size
top = im.getpixel((w // 2, 100))
colours = len(set(im.resize((80, 60)).getdata()))
print("red" if top[0] > 200 and top[1] < 60 and top[2] < 60 else "not red %s" % (top,), "many" if colours > 2 else "blank")' "$SHOT" 2>&1)" \
		"red many" "the screenshot shows the page: its red block and more than one colour (not blank)"
fi

# Destroyed: the port is closed.
"$WARD" box destroy "$A" "$B2"
R=$(curl -sS -m 5 "http://$ADDR/" 2>&1); RC=$?
is "$RC" 7 "after destroy: nothing listens at the address (connection refused)"
R=$(curl -sS -m 5 "http://$P5/" 2>&1); RC=$?
is "$RC" 7 "nor at the other box's"

done_testing
