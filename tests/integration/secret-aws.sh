#!/bin/bash
# --secret aws@HOST: AWS's keys never enter the box. The box's
# AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are a placeholder; a client
# in the box (curl --aws-sigv4, boto3) signs with it; the egress proxy
# checks that SigV4 signature against the request it forwards and signs it
# again with the real keys. The server is the local S3 server the store
# tests use (tests/s3-server.js), which checks every signature with the
# real key pair, over plain HTTP and over HTTPS (the proxy terminating
# TLS). A signature by another key (the attacker's own, to an allowed
# host) is refused; --secret-other-keys carries it as it is.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MODS=$ROOT/.ci/npm/node_modules
command -v node >/dev/null 2>&1 || skip_all "no node: run .ci/setup"
command -v curl >/dev/null 2>&1 || skip_all "curl is not installed (apt-get install curl)"
[ -f "$MODS/@20minutes/s3rver/package.json" ] ||
	skip_all "no local S3 server: run .ci/setup (it installs @20minutes/s3rver under .ci/npm)"
unset AWS_SESSION_TOKEN AWS_REGION AWS_DEFAULT_REGION AWS_PROFILE http_proxy https_proxy HTTP_PROXY HTTPS_PROXY

D=$T_TMP/srv
mkdir -p "$D"
ossl() { openssl "$@" >/dev/null 2>&1; }
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$D/ca.key" -out "$D/ca.pem" \
	-days 2 -subj /CN=ward-test-ca
ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$D/srv.key" -out "$D/srv.csr" -subj /CN=s3.test
printf 'subjectAltName=DNS:s3.test,DNS:sts.test\n' >"$D/ext"
ossl x509 -req -in "$D/srv.csr" -CA "$D/ca.pem" -CAkey "$D/ca.key" -CAcreateserial -out "$D/srv.pem" -days 2 -extfile "$D/ext"
P1=; P2=; P3=
finish() { kill $P1 $P2 $P3 2>/dev/null; wait $P1 $P2 $P3 2>/dev/null; done_testing; }
trap 'exit 143' TERM INT
node "$ROOT/tests/s3-server.js" "$MODS" "$D/data" "$D/http.port" 2>"$D/s3.err" &
P1=$!
node "$ROOT/tests/s3-server.js" "$MODS" "$D/tdata" "$D/https.port" "$D/srv.pem" "$D/srv.key" 2>"$D/s3t.err" &
P2=$!
wait_until 20 test -s "$D/http.port" -a -s "$D/https.port"
ok $? "the S3 servers started (HTTP and HTTPS) $(cat "$D/s3.err" "$D/s3t.err")"
HP=$(cat "$D/http.port"); TP=$(cat "$D/https.port")

# The real key pair: the server's, in ward's environment only.
export AWS_ACCESS_KEY_ID=wardtest AWS_SECRET_ACCESS_KEY=wardtest-secret

R=$(env -u AWS_SECRET_ACCESS_KEY "$WARD" box create --persistent --secret aws@s3.test 2>&1); RC=$?
is "$RC" 64 "--secret aws without AWS_SECRET_ACCESS_KEY: exit 64"
like "$R" "^ward: --secret aws@s3.test: secret aws needs AWS_SECRET_ACCESS_KEY" "and one line says what it needs ($R)"
R=$(AWS_ACCESS_KEY_ID="a b" "$WARD" box create --persistent --secret aws@s3.test 2>&1); RC=$?
is "$RC" 64 "--secret aws with a key no AWS key could be: exit 64 ($R)"

B=$(box_new --allow-host "s3.test=127.0.0.1:$HP" --secret aws@s3.test)
X() { "$WARD" box exec "$B" --timeout 60s -- "$1" 2>&1; }
ENVS=$(X 'printf "%s %s %s" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" "${AWS_SESSION_TOKEN-unset}"')
like "$ENVS" '^ward-secret-[0-9a-f]{32} ward-secret-[0-9a-f]{32} unset$' \
	"the box's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are placeholders, no session token ($ENVS)"
unlike "$(X 'cat /proc/[0-9]*/environ 2>/dev/null | tr "\0" "\n"')" "wardtest" "no process of the box has a real key"
is "$("$WARD" box info "$B" | json secrets)" '[{"name": "aws", "hosts": "s3.test"}]' "ward box info lists it as aws"

