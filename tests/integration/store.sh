#!/bin/bash
# The store layer through its real libcurl path, against a local S3 server
# that checks SigV4 signatures (tests/s3-server.js): a 20 MB file put, got
# back the same and deleted; a wrong secret refused (its twin, the right
# one, is every other request); a session token signed along; a server
# that is down reported at once; and the server gone at the end.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CLI=${STORE_CLI:?set STORE_CLI to the store-cli test driver}
MODS=$ROOT/.ci/npm/node_modules
command -v node >/dev/null 2>&1 || skip_all "no node: run .ci/setup"
[ -f "$MODS/@20minutes/s3rver/package.json" ] ||
	skip_all "no local S3 server: run .ci/setup (it installs @20minutes/s3rver under .ci/npm)"

# Nothing of the person's running the test: no credentials of theirs go
# to this server, no proxy stands between.
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_REGION AWS_DEFAULT_REGION \
	AWS_PROFILE http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY

S3PID=""
s3_stop() {
	[ -n "$S3PID" ] && { kill "$S3PID" 2>/dev/null; wait "$S3PID" 2>/dev/null; }
	return 0
}
trap s3_stop EXIT
trap 'exit 143' TERM INT
node "$ROOT/tests/s3-server.js" "$MODS" "$T_TMP/s3data" "$T_TMP/s3port" 2>"$T_TMP/s3.err" &
S3PID=$!
for _ in $(seq 100); do [ -s "$T_TMP/s3port" ] && break; sleep 0.1; done
[ -s "$T_TMP/s3port" ] || { echo "# $(cat "$T_TMP/s3.err")"; ok 1 "the S3 server started"; done_testing; exit 1; }
export WARD_S3_ENDPOINT=http://127.0.0.1:$(cat "$T_TMP/s3port")
export AWS_ACCESS_KEY_ID=wardtest AWS_SECRET_ACCESS_KEY=wardtest-secret
S=s3://ward-test/boxes

# 20 MB: 10 of noise, 10 of text, as a box's state is part both.
head -c 10485760 /dev/urandom >"$T_TMP/state"
yes 'pid 1 ward-guest; /workspace clean; memory pages follow' | head -c 10485760 >>"$T_TMP/state"
is "$(stat -c %s "$T_TMP/state")" 20971520 "a 20 MB file"
is "$("$CLI" "$S" describe)" "s3 ward-test/boxes at $WARD_S3_ENDPOINT" "described as s3 BUCKET/PREFIX at ENDPOINT"

OUT=$("$CLI" "$S" put box-1/state "$T_TMP/state" 2>&1); RC=$?
is "$RC" 0 "put of 20 MB ($OUT)"
is "$(stat -c %s "$T_TMP/s3data/ward-test/boxes/box-1/state._S3rver_object" 2>&1)" 20971520 \
	"the server holds all of it, under the prefix"
OUT=$("$CLI" "$S" get box-1/state "$T_TMP/back" 2>&1); RC=$?
is "$RC" 0 "get ($OUT)"
check "the same bytes came back" cmp "$T_TMP/state" "$T_TMP/back"
check "and no .tmp is left" test ! -e "$T_TMP/back.tmp"

# A wrong secret: the server checks the signature and refuses.
OUT=$(AWS_SECRET_ACCESS_KEY=not-the-secret "$CLI" "$S" put box-1/state "$T_TMP/state" 2>&1); RC=$?
is "$RC" 1 "put with a wrong secret: refused"
like "$OUT" '^s3 store: PUT ward-test/boxes/box-1/state at http://127.0.0.1:[0-9]+: HTTP 403 SignatureDoesNotMatch: check AWS_SECRET_ACCESS_KEY$' \
	"in one line with the status, S3's code and what to check"
OUT=$(AWS_SECRET_ACCESS_KEY=not-the-secret "$CLI" "$S" get box-1/state "$T_TMP/back2" 2>&1); RC=$?
is "$RC" 1 "get with a wrong secret: refused"
check "and no file is made" test ! -e "$T_TMP/back2"
check "nor its .tmp" test ! -e "$T_TMP/back2.tmp"
OUT=$(AWS_ACCESS_KEY_ID=nobody "$CLI" "$S" get box-1/state "$T_TMP/back2" 2>&1)
like "$OUT" "HTTP 403 InvalidAccessKeyId: check AWS_ACCESS_KEY_ID" "an unknown key id: refused, saying so"
OUT=$(env -u AWS_SECRET_ACCESS_KEY "$CLI" "$S" get box-1/state "$T_TMP/back2" 2>&1); RC=$?
is "$RC" 1 "no secret at all: refused before anything is sent"
like "$OUT" "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" "naming the variables"

