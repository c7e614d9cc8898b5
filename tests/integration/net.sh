#!/bin/bash
# Egress by allow-list: a box reaches the hosts --allow-host names through
# ward's proxy on the host, and nothing else; the proxy dies with the box.
# Servers on the host's loopback stand in for the internet (pinned rules,
# name=127.0.0.1:PORT, are the one way to a loopback address).
. "$(dirname "$0")/lib.sh"
command -v openssl >/dev/null || skip_all "openssl is not installed (apt-get install openssl)"
command -v curl >/dev/null || skip_all "curl is not installed (apt-get install curl)"
HERE=$(dirname "$0")

D=$T_TMP/srv
mkdir -p "$D/root/simple/wardtestpkg" "$D/root/files"
ossl() { openssl "$@" >/dev/null 2>&1; }
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$D/ca.key" -out "$D/ca.pem" \
	-days 2 -subj /CN=ward-test-ca
ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$D/srv.key" -out "$D/srv.csr" \
	-subj /CN=allowed.test
printf 'subjectAltName=DNS:allowed.test,DNS:pypi.test,DNS:fronted.test\n' >"$D/ext"
ossl x509 -req -in "$D/srv.csr" -CA "$D/ca.pem" -CAkey "$D/ca.key" -CAcreateserial -out "$D/srv.pem" -days 2 \
	-extfile "$D/ext"
echo "hello through the proxy" >"$D/root/hello.txt"
# A wheel and a PEP 503 simple index for it.
python3 - "$D/root" <<'PY'
import os, sys, zipfile, hashlib, base64
root = sys.argv[1]
name = "wardtestpkg-1.0-py3-none-any.whl"
files = {
    "wardtestpkg/__init__.py": b"VALUE = 1\n",
    "wardtestpkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: wardtestpkg\nVersion: 1.0\n",
    "wardtestpkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: ward-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
rec = ""
for p, b in files.items():
    h = base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
    rec += "%s,sha256=%s,%d\n" % (p, h, len(b))
rec += "wardtestpkg-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile(os.path.join(root, "files", name), "w") as z:
    for p, b in files.items():
        z.writestr(p, b)
    z.writestr("wardtestpkg-1.0.dist-info/RECORD", rec)
open(os.path.join(root, "simple", "wardtestpkg", "index.html"), "w").write(
    '<html><body><a href="../../files/%s">%s</a></body></html>\n' % (name, name))
PY
ABS=ward-test-abstract-$$
python3 "$HERE/../net-servers.py" --root "$D/root" --cert "$D/srv.pem" --key "$D/srv.key" --ports "$D/ports" \
	--abstract "$ABS" &
SRVP=$!
for _ in $(seq 100); do [ -s "$D/ports" ] && break; sleep 0.05; done
HTTPS=$(json https <"$D/ports"); HTTP=$(json http <"$D/ports"); OTHER=$(json other <"$D/ports")
finish() { kill "$SRVP" 2>/dev/null; wait "$SRVP" 2>/dev/null; done_testing; }
WS=$T_TMP/ws
mkdir -p "$WS"
cp "$D/ca.pem" "$WS/ca.pem"
RULES=(--allow-host "allowed.test=127.0.0.1:$HTTPS" --allow-host "pypi.test=127.0.0.1:$HTTPS"
	--allow-host "plain.test=127.0.0.1:$HTTP" --allow-host "localhost:$HTTP")
# The positive twins of the host side: every server answers the host.
like "$(curl -sS --cacert "$D/ca.pem" --resolve "allowed.test:$HTTPS:127.0.0.1" "https://allowed.test:$HTTPS/hello.txt")" \
	"hello through the proxy" "the host reaches the HTTPS server directly"
like "$(curl -sS "http://127.0.0.1:$OTHER/hello.txt")" "hello through" "and the server no rule names"
like "$(python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.connect('\0$ABS'); print(s.recv(100))")" \
	"host-abstract" "and the abstract unix socket"

# Flags: each mistake is one line and exit 64, nothing made.
bad() { # bad DESC ARGS...
	local d=$1; shift
	R=$("$WARD" box create --persistent "$@" 2>&1); RC=$?
	is "$RC" 64 "$d: exit 64"
	is "$(printf '%s\n' "$R" | wc -l | tr -d ' ')" 1 "$d: one line ($R)"
}
nboxes() { "$WARD" box ls --json | python3 -c 'import json,sys; print(sorted(b["name"] for b in json.load(sys.stdin)))'; }
BEFORE=$(nboxes)
bad "--allow-host with a space" --allow-host "exa mple.org"
bad "--allow-host 2130706433 (an address in disguise)" --allow-host 2130706433
bad "--allow-host with a non-ASCII name" --allow-host "bücher.example"
bad "--net bogus" --net bogus
bad "--net host with --allow-host" --net host --allow-host example.org
is "$(nboxes)" "$BEFORE" "no box was left behind by a refused flag"
HB=$(box_new --net host)
like "$("$WARD" box info "$HB")" '"network_warning":.*shares the host' "--net host: ward box info warns"
"$WARD" box destroy "$HB"