# curl 7.88 sends no x-amz-content-sha256 of its own; S3 wants one.
SIG='--aws-sigv4 aws:amz:us-east-1:s3 --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD"'
URL=http://s3.test:$HP/ward-test
R=$(X "printf 'put by curl %s\n' \$\$ >/tmp/obj; curl -sS -f $SIG -T /tmp/obj $URL/curl-obj && echo put")
is "$R" "put" "curl --aws-sigv4 with the placeholder keys: an S3 PUT is taken"
like "$(cat "$D/data/ward-test/curl-obj._S3rver_object" 2>&1)" "^put by curl [0-9]+$" \
	"the server stored it: it checked the signature with the real key"
R=$(X "curl -sS -f $SIG $URL/curl-obj")
like "$R" "^put by curl [0-9]+$" "curl --aws-sigv4: the GET back"
R=$(X "curl -sS -f $SIG '$URL?list-type=2&prefix=curl'")
like "$R" "<Key>curl-obj</Key>" "a query string (list-type=2&prefix) signed and re-signed"

if X 'python3 -c "import boto3"' >/dev/null; then
	R=$(X "python3 -c \"
import boto3
s3 = boto3.client('s3', endpoint_url='http://s3.test:$HP', region_name='us-east-1')
s3.put_object(Bucket='ward-test', Key='dir/boto obj', Body=b'put by boto3')
print(s3.get_object(Bucket='ward-test', Key='dir/boto obj')['Body'].read().decode())
print(len(s3.list_objects_v2(Bucket='ward-test')['Contents']))\"")
	is "$R" "put by boto3
2" "boto3 with the placeholder keys: put, get back and list (a path with / and a space)"
else
	skip "boto3 is not installed (apt-get install python3-boto3)"
fi

# The attacker's own key to the secret's host: refused before it leaves.
R=$(X "printf evil >/tmp/evil; curl -sS -v --aws-sigv4 aws:amz:us-east-1:s3 --user AKIAATTACKER:attackers-secret -T /tmp/evil $URL/evil 2>&1")
like "$R" "403 Forbidden by ward: a SigV4 signature by another key \(AKIAATTACKER\), not the placeholder's, to s3.test, aws's host" \
	"a signature by another key to the secret's host: refused"
check "and it did not reach the server" test ! -e "$D/data/ward-test/evil._S3rver_object"
R=$(X "curl -sS -v -H 'Authorization: Bearer x' $URL/evil2 2>&1")
like "$R" "403 Forbidden by ward: an Authorization that is not a SigV4 signature by the placeholder key" \
	"another kind of Authorization: refused"
R=$(X "curl -sS -v '$URL/evil?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAATTACKER%2F20250101%2Fus-east-1%2Fs3%2Faws4_request' 2>&1")
like "$R" "403 Forbidden by ward: a presigned URL" "a presigned URL of another key: refused"
R=$(X "curl -sS $URL/curl-obj")
like "$R" "^put by curl [0-9]+$" "twin: a request with no credential is carried as it is (this server reads to anyone)"
# A presigned URL the box makes with its placeholder keys (boto3's
# generate_presigned_url) is checked and re-signed at the proxy; the
# server checks presigned signatures with the real key (its twin from the
# host: the same URL signed with the wrong secret is refused there).
PRE="import boto3, botocore.config, sys
s3 = boto3.client('s3', endpoint_url=sys.argv[1], region_name='us-east-1', config=botocore.config.Config(signature_version='s3v4'))
print(s3.generate_presigned_url(sys.argv[2], Params={'Bucket': 'ward-test', 'Key': sys.argv[3]}, ExpiresIn=600))"
if python3 -c "import boto3" 2>/dev/null; then
	U=$(AWS_SECRET_ACCESS_KEY=not-the-secret python3 -c "$PRE" "http://127.0.0.1:$HP" get_object curl-obj)
	is "$(curl -sS -o /dev/null -w '%{http_code}' "$U")" 403 "(the S3 server: a presigned URL with the wrong secret, from the host, is refused)"
	U=$(python3 -c "$PRE" "http://127.0.0.1:$HP" get_object curl-obj)
	like "$(curl -sS "$U")" "^put by curl [0-9]+$" "(and with the right one, taken)"
else
	skip "boto3 is not installed on the host (the server's presigned twin)"
	skip "boto3 is not installed on the host"