# A session token goes as x-amz-security-token, inside the signature:
# the server recomputes it over that header too.
OUT=$(AWS_SESSION_TOKEN=FwoGZXIvYXdzEXAMPLE "$CLI" "$S" get box-1/state "$T_TMP/back3" 2>&1); RC=$?
is "$RC" 0 "with a session token, still signed right ($OUT)"
check "the same bytes" cmp "$T_TMP/state" "$T_TMP/back3"

# The cold path whole: compress, put, get, decompress.
"$CLI" compress 3 "$T_TMP/state" "$T_TMP/state.zst" >/dev/null
OUT=$("$CLI" "$S" put box-1/state.zst "$T_TMP/state.zst" 2>&1 && "$CLI" "$S" get box-1/state.zst "$T_TMP/got.zst" 2>&1 &&
	"$CLI" decompress "$T_TMP/got.zst" "$T_TMP/got" 2>&1); RC=$?
is "$RC" 0 "compress, put, get, decompress ($OUT)"
check "the same bytes at the end" cmp "$T_TMP/state" "$T_TMP/got"

OUT=$("$CLI" "$S" get box-9/state "$T_TMP/none" 2>&1); RC=$?
is "$RC" 2 "get of a missing key: -ENOENT"
like "$OUT" "no object ward-test/boxes/box-9/state" "saying so"
OUT=$("$CLI" s3://no-such-bucket get box-1/state "$T_TMP/none" 2>&1); RC=$?
is "$RC" 1 "a missing bucket is not a missing key"
like "$OUT" "HTTP 404 NoSuchBucket" "it says which"
is "$("$CLI" "$S" del box-1/state 2>&1; echo $?)" 0 "del"
OUT=$("$CLI" "$S" get box-1/state "$T_TMP/none" 2>&1); RC=$?
is "$RC" 2 "then get: -ENOENT"
check "the server's copy is gone" test ! -e "$T_TMP/s3data/ward-test/boxes/box-1/state._S3rver_object"
is "$("$CLI" "$S" del box-1/state 2>&1; echo $?)" 0 "del of a missing key: 0"
is "$("$CLI" "$S" del box-1/state.zst 2>&1; echo $?)" 0 "del the other"

# Down: the server is stopped; a request fails at once, in one line.
s3_stop
P=$S3PID
S3PID=""
gone "$P"; ok $? "the server is stopped"
LEFT=$(pgrep -f "$T_TMP/s3data" | tr '\n' ' ')
is "$LEFT" "" "no process of it is left"
T0=$(now_ms)
OUT=$("$CLI" "$S" put box-1/state "$T_TMP/state" 2>&1); RC=$?
T1=$(now_ms)
is "$RC" 1 "put with the server down: an error"
like "$OUT" "^s3 store: PUT ward-test/boxes/box-1/state at $WARD_S3_ENDPOINT: Couldn't connect to server.*: is the endpoint right and up\?$" \
	"one line: what failed, where, and what to check"
lt $((T1 - T0)) 5000 "within a bounded time (ms)"

# A trickle: a server that sends a 10 MB answer at 4 KiB/s is not a stall
# (bytes move every second) but would take 43 minutes; the average-rate
# bound cuts it at 20 s, in one line. Its twin is every transfer above.
cat >"$T_TMP/trickle.py" <<'PY'
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(4)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
c, _ = s.accept(); c.recv(65536)
c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10485760\r\n\r\n")
try:
    while True:
        c.sendall(b"x" * 1024); time.sleep(0.25)
except OSError:
    pass
PY
python3 "$T_TMP/trickle.py" "$T_TMP/trport" &
TRPID=$!
for _ in $(seq 50); do [ -s "$T_TMP/trport" ] && break; sleep 0.1; done
T0=$(now_ms)
OUT=$(WARD_S3_ENDPOINT=http://127.0.0.1:$(cat "$T_TMP/trport") timeout 60 "$CLI" "$S" get box-1/state "$T_TMP/trickled" 2>&1); RC=$?
T1=$(now_ms)
kill "$TRPID" 2>/dev/null; wait "$TRPID" 2>/dev/null
is "$RC" 1 "get from a server trickling 4 KiB/s: an error"
like "$OUT" '^s3 store: GET ward-test/boxes/box-1/state at http://127.0.0.1:[0-9]+: [0-9]+ bytes in 2[0-9] s, under 256 KiB/s on average: the store is too slow or stalled' \
	"one line: how much moved in how long, and the bound"
lt 19500 $((T1 - T0)) "not cut before the 20 s grace (ms)"
lt $((T1 - T0)) 25000 "cut soon after it, not 43 minutes later (ms)"
check "no file is made" test ! -e "$T_TMP/trickled"
check "nor its .tmp" test ! -e "$T_TMP/trickled.tmp"

done_testing
