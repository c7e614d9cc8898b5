#!/bin/bash
# Secrets on a vm box (secret.sh's core, kept small: each vm box boots
# under TCG): the guest's $NAME is the placeholder, its /etc/ward-ca.pem
# holds the box's CA and SSL_CERT_FILE and the like name it; plain HTTP
# and HTTPS (terminated at the proxy, on the host) to the secret's host
# carry the real value; the placeholder to another host is refused.
. "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip_all "curl is not installed (apt-get install curl)"
command -v qemu-system-x86_64 >/dev/null || skip_all "QEMU is not installed (apt-get install qemu-system-x86)"
ls /boot/vmlinuz-* >/dev/null 2>&1 || skip_all "no kernel in /boot (apt-get install linux-image-amd64)"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$HOME/.cache}
"$WARD" vm-image build >"$T_TMP/vm-image.log" 2>&1 || skip_all "no vm image here: $(tail -1 "$T_TMP/vm-image.log")"
HERE=$(dirname "$0")
D=$T_TMP/srv
mkdir -p "$D"
ossl() { openssl "$@" >/dev/null 2>&1; }
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$D/ca.key" -out "$D/ca.pem" \
	-days 2 -subj /CN=ward-test-ca
ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$D/srv.key" -out "$D/srv.csr" -subj /CN=api.test
printf 'subjectAltName=DNS:api.test,DNS:tls.api.test\n' >"$D/ext"
ossl x509 -req -in "$D/srv.csr" -CA "$D/ca.pem" -CAkey "$D/ca.key" -CAcreateserial -out "$D/srv.pem" -days 2 -extfile "$D/ext"
: >"$D/api.log"; : >"$D/other.log"; : >"$D/tls.log"
python3 "$HERE/secret-server.py" --log "$D/api.log" --port-file "$D/api.port" &
S1=$!
python3 "$HERE/secret-server.py" --log "$D/other.log" --port-file "$D/other.port" &
S2=$!
python3 "$HERE/secret-server.py" --log "$D/tls.log" --port-file "$D/tls.port" --cert "$D/srv.pem" --key "$D/srv.key" &
S3=$!
finish() { kill "$S1" "$S2" "$S3" 2>/dev/null; wait "$S1" "$S2" "$S3" 2>/dev/null; done_testing; }
wait_until 10 test -s "$D/api.port" -a -s "$D/other.port" -a -s "$D/tls.port"
API=$(cat "$D/api.port"); OTHER=$(cat "$D/other.port"); TLS=$(cat "$D/tls.port")
export WARD_TEST_KEY="sk-live-REAL-$$-vm"

# Booted cold (a snapshot is made at a new guest's first create, which a
# loaded machine may not finish within a create's time), tried three times.
B=
for _ in 1 2 3; do
	B=$(box_new --backend vm --no-snapshot --allow-host "api.test=127.0.0.1:$API" --allow-host "other.test=127.0.0.1:$OTHER" \
		--allow-host "tls.api.test=127.0.0.1:$TLS" --secret WARD_TEST_KEY@api.test,tls.api.test --secret-ca "$D/ca.pem") && break
done
[ -n "$B" ]; ok $? "a vm box with a secret is made"
X() { "$WARD" box exec "$B" --timeout 120s -- "$1" 2>&1; }
like "$(X 'printf %s "$WARD_TEST_KEY"')" '^ward-secret-[0-9a-f]{32}$' "vm: the guest's \$WARD_TEST_KEY is a placeholder"
like "$(X 'echo $SSL_CERT_FILE $REQUESTS_CA_BUNDLE $GIT_SSL_CAINFO; grep -c "BEGIN CERT" /etc/ward-ca.pem')" \
	'^/etc/ward-ca.pem /etc/ward-ca.pem /etc/ward-ca.pem
[0-9]+$' "vm: the guest trusts the box's CA (/etc/ward-ca.pem, named by SSL_CERT_FILE and the like)"
R=$(X 'curl -sS -H "Authorization: Bearer $WARD_TEST_KEY" http://api.test:'"$API"'/vm')
is "$R" "ok" "vm: curl with the placeholder reaches the secret's host"
like "$(tail -n1 "$D/api.log")" "\"Authorization\": \"Bearer $WARD_TEST_KEY\"" "vm: the server got the real key"
R=$(X 'curl -sS -H "Authorization: Bearer $WARD_TEST_KEY" https://tls.api.test:'"$TLS"'/vm-tls')
is "$R" "ok" "vm: HTTPS through the terminating proxy reaches the secret's host"
like "$(tail -n1 "$D/tls.log")" "\"Authorization\": \"Bearer $WARD_TEST_KEY\"" "vm: HTTPS: the server got the real key"
# A server that quotes the request: the value comes back masked, on vm too.
for u in "http://api.test:$API" "https://tls.api.test:$TLS"; do
	R=$(X 'curl -sS -i -H "Authorization: Bearer $WARD_TEST_KEY" '"$u"'/echo')
	unlike "$R" "sk-live-REAL" "vm: ${u%%:*}: an echo from the secret's host does not bring the value into the box"
	like "$R" "X-Echo-Authorization: Bearer \*{${#WARD_TEST_KEY}}" "vm: ${u%%:*}: it comes back as many '*'"
done
R=$(X 'curl -sS -v -H "X-Leak: $WARD_TEST_KEY" http://other.test:'"$OTHER"'/leak 2>&1')
like "$R" "403 Forbidden by ward: the request carries secret WARD_TEST_KEY" "vm: the placeholder to another host: refused"
is "$(wc -l <"$D/other.log")" 0 "vm: and nothing reached it"
unlike "$(cat "$D/api.log" "$D/tls.log")" "ward-secret-" "vm: the servers never got the placeholder"
finish