fi
if X 'python3 -c "import boto3"' >/dev/null; then
	U=$(X "python3 -c \"$PRE\" http://s3.test:$HP get_object curl-obj")
	like "$U" "X-Amz-Credential=ward-secret-[0-9a-f]{32}%2F" "a presigned URL made in the box names the placeholder key"
	R=$(X "curl -sS -f '$U'")
	like "$R" "^put by curl [0-9]+$" "a presigned GET made with the placeholder keys: re-signed, and the server takes it"
	R=$(X "curl -sS -v '${U/curl-obj/evil}' 2>&1")
	like "$R" "400 Bad Request by ward: secret aws: the presigned URL's signature does not hold with the placeholder keys" \
		"a presigned URL changed after it was made (another object): refused"
	U=$(X "python3 -c \"$PRE\" http://s3.test:$HP put_object pre-put")
	R=$(X "printf 'put by a presigned url\n' >/tmp/pre; curl -sS -f -T /tmp/pre '$U' && echo put")
	is "$R" "put" "a presigned PUT made with the placeholder keys: re-signed, and taken"
	like "$(cat "$D/data/ward-test/pre-put._S3rver_object" 2>&1)" "^put by a presigned url$" "the server stored it"
else
	skip "boto3 is not installed in the box (apt-get install python3-boto3)"
	skip "boto3 is not installed in the box"
	skip "boto3 is not installed in the box"
	skip "boto3 is not installed in the box"
	skip "boto3 is not installed in the box"
fi
# A changed request: signed for one object, sent for another.
R=$(X "curl -sS -v $SIG -H 'x-amz-meta-a: 1' $URL/curl-obj 2>&1 | grep -c '^< HTTP/1.1 200'")
is "$R" 1 "(a signed x-amz-meta header is carried and re-signed)"

# --secret-other-keys: another key goes on as it is (and the server,
# which knows no such key, refuses it: the box's own account, not ward's).
O=$(box_new --allow-host "s3.test=127.0.0.1:$HP" --secret aws@s3.test --secret-other-keys)
R=$("$WARD" box exec "$O" -- "printf evil >/tmp/evil; curl -sS --aws-sigv4 aws:amz:us-east-1:s3 --user AKIAATTACKER:x -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' -T /tmp/evil $URL/evil" 2>&1)
like "$R" "InvalidAccessKeyId" "--secret-other-keys: another key is carried as it is (the server answers)"
R=$("$WARD" box exec "$O" -- "curl -sS -f $SIG $URL/curl-obj" 2>&1)
like "$R" "^put by curl [0-9]+$" "--secret-other-keys: the placeholder is still re-signed"

# The keys from a file: aws=@FILE@HOST, FILE holding KEY_ID:SECRET_KEY.
printf 'wardtest:wardtest-secret\n' >"$D/awskeys"
F=$(unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY; box_new --allow-host "s3.test=127.0.0.1:$HP" --secret "aws=@$D/awskeys@s3.test")
R=$("$WARD" box exec "$F" -- "curl -sS -f $SIG $URL/curl-obj" 2>&1)
like "$R" "^put by curl [0-9]+$" "aws=@FILE@HOST: the keys from a file, re-signed with them"
printf 'no-colon\n' >"$D/awsbad"
R=$("$WARD" box create --persistent --secret "aws=@$D/awsbad@s3.test" 2>&1); RC=$?
is "$RC" 64 "aws=@FILE@HOST of a file that is not KEY_ID:SECRET_KEY: exit 64"
like "$R" "holds not KEY_ID:SECRET_KEY" "and it says what the file must hold ($R)"

