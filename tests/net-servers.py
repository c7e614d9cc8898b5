#!/usr/bin/env python3
"""Servers on the host's loopback for the egress tests: an HTTPS server
(its certificate names allowed.test, pypi.test and fronted.test), a plain
HTTP server over the same files, another HTTP server no rule names, and a
listener on an abstract unix socket. Their ports go to --ports as JSON.
Runs until killed."""
import argparse
import http.server
import json
import os
import socket
import ssl
import sys
import threading
from functools import partial


class Quiet(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass


def serve(httpd):
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--ports", required=True)
    ap.add_argument("--abstract", required=True)
    a = ap.parse_args()
    handler = partial(Quiet, directory=a.root)
    tls = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
    plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    for s in (tls, plain, other):
        serve(s)
    ab = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ab.bind("\0" + a.abstract)
    ab.listen(16)

    def abstract_loop():
        while True:
            c, _ = ab.accept()
            c.sendall(b"host-abstract\n")
            c.close()

    threading.Thread(target=abstract_loop, daemon=True).start()
    tmp = a.ports + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"https": tls.server_address[1], "http": plain.server_address[1],
                   "other": other.server_address[1]}, f)
    os.rename(tmp, a.ports)
    threading.Event().wait()


if __name__ == "__main__":
    sys.exit(main())