backends="ns"
if command -v qemu-system-x86_64 >/dev/null && ls /boot/vmlinuz-* >/dev/null 2>&1; then
	backends="ns vm"
	export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$HOME/.cache}
fi

for be in $backends; do
	B=$(box_new --backend "$be" --workspace "$WS" "${RULES[@]}")
	like "$B" "^box-" "$be: a box with an allow-list"
	X() { "$WARD" box exec "$B" --timeout 60s -- "$1" 2>&1; }
	like "$(X 'echo $HTTPS_PROXY $NO_PROXY')" "^http://127.0.0.1:3128 localhost,127.0.0.1" \
		"$be: every command has HTTPS_PROXY and NO_PROXY"
	if [ "$be" = ns ]; then
		# The proxy's listener is the host's to hold: no process in the
		# box has a descriptor of it, or of anything outside the box.
		GP=$("$WARD" box info "$B" | json guest_pid)
		audit_box "$GP" "$WARD" box exec "$B" -- "curl -sS http://plain.test:$HTTP/hello.txt; sleep 2"
		is "$AUD_RC" 0 "ns: with egress, every descriptor of every process in the box is inside it ($AUD)"
	fi
	like "$(X "curl -sS --cacert /workspace/ca.pem https://allowed.test:$HTTPS/hello.txt")" \
		"hello through the proxy" "$be: HTTPS to an allowed host, through the proxy (TLS end to end)"
	like "$(X "curl -sS http://plain.test:$HTTP/hello.txt")" "hello through the proxy" \
		"$be: plain HTTP to an allowed host"
	R=$(X 'curl -sS -v https://evil.test/ 2>&1; echo rc=$?')
	like "$R" "403 Forbidden by ward: evil.test:443 is not on this box's allow-list" \
		"$be: a host not on the list: the proxy's 403 says why"
	like "$R" "allow it: --allow-host evil.test" "$be: and how to allow it"
	like "$R" "rc=56" "$be: curl fails"
	# No route: the host's loopback, the metadata address, anything.
	R=$(X "curl -sS --noproxy '*' -m 5 http://127.0.0.1:$HTTP/hello.txt; echo rc=\$?")
	unlike "$R" "hello through" "$be: the host's loopback server is not reachable directly"
	like "$R" "rc=7" "$be: (connection refused: the box's loopback is its own)"
	t0=$(now_ms)
	R=$(X "curl -sS --noproxy '*' -m 5 http://169.254.169.254/latest/meta-data/; echo rc=\$?")
	MS=$(( $(now_ms) - t0 ))
	like "$R" "rc=7" "$be: 169.254.169.254 directly: no route"
	lt "$MS" 4000 "$be: and it fails at once, no hang"
	like "$(X 'curl -sS -v http://169.254.169.254/latest/meta-data/ 2>&1')" \
		"403 Forbidden by ward: 169.254.169.254:80 is not on" "$be: the metadata address through the proxy: refused"
	like "$(X "NO_PROXY= no_proxy= curl -sS -v http://127.0.0.1:$OTHER/hello.txt 2>&1")" \
		"403 Forbidden by ward: 127.0.0.1:$OTHER is not on" \
		"$be: another loopback server, not on the list: refused"
	R=$(X "NO_PROXY= no_proxy= curl -sS -v http://localhost:$HTTP/hello.txt 2>&1")
	like "$R" "403 Forbidden by ward: localhost.* resolves to 127.0.0.1, a loopback address" \
		"$be: a name on the list that resolves to loopback, without a rule naming the address: refused"
	unlike "$R" "hello through" "$be: and nothing of the server's"
	# Domain fronting: CONNECT names one host, the ClientHello another.
	SNI='import socket, ssl, sys
port, name = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT allowed.test:%d HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n" % (port, port))
print(s.recv(4096).split(b"\r\n")[0].decode())
ctx = ssl.create_default_context(cafile="/workspace/ca.pem")
try:
    t = ctx.wrap_socket(s, server_hostname=name)
    t.sendall(b"GET /hello.txt HTTP/1.0\r\nHost: " + name.encode() + b"\r\nConnection: close\r\n\r\n")
    got = b""
    while True:
        b = t.recv(4096)
        if not b:
            break
        got += b
    print("handshake-ok", got.decode().split("\r\n\r\n")[-1])
