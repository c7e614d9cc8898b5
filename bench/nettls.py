#!/usr/bin/env python3
"""HTTPS through an ns box's egress proxy, three ways: direct on the host;
through the proxy's tunnel (TLS end to end, the SNI checked: a host with
no secret); and through the proxy terminating TLS (a host a secret
belongs to: the box's CA, the request read, TLS again upstream). A small
GET's latency (a new connection each, 200 requests, median; the tunnel and
the terminated connection from one box, in turn) and a 100 MB
download's throughput (curl, median of 5), from a loopback HTTPS server.
Prints one line:

  DIRECT_MBPS TUNNEL_MBPS TERM_MBPS DIRECT_US TUNNEL_US TERM_US

usage: nettls.py WARD WORKDIR
"""
import os
import statistics
import subprocess
import sys
import time

import netserve

ward, work = sys.argv[1], sys.argv[2]
srv, ports, d = netserve.start(work, "tls", ['tunnel.test', 'term.test'])
port = ports["https"]

# Fresh connections, one small GET each, through the proxy (CONNECT, then
# TLS inside) or directly, to each target in turn (VIA HOST CAFILE, CA the
# file the client trusts): targets measured in one process are measured
# side by side, round by round, under the same load. Prints each one's
# median.
LAT = r'''
import socket, ssl, sys, time, statistics
port, n = int(sys.argv[1]), int(sys.argv[2])
targets = [sys.argv[i:i + 3] for i in range(3, len(sys.argv), 3)]
ctxs = [ssl.create_default_context(cafile=ca) for _, _, ca in targets]
ts = [[] for _ in targets]


def one(via, host, ctx):
    req = ("GET /small HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host).encode()
    t0 = time.perf_counter()
    if via == "direct":
        s = socket.create_connection(("127.0.0.1", port))
    else:
        s = socket.create_connection(("127.0.0.1", 3128))
        s.sendall(("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host, port, host, port)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(1)
        assert b" 200 " in head[:20], head
    t = ctx.wrap_socket(s, server_hostname=host)
    t.sendall(req)
    got = b""
    while True:
        b = t.recv(65536)
        if not b:
            break
        got += b
    t.close()
    assert b" 200 " in got[:20], got[:100]
    return time.perf_counter() - t0


for i in range(n + 10):
    for k, (via, host, _) in enumerate(targets):
        d = one(via, host, ctxs[k])
        if i >= 10:
            ts[k].append(d)
print(" ".join(str(int(statistics.median(t) * 1e6)) for t in ts))
'''
CURL = "curl -s -o /dev/null -w '%{speed_download}\\n' "


def med_speed(lines):
    v = [float(x) for x in lines.split() if x.strip()]
    return statistics.median(v) / 1e6


def host(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout


env = dict(os.environ, XDG_STATE_HOME=os.path.join(work, "tlsstate"), BENCH_KEY="bench-not-a-real-key")
names = []
try:
    for extra in ([], ["--secret", "BENCH_KEY@term.test", "--secret-ca", d + "/c.pem"]):
        r = subprocess.run([ward, "box", "create", "--persistent", "--allow-host", "tunnel.test=127.0.0.1:%d" % port,
                            "--allow-host", "term.test=127.0.0.1:%d" % port] + extra,
                           capture_output=True, text=True, env=env)
        names.append(r.stdout.strip())
    tun, term = names

    def box(name, cmd):
        return subprocess.run([ward, "box", "exec", name, "--timeout", "10m", "--", cmd], capture_output=True,
                              text=True, env=env).stdout
    ca = open(d + "/c.pem").read()
    for n in names:
        box(n, "cat > /tmp/lat.py <<'EOF'\n" + LAT + "\nEOF\ncat > /tmp/ca.pem <<'EOF'\n" + ca + "EOF")
    direct, tunnel, termd = [], [], []
    resolve = "--resolve tunnel.test:%d:127.0.0.1 --cacert %s/c.pem " % (port, d)
    for _ in range(5):
        direct.append(host(CURL + resolve + "https://tunnel.test:%d/big" % port))
        tunnel.append(box(tun, CURL + "--cacert /tmp/ca.pem https://tunnel.test:%d/big" % port))
        termd.append(box(term, CURL + "https://term.test:%d/big" % port))
    n = 200
    du = host("python3 -c '%s' %d %d direct tunnel.test %s/c.pem" % (LAT.replace("'", "'\"'\"'"), port, n, d)).strip()
    # The tunnel and the terminated connection from the same box, in turn:
    # the secret's box tunnels tunnel.test (no secret of its) end to end.
    tu, te = box(term, "python3 /tmp/lat.py %d %d proxy tunnel.test /tmp/ca.pem proxy term.test \"$SSL_CERT_FILE\""
                 % (port, n)).split()
    print("%.0f %.0f %.0f" % (med_speed(" ".join(direct)), med_speed(" ".join(tunnel)), med_speed(" ".join(termd))),
          du, tu, te)
finally:
    for n in names:
        subprocess.run([ward, "box", "destroy", n], env=env, capture_output=True)
    srv.kill()
