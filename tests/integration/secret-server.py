"""A plain HTTP (or, with --cert, HTTPS) server on loopback for secret.sh: it records each request's
method, path and headers as one JSON line in --log, and answers 200 "ok";
on /echo it answers with what it got, as a server that quotes a request
does (its headers in the body and its Authorization in a header of the
response, the body written a few bytes at a time so that a value spans
the proxy's reads): what the proxy must keep from coming back into the box.
With --sigv4 KEY:SECRET it also checks each request's AWS SigV4 signature
with that key, by its own reading of AWS's algorithm (not ward's), and
logs "sigv4": true or false (secret-aws.sh); a streaming (aws-chunked)
body's chunk and trailer signatures are checked too (sigv4_stream.py),
"stream" saying "ok" or what did not hold, with the decoded data's length
and SHA-256. A chunked body is read to its end. Over HTTPS each line says
whether the client resumed a TLS session ("tls_reused")."""
import argparse
import hashlib
import hmac
import http.server
import json
import os
import re
import sys
import socketserver
import time
from urllib.parse import quote, unquote

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sigv4_stream  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--log", required=True)
ap.add_argument("--port-file", required=True)
ap.add_argument("--cert")
ap.add_argument("--key")
ap.add_argument("--sigv4")
a = ap.parse_args()


def enc(s, safe):
    return quote(unquote(s), safe=safe)


def sigv4_ok(method, target, headers, body):
    m = re.match(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, ?"
                 r"SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$", headers.get("Authorization", ""))
    key, secret = a.sigv4.split(":", 1)
    if not m or m.group(1) != key:
        return False
    _, date, region, service, signed, sig = m.groups()
    path, _, query = target.partition("?")
    params = sorted((enc(k, "-_.~"), enc(v, "-_.~")) for k, _, v in (p.partition("=") for p in query.split("&") if p))
    creq = "\n".join([method, enc(path, "/-_.~"), "&".join("%s=%s" % kv for kv in params),
                      "".join("%s:%s\n" % (h, " ".join((headers.get(h) or "").split())) for h in signed.split(";")),
                      signed, headers.get("x-amz-content-sha256") or hashlib.sha256(body).hexdigest()])
    sts = "\n".join(["AWS4-HMAC-SHA256", headers.get("x-amz-date", ""), "%s/%s/%s/aws4_request" % (date, region, service),
                     hashlib.sha256(creq.encode()).hexdigest()])
    k = ("AWS4" + secret).encode()
    for part in (date, region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return hmac.compare_digest(hmac.new(k, sts.encode(), hashlib.sha256).hexdigest(), sig)


def read_chunked(f):
    out = []
    while True:
        size = int(f.readline().split(b";")[0], 16)
        if not size:
            while f.readline() not in (b"\r\n", b""):
                pass
            return b"".join(out)
        out.append(f.read(size))
        f.readline()


def stream_check(headers, raw):
    """What a streaming body's signatures say under the real key."""
    m = re.search(r"Credential=[^/]+/(\d{8})/([^/]+)/([^/]+)/aws4_request.*Signature=([0-9a-f]{64})",
                  headers.get("Authorization", ""))
    mode = {v: k for k, v in sigv4_stream.KINDS.items()}.get(headers.get("x-amz-content-sha256"))
    if not m or not mode:
        return {"stream": "not a streaming SigV4 request ward re-signs"}
    date, region, service, seed = m.groups()
    key = sigv4_stream.signing_key(a.sigv4.split(":", 1)[1], date, region, service)
    data, why = sigv4_stream.decode(raw, mode, key, headers.get("x-amz-date", ""),
                                    "%s/%s/%s/aws4_request" % (date, region, service), seed)
    return {"stream": why or "ok", "decoded_len": len(data), "decoded_sha256": hashlib.sha256(data).hexdigest()}


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def handle_one(self):
        n = int(self.headers.get("Content-Length") or 0)
        chunked = (self.headers.get("Transfer-Encoding") or "").lower() == "chunked"
        try:
            raw = read_chunked(self.rfile) if chunked else self.rfile.read(n) if n else b""
            cut = not chunked and len(raw) < n
        except (OSError, ValueError):
            raw, cut = b"", True
        if cut:	# the body did not come whole: nothing is done with it
            with open(a.log, "a") as f:
                f.write(json.dumps({"method": self.command, "path": self.path, "cut": True}) + "\n")
            return
        rec = {"method": self.command, "path": self.path, "headers": dict(self.headers.items()),
               "body": raw[:4096].decode("latin-1")}
        if a.sigv4:
            rec["sigv4"] = sigv4_ok(self.command, self.path, self.headers, raw)
            if (self.headers.get("x-amz-content-sha256") or "").startswith("STREAMING-"):
                rec.update(stream_check(self.headers, raw))
        if a.cert:
            rec["tls_reused"] = self.connection.session_reused
        with open(a.log, "a") as f:
            f.write(json.dumps(rec) + "\n")
        # /big/N: N bytes (secret.sh's byte budget through a terminated connection).
        out = b"x" * int(self.path[5:]) if self.path.startswith("/big/") else b"ok\n"
        # /hold/TEXT: TEXT, then the connection kept open 5 s (a response
        # whose last bytes may begin a value, from a server that waits).
        hold = self.path.startswith("/hold/")
        if hold:
            out = unquote(self.path[6:]).encode()
        echo = self.path.startswith("/echo")
        if echo:
            out = "".join("%s: %s\n" % kv for kv in self.headers.items()).encode("latin-1")
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.send_header("Connection", "close")
        if echo:
            self.send_header("X-Echo-Authorization", self.headers.get("Authorization", ""))
        self.end_headers()
        if echo:
            self.wfile.flush()
            for i in range(0, len(out), 7):
                self.wfile.write(out[i:i + 7])
                self.wfile.flush()
        else:
            self.wfile.write(out)
        if hold:
            self.wfile.flush()
            time.sleep(5)

    do_GET = do_POST = do_PUT = handle_one

    def log_message(self, *args):
        pass


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


s = S(("127.0.0.1", 0), H)
if a.cert:
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    s.socket = ctx.wrap_socket(s.socket, server_side=True)
with open(a.port_file + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
import os
os.rename(a.port_file + ".tmp", a.port_file)
s.serve_forever()