# HTTPS: the proxy terminates TLS for s3.test and re-signs inside it.
T=$(box_new --allow-host "s3.test=127.0.0.1:$TP" --secret aws@s3.test --secret-ca "$D/ca.pem")
XT() { "$WARD" box exec "$T" --timeout 60s -- "$1" 2>&1; }
TURL=https://s3.test:$TP/ward-test
R=$(XT "printf 'put over tls\n' >/tmp/obj; curl -sS -f $SIG -T /tmp/obj $TURL/tls-obj && curl -sS -f $SIG $TURL/tls-obj")
is "$R" "put over tls" "HTTPS: curl --aws-sigv4 put and get back through the terminating proxy"
like "$(cat "$D/tdata/ward-test/tls-obj._S3rver_object" 2>&1)" "^put over tls$" "HTTPS: the server stored it (signed with the real key)"
# A large body streams through, never held whole: S3's signature covers
# x-amz-content-sha256 (UNSIGNED-PAYLOAD here), not the body itself.
R=$(XT "head -c 20971520 /dev/urandom >/tmp/big && curl -sS -f $SIG -T /tmp/big $TURL/big-obj &&
	curl -sS -f $SIG -o /tmp/big.back $TURL/big-obj && cmp /tmp/big /tmp/big.back && echo same")
is "$R" "same" "HTTPS: a 20 MB PUT through the terminating proxy and its GET back are byte-equal"
is "$(stat -c %s "$D/tdata/ward-test/big-obj._S3rver_object" 2>&1)" 20971520 "HTTPS: the server stored all 20 MB of it"
if XT 'python3 -c "import boto3"' >/dev/null; then
	R=$(XT "python3 -c \"
import boto3, os
s3 = boto3.client('s3', endpoint_url='https://s3.test:$TP', region_name='us-east-1')
s3.put_object(Bucket='ward-test', Key='boto-tls', Body=b'boto over tls')
print(s3.get_object(Bucket='ward-test', Key='boto-tls')['Body'].read().decode())
big = os.urandom(20 << 20)
s3.put_object(Bucket='ward-test', Key='boto-big', Body=big)
print(s3.get_object(Bucket='ward-test', Key='boto-big')['Body'].read() == big)\"")
	is "$R" "boto over tls
True" "HTTPS: boto3 (its CA from the box's REQUESTS_CA_BUNDLE / AWS_CA_BUNDLE) put and get, and 20 MB byte-equal"
else
	skip "boto3 is not installed (apt-get install python3-boto3)"
fi
if XT 'python3 -c "import boto3"' >/dev/null; then
	U=$(XT "python3 -c \"$PRE\" https://s3.test:$TP get_object tls-obj")
	R=$(XT "curl -sS -f '$U'")
	is "$R" "put over tls" "HTTPS: a presigned GET made with the placeholder keys: re-signed through the terminating proxy"
else
	skip "boto3 is not installed in the box"
fi
# A streaming signature (aws-chunked, STREAMING-AWS4-HMAC-SHA256-PAYLOAD):
# each chunk's signature, chained from the request's, is checked with the
# placeholder keys and made again with the real ones. The client is the
# test's own signer (sigv4_stream.py, checked against AWS's example), run
# in the box; the S3 server checks the request's signature and decodes
# the chunks (it does not check theirs: the checking server below does).
STREAMPY=$(base64 -w0 <"$(dirname "$0")/sigv4_stream.py")
XT "echo $STREAMPY | base64 -d >/tmp/sigv4_stream.py; head -c 3000000 /dev/urandom >/tmp/sbig" >/dev/null
SUM=$(XT "sha256sum </tmp/sbig | cut -d' ' -f1")
R=$(XT "python3 /tmp/sigv4_stream.py $TURL/stream-obj signed length /tmp/sbig 1048576 &&
	curl -sS -f $SIG $TURL/stream-obj | sha256sum | cut -d' ' -f1")
is "$R" "200 OK
$SUM" "HTTPS: a streaming-signed PUT (3 chunks of 1 MiB, the bound) re-signed, and its GET back byte-equal"
is "$(sha256sum <"$D/tdata/ward-test/stream-obj._S3rver_object" | cut -d' ' -f1)" "$SUM" \
	"HTTPS: the S3 server stored the decoded bytes, equal"
R=$(XT "curl -sS -v --aws-sigv4 aws:amz:us-east-1:s3 --user AKIAATTACKER:x -T /tmp/obj $TURL/evil 2>&1")
like "$R" "403 Forbidden by ward: a SigV4 signature by another key \(AKIAATTACKER\)" "HTTPS: a signature by another key: refused"
check "HTTPS: and it did not reach the server" test ! -e "$D/tdata/ward-test/evil._S3rver_object"

# A service other than S3 signs its body's hash (no x-amz-content-sha256):
# the terminating proxy reads the body whole, hashes it, and re-signs. The
# server here checks signatures by its own reading of SigV4.
: >"$D/sts.log"
python3 "$(dirname "$0")/secret-server.py" --log "$D/sts.log" --port-file "$D/sts.port" --cert "$D/srv.pem" \
	--key "$D/srv.key" --sigv4 wardtest:wardtest-secret &
P3=$!
wait_until 10 test -s "$D/sts.port"
SP=$(cat "$D/sts.port")
STS='--aws-sigv4 aws:amz:us-east-1:sts -d Action=GetCallerIdentity\&Version=2011-06-15'
curl -sS --cacert "$D/ca.pem" --resolve "sts.test:$SP:127.0.0.1" --aws-sigv4 aws:amz:us-east-1:sts \
	--user wardtest:not-the-secret -d 'Action=GetCallerIdentity&Version=2011-06-15' "https://sts.test:$SP/" >/dev/null
like "$(tail -n1 "$D/sts.log")" '"sigv4": false' "(the checking server: a signature with the wrong secret, from the host, is false)"
curl -sS --cacert "$D/ca.pem" --resolve "sts.test:$SP:127.0.0.1" --aws-sigv4 aws:amz:us-east-1:sts \
	--user wardtest:wardtest-secret -d 'Action=GetCallerIdentity&Version=2011-06-15' "https://sts.test:$SP/" >/dev/null
like "$(tail -n1 "$D/sts.log")" '"sigv4": true' "(and with the right one, true)"
ST=$(box_new --allow-host "sts.test=127.0.0.1:$SP" --secret aws@sts.test --secret-ca "$D/ca.pem")
R=$("$WARD" box exec "$ST" -- "curl -sS --user \"\$AWS_ACCESS_KEY_ID:\$AWS_SECRET_ACCESS_KEY\" $STS https://sts.test:$SP/" 2>&1)
is "$R" "ok" "HTTPS: curl --aws-sigv4 for sts (a form body, signed by its hash) through the terminating proxy"
L=$(tail -n1 "$D/sts.log")
like "$L" '"sigv4": true' "the server found the body's signature good with the real key"
unlike "$L" "ward-secret-|x-amz-content-sha256" "(signed by the body's hash, no placeholder in it)"
# Such a body is read whole before it is re-signed: over 1 MiB it is
# refused, in one line that gives the bound, and nothing reaches the host.
N=$(wc -l <"$D/sts.log")
R=$("$WARD" box exec "$ST" -- "head -c 2000000 /dev/zero | tr '\\0' a >/tmp/form; curl -sS -v --user \"\$AWS_ACCESS_KEY_ID:\$AWS_SECRET_ACCESS_KEY\" --aws-sigv4 aws:amz:us-east-1:sts --data-binary @/tmp/form https://sts.test:$SP/ 2>&1")
like "$R" "413 Content Too Large by ward: a SigV4 body signed by its own hash is read whole to be re-signed, at most 1048576 bytes \(this one: 2000000\); sign it with x-amz-content-sha256" \
	"HTTPS: a body signed by its hash over 1 MiB: refused, the bound said"
is "$(wc -l <"$D/sts.log")" "$N" "and nothing of it reached the server"
if "$WARD" box exec "$ST" -- 'python3 -c "import boto3"' >/dev/null 2>&1; then
	"$WARD" box exec "$ST" -- "python3 -c \"
import boto3
try:
    boto3.client('sts', endpoint_url='https://sts.test:$SP', region_name='us-east-1').get_caller_identity()
except Exception:
    pass\"" >/dev/null 2>&1
	L=$(tail -n1 "$D/sts.log")
	like "$L" '"body": "Action=GetCallerIdentity' "boto3 sts: its request reached the server"
	like "$L" '"sigv4": true' "boto3 sts: signed by its body's hash, re-signed with the real key"
else
	skip "boto3 is not installed (apt-get install python3-boto3)"
fi
# Streaming signatures checked by the checking server's own reading:
# every chunk's and the trailer's, with the real key. Its twin first,
# from the host: the same upload signed with the wrong secret is false.
SF=$T_TMP/sfile
MKF="import random; random.seed(7); open('/tmp/sfile', 'wb').write(random.randbytes(300000))"
python3 -c "${MKF/\/tmp\/sfile/$SF}"
SSUM=$(sha256sum <"$SF" | cut -d' ' -f1)
env -u https_proxy AWS_ACCESS_KEY_ID=wardtest AWS_SECRET_ACCESS_KEY=not-the-secret SSL_CERT_FILE="$D/ca.pem" \
	CONNECT_TO=127.0.0.1 python3 "$(dirname "$0")/sigv4_stream.py" "https://sts.test:$SP/b/k" signed length "$SF" >/dev/null
like "$(tail -n1 "$D/sts.log")" '"stream": "chunk 0: its signature does not hold"' \
	"(the checking server: chunks signed with the wrong secret, from the host, do not hold)"
env -u https_proxy AWS_ACCESS_KEY_ID=wardtest AWS_SECRET_ACCESS_KEY=wardtest-secret SSL_CERT_FILE="$D/ca.pem" \
	CONNECT_TO=127.0.0.1 python3 "$(dirname "$0")/sigv4_stream.py" "https://sts.test:$SP/b/k" signed-trailer length "$SF" >/dev/null
like "$(tail -n1 "$D/sts.log")" '"stream": "ok"' "(and with the right one, they hold)"
SX() { "$WARD" box exec "$ST" --timeout 60s -- "$1" 2>&1; }
SX "echo $STREAMPY | base64 -d >/tmp/sigv4_stream.py; python3 -c \"$MKF\"" >/dev/null
for MF in "signed length" "signed chunked" "signed-trailer length" "signed-trailer chunked" "unsigned-trailer chunked"; do
	R=$(SX "python3 /tmp/sigv4_stream.py https://sts.test:$SP/ward-test/s $MF /tmp/sfile")
	L=$(tail -n1 "$D/sts.log")
	is "$R" "200 OK: ok" "HTTPS: a streaming upload ($MF) through the terminating proxy"
	like "$L" '"sigv4": true' "($MF) the request's signature holds with the real key"
	like "$L" "\"stream\": \"ok\", \"decoded_len\": 300000, \"decoded_sha256\": \"$SSUM\"" \
		"($MF) every chunk's signature holds with the real key, and the bytes arrive equal"
	unlike "$L" "ward-secret-" "($MF) no placeholder reached the server"
done
# Refused in the middle of the body (its head already gone on): the box
# reads the refusal, and the server sees its upload cut, not ended.
SX "head -c 3000000 /dev/urandom >/tmp/sbig" >/dev/null
R=$(SX "python3 /tmp/sigv4_stream.py https://sts.test:$SP/ward-test/big signed length /tmp/sbig 1048577")
like "$R" "^413 Content Too Large by ward: an aws-chunked chunk of 1048577 bytes: a signed chunk is held whole to be re-signed, at most 1048576 bytes" \
	"HTTPS: a signed chunk over 1 MiB: refused, the bound said ($R)"
wait_until 10 grep -q '"path": "/ward-test/big", "cut": true' "$D/sts.log"
ok $? "and the server saw that upload cut"
R=$(SX "python3 /tmp/sigv4_stream.py https://sts.test:$SP/ward-test/bad signed-bad length /tmp/sbig")
like "$R" "^400 Bad Request by ward: aws-chunked chunk 2's signature does not hold with the placeholder keys" \
	"HTTPS: a byte of chunk 2 changed after the box signed it: refused ($R)"
wait_until 10 grep -q '"path": "/ward-test/bad", "cut": true' "$D/sts.log"
ok $? "and the server saw that upload cut"
R=$(SX "python3 /tmp/sigv4_stream.py https://sts.test:$SP/ward-test/max signed length /tmp/sbig 1048576")
is "$R" "200 OK: ok" "twin: chunks of 1 MiB, the bound, are carried"
like "$(tail -n1 "$D/sts.log")" '"stream": "ok", "decoded_len": 3000000' "(and every chunk's signature holds with the real key)"
if SX 'python3 -c "import boto3"' >/dev/null; then
	# boto3 with a checksum over HTTPS: STREAMING-UNSIGNED-PAYLOAD-TRAILER,
	# aws-chunked inside Transfer-Encoding: chunked.
	SX "python3 -c \"
import boto3
s3 = boto3.client('s3', endpoint_url='https://sts.test:$SP', region_name='us-east-1')
s3.put_object(Bucket='ward-test', Key='boto-crc', Body=open('/tmp/sfile', 'rb'), ChecksumAlgorithm='CRC32')\"" >/dev/null
	L=$(tail -n1 "$D/sts.log")
	like "$L" '"X-Amz-Content-SHA256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER"' "boto3 with a CRC32 sends an unsigned streaming payload"
	like "$L" '"sigv4": true' "boto3 streaming: re-signed with the real key"
	like "$L" "\"stream\": \"ok\", \"decoded_len\": 300000, \"decoded_sha256\": \"$SSUM\"" \
		"boto3 streaming: its chunks and trailer arrive as sent, the bytes equal"
else
	skip "boto3 is not installed (apt-get install python3-boto3)"
fi
unlike "$(cat "$XDG_STATE_HOME"/ward/boxes/*/keeper.log 2>/dev/null)" "wardtest-secret" "no keeper log holds the real secret"
finish