except Exception as e:
    print("failed", type(e).__name__)'
	X "cat > /tmp/sni.py <<'EOF'
$SNI
EOF" >/dev/null
	R=$(X "python3 /tmp/sni.py $HTTPS fronted.test")
	like "$R" "failed" "$be: CONNECT allowed.test with SNI fronted.test: the tunnel is closed"
	unlike "$R" "handshake-ok" "$be: no TLS session to the fronted name"
	like "$(X "python3 /tmp/sni.py $HTTPS allowed.test")" "handshake-ok hello through" \
		"$be: twin: the same CONNECT with a matching SNI works"
	R=$(X "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('\\0$ABS'); print(s.recv(100))\" 2>&1")
	like "$R" "ConnectionRefused|No such file" "$be: the host's abstract unix socket is not reachable"
	unlike "$R" "host-abstract" "$be: (nothing of the host listener)"
	# pip from a local simple index, through the proxy; and refused.
	PIP="python3 -m pip download --no-cache-dir --disable-pip-version-check --retries 1 --timeout 20 --no-deps -d /tmp/dl --cert /workspace/ca.pem --index-url"
	R=$(X "$PIP https://pypi.test:$HTTPS/simple/ wardtestpkg && ls /tmp/dl")
	like "$R" "wardtestpkg-1.0-py3-none-any.whl" "$be: pip download from an allowed index, through the proxy"
	R=$(X "$PIP https://pypi.other:$HTTPS/simple/ wardtestpkg; echo rc=\$?")
	like "$R" "403 Forbidden by ward: pypi.other:$HTTPS is not on this box's allow-list" \
		"$be: pip from an index not on the list fails with the proxy's message"
	unlike "$R" "rc=0" "$be: and pip fails"
	# The connection cap holds; the proxy's descriptors are bounded.
	P=$("$WARD" box info "$B" | json egress.proxy_pid)
	like "$P" "^[0-9]+$" "$be: the proxy is a host process ($P)"
	ST=$(cat "/proc/$P/status" 2>/dev/null)
	like "$ST" "Seccomp:[[:space:]]+2" "$be: the proxy runs under a seccomp filter"
	like "$ST" "NoNewPrivs:[[:space:]]+1" "$be: with no new privileges"
	if [ "$(id -u)" = 0 ]; then
		like "$ST" "Uid:[[:space:]]+65534[[:space:]]+65534[[:space:]]+65534" "$be: as uid 65534, not root"
		like "$ST" "Groups:[[:space:]]*$(printf '\n')" "$be: with no supplementary groups"
	fi
	like "$(tr '\0' ' ' <"/proc/$P/cmdline"; cat "/proc/$P/comm")" "ward-proxy" "$be: it is named ward-proxy"
	X 'python3 - <<EOF
import socket, time
socks, cap = [], 0
for i in range(120):
    try:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
    except OSError:
        continue
    socks.append(s)
time.sleep(1)
for s in socks:
    s.settimeout(0.05)
    try:
        if b" 503 " in s.recv(200):
            cap += 1
    except OSError:
        pass
print("opened", len(socks), "answered-503", cap, flush=True)
time.sleep(4)
EOF' >"$T_TMP/cap.out" &
	XP=$!
	NF=0
	for _ in $(seq 60); do
		n=$(ls "/proc/$P/fd" 2>/dev/null | wc -l)
		[ "$n" -gt "$NF" ] && NF=$n
		grep -q answered "$T_TMP/cap.out" && break
		sleep 0.2
	done
	wait $XP
	R=$(cat "$T_TMP/cap.out")
	like "$R" "answered-503 ([3-9][0-9]|1[01][0-9])" "$be: 120 connections held open: those past the cap of 64 get 503 ($R)"
	lt "$NF" 460 "$be: the proxy holds a bounded number of descriptors meanwhile (at most $NF seen)"
	lt 64 "$NF" "$be: (it did hold the 64 it allows)"
	like "$(grep 'Max open files' "/proc/$P/limits")" "Max open files +[0-9]{3} +[0-9]{3} " \
		"$be: and its RLIMIT_NOFILE is bounded (hundreds, not the host's)"
	like "$(X "curl -sS http://plain.test:$HTTP/hello.txt")" "hello through the proxy" \
		"$be: twin: once they close, a new connection works"
	# The proxy dies with the box.
	"$WARD" box destroy "$B"
	wait_until 5 gone "$P"
	gone "$P"; ok $? "$be: destroy: the proxy is gone"
	[ ! -e "$XDG_RUNTIME_DIR/ward/boxes/$B" ]; ok $? "$be: and the box's directory (its sockets) is gone"
done

