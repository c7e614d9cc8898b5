#!/usr/bin/env python3
"""A vm hibernate and wake that keep the box's processes: a box of the
python image (tests/integration/vm-hibernate.sh makes it, beside the image
fixtures) with a job holding a 50 MB object and serving HTTP; per run the
keeper's hibernate and wake figures (`ward box hibernate`/`wake`), the
saved machine's bytes (vm.state) beside the guest's memory in use before
(MemTotal - MemAvailable inside the VM), and whether the server answered
the same after the wake (the run is dropped if not).

usage: vmhib.py WARD WORKDIR OCI RUNS -> one line:
  hib_ms wake_ms state_bytes used_bytes runs_kept"""
import json, os, re, statistics, subprocess, sys, time

ward, work, oci, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
env = dict(os.environ, XDG_DATA_HOME=os.path.join(work, "vmhibdata"))


def w(*args):
    p = subprocess.run([ward, *args], capture_output=True, text=True, env=env)
    if p.returncode:
        sys.exit("bench: ward %s: exit %d: %s" % (" ".join(args[:3]), p.returncode, p.stderr.strip()))
    return p.stdout


SRV = r'''import hashlib, http.server, os
blob = os.urandom(50 << 20)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = ("%d %s\n" % (os.getpid(), hashlib.sha256(blob).hexdigest())).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 8765), H)
open("/tmp/srv.ready", "w").write("up")
s.serve_forever()'''
ms = lambda out: int(re.search(r"in (\d+) ms", out).group(1))
ask = "wget -qO- http://127.0.0.1:8765/"
w("image", "import", oci)
hib, wake, state, used = [], [], [], []
for i in range(runs):
    b = w("box", "create", "--persistent", "--backend", "vm", "--image", "ward-test/python", "--memory", "512M").strip()
    try:
        w("box", "tool", b, "write", json.dumps({"path": "/tmp/srv.py", "content": SRV}))
        w("box", "tool", b, "bash", json.dumps({"command": "exec python3 /tmp/srv.py", "background": True}))
        until = time.time() + 120
        while "up" not in w("box", "exec", b, "--", "cat /tmp/srv.ready 2>/dev/null; true") and time.time() < until:
            time.sleep(0.2)
        before = w("box", "exec", b, "--", ask)
        u = int(w("box", "exec", b, "--", "awk '/MemTotal/{t=$2}/MemAvailable/{a=$2}END{print (t-a)*1024}' /proc/meminfo"))
        h = w("box", "hibernate", b)
        info = json.loads(w("box", "info", b))
        sb = info.get("hibernate", {}).get("state_bytes", 0)
        k = w("box", "wake", b)
        if w("box", "exec", b, "--", ask) != before or "processes kept" not in h:
            continue
        hib.append(ms(h)); wake.append(ms(k)); state.append(sb); used.append(u)
    finally:
        subprocess.run([ward, "box", "destroy", b], capture_output=True, env=env)
med = lambda v: statistics.median(v) if v else 0
print("%.0f %.0f %.0f %.0f %d" % (med(hib), med(wake), med(state), med(used), len(hib)))
