"""A plain HTTP (or, with --cert, HTTPS) server on loopback for secret.sh: it records each request's
method, path and headers as one JSON line in --log, and answers 200 "ok"
(never echoing what it got: the value must not come back into the box)."""
import argparse
import http.server
import json
import socketserver

ap = argparse.ArgumentParser()
ap.add_argument("--log", required=True)
ap.add_argument("--port-file", required=True)
ap.add_argument("--cert")
ap.add_argument("--key")
a = ap.parse_args()


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def handle_one(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("latin-1") if n else ""
        with open(a.log, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path, "headers": dict(self.headers.items()),
                                "body": body}) + "\n")
        # /big/N: N bytes (secret.sh's byte budget through a terminated connection).
        out = b"x" * int(self.path[5:]) if self.path.startswith("/big/") else b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(out)

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