# TTL, and the owner SIGKILLed: the proxy goes with the box.
T=$(box_new --ttl 2s "${RULES[@]}")
P=$("$WARD" box info "$T" | json egress.proxy_pid)
like "$P" "^[0-9]+$" "a box with a 2 s TTL has a proxy ($P)"
wait_until 5 gone "$P"
gone "$P"; ok $? "TTL: the proxy is gone with the box"
bash -c 'o=$1; shift; "$0" box create "$@" >"$o.name"; exec sleep 100' "$WARD" "$T_TMP/owner" "${RULES[@]}" &
OWN=$!
for _ in $(seq 100); do [ -s "$T_TMP/owner.name" ] && break; sleep 0.05; done
ON=$(cat "$T_TMP/owner.name")
P=$("$WARD" box info "$ON" | json egress.proxy_pid)
like "$P" "^[0-9]+$" "a box whose owner is a shell has a proxy ($P)"
kill -9 "$OWN"
t0=$(now_ms)
while ! gone "$P" && [ $(( $(now_ms) - t0 )) -lt 3000 ]; do sleep 0.02; done
gone "$P"; ok $? "the owner SIGKILLed: the proxy is gone ($(( $(now_ms) - t0 )) ms)"

# ward run: the journal and --json record what was carried and refused,
# and the call's result tells the model what the proxy refused.
cat >"$T_TMP/net.json" <<EOF
{"turns": [
 {"text": "Fetching.", "tools": [{"name": "bash", "input": {"command": "curl -sS --cacert /workspace/ca.pem https://allowed.test:$HTTPS/hello.txt; curl -sS https://evil.test/ || true"}}]},
 {"text": "Done."}
]}
EOF
"$WARD" run --json --model "replay:$T_TMP/net.json" --workspace "$WS" "${RULES[@]}" "fetch" >"$T_TMP/run.out" 2>"$T_TMP/run.err"
is "$?" 0 "ward run with --allow-host: exit 0"
OUT=$(cat "$T_TMP/run.out")
like "$OUT" '"type":"net".*"host":"allowed.test".*"allowed":true' "--json: a net event for the allowed connection"
like "$OUT" '"type":"net".*"host":"evil.test".*"allowed":false' "--json: and one for the refused one"
like "$OUT" "the box's egress proxy refused a connection: evil.test:443 is not on this box's allow-list" \
	"the call's result tells the model what the proxy refused"
SID=$(printf '%s\n' "$OUT" | tail -1 | json session)
J=$(cat "$XDG_STATE_HOME/ward/sessions/$SID.jsonl" 2>/dev/null)
like "$J" '"type":"net".*"host":"allowed.test".*"allowed":true' "the session journal records the allowed connection"
like "$J" '"type":"net".*"host":"evil.test".*"allowed":false' "and the refused one"
V=$(validate_events "$T_TMP/run.out" 2>&1)
like "$V" "^valid [0-9]+" "every --json line, net events included, validates against the schema"
"$WARD" run --json --model "replay:$T_TMP/net.json" --box nosuchbox --allow-host x.org "fetch" >/dev/null 2>"$T_TMP/err"
is "$?" 64 "ward run --box with --allow-host: exit 64 (the box's network was set when it was made)"
like "$("$WARD" doctor 2>&1)" "egress" "ward doctor says how egress is enforced"

# The byte budget: past --net-max-bytes the proxy ends the tunnels and
# refuses new connections, saying why.
head -c 400000 /dev/urandom >"$D/root/big.bin"
B=$(box_new --workspace "$WS" --allow-host "plain.test=127.0.0.1:$HTTP" --net-max-bytes 100K)
like "$("$WARD" box info "$B")" '"max_bytes":[[:space:]]*102400' "--net-max-bytes 100K: ward box info shows the budget"
like "$("$WARD" box exec "$B" -- "curl -sS http://plain.test:$HTTP/hello.txt" 2>&1)" "hello through the proxy" \
	"twin: a small download within the budget works"
R=$("$WARD" box exec "$B" --timeout 30s -- "curl -sS -o /tmp/big http://plain.test:$HTTP/big.bin; echo rc=\$?; wc -c </tmp/big" 2>&1)
like "$R" "rc=(18|56)" "a download past the budget is cut"
N=$(printf '%s\n' "$R" | tail -1 | tr -d ' ')
lt "$N" 102401 "and the box got no more than the budget ($N bytes)"
like "$("$WARD" box exec "$B" -- "curl -sS -v http://plain.test:$HTTP/hello.txt 2>&1")" "byte budget \(102400 bytes\) is spent" \
	"then a new connection is refused, saying the budget is spent"
"$WARD" box destroy "$B"
bad "--net-max-bytes 12" --net-max-bytes 12
finish
