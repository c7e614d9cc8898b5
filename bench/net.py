#!/usr/bin/env python3
"""The egress proxy's cost, side by side: a 100 MB download from a loopback
server through a box's proxy vs the same download on the host directly
(curl, 5 runs each), and a small plain-HTTP request's latency (a fresh
connection each, 200 requests) through the proxy vs directly, and the same
request to a server on the box's own loopback. For each backend given.
Prints one line per backend:

  BACKEND DIRECT_MBPS PROXY_MBPS DIRECT_US PROXY_US BOX_LOOPBACK_US

usage: net.py WARD WORKDIR BACKEND...
"""
import os
import statistics
import subprocess
import sys
import time

import netserve

ward, work, backends = sys.argv[1], sys.argv[2], sys.argv[3:]
srv, ports, d = netserve.start(work, "net", ['bench.test'])
http = ports["http"]

# Fresh connections, one small GET each; the client is the same script on
# both sides, only the address differs (the proxy's takes absolute-form).
LAT = r'''
import socket, sys, time, statistics
host, port, target, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
req = ("GET %s HTTP/1.1\r\nHost: plain.test\r\nConnection: close\r\n\r\n" % target).encode()
ts = []
for i in range(n + 10):
    t0 = time.perf_counter()
    s = socket.create_connection((host, port))
    s.sendall(req)
    got = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += b
    s.close()
    assert b" 200 " in got[:20], got[:100]
    if i >= 10:
        ts.append(time.perf_counter() - t0)
print(int(statistics.median(ts) * 1e6))
'''
# The same client against a server on the box's own loopback (a process
# of the same call): the box's own network stack, no proxy, no ward between
# (under a vm's TCG, its emulated TCP is a floor of the proxied request).
LOOP = r'''
import os, socket, subprocess, sys
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(64)
pid = os.fork()
if pid == 0:
    fd = os.open("/dev/null", os.O_RDWR)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    while True:
        c, _ = srv.accept()
        got = b""
        while b"\r\n\r\n" not in got:
            b = c.recv(65536)
            if not b:
                break
            got += b
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
        c.close()
port = srv.getsockname()[1]
srv.close()
out = subprocess.run([sys.executable, "/tmp/lat.py", "127.0.0.1", str(port), "/small", sys.argv[1]], capture_output=True, text=True).stdout
os.kill(pid, 9)
os.waitpid(pid, 0)
print(out.strip())
'''
CURL = "curl -s -o /dev/null -w '%{speed_download}\\n' "


def med_speed(lines):
    v = [float(x) for x in lines.split() if x.strip()]
    return statistics.median(v) / 1e6


def host(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout


for be in backends:
    env = dict(os.environ, XDG_STATE_HOME=os.path.join(work, "netstate"))
    name = subprocess.run([ward, "box", "create", "--persistent", "--backend", be, "--allow-host",
                           "plain.test=127.0.0.1:%d" % http], capture_output=True, text=True, env=env).stdout.strip()
    try:
        def box(cmd):
            return subprocess.run([ward, "box", "exec", name, "--timeout", "10m", "--", cmd], capture_output=True,
                                  text=True, env=env).stdout
        # Interleaved: direct, then through the box, five times.
        direct, proxied = [], []
        for _ in range(5):
            direct.append(host(CURL + "http://127.0.0.1:%d/big" % http))
            proxied.append(box(CURL + "http://plain.test:%d/big" % http))
        dm, pm = med_speed(" ".join(direct)), med_speed(" ".join(proxied))
        n = 200 if be == "ns" else 40
        box("cat > /tmp/lat.py <<'EOF'\n" + LAT + "\nEOF")
        du = host("python3 -c '%s' 127.0.0.1 %d /small %d" % (LAT.replace("'", "'\"'\"'"), http, n)).strip()
        pu = box("python3 /tmp/lat.py 127.0.0.1 3128 http://plain.test:%d/small %d" % (http, n)).strip()
        box("cat > /tmp/loop.py <<'EOF'\n" + LOOP + "\nEOF")
        lu = box("python3 /tmp/loop.py %d" % n).strip() or "0"   # 0: none measured
        print(be, "%.0f" % dm, "%.0f" % pm, du, pu, lu)
    finally:
        subprocess.run([ward, "box", "destroy", name], env=env, capture_output=True)
srv.kill()
