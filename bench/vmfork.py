#!/usr/bin/env python3
"""ward box fork of a running vm box: a box of the python image
(tests/integration/vm-hibernate.sh makes it, beside the image fixtures)
with a job holding 50 MB and serving HTTP, forked RUNS times; per fork the
command's wall time, how long the parent stood still (its save and its
disk's copy), and the bytes each fork copies (the machine's state through
QEMU's migration, and the disk's blocks), the fork's job answering as the
parent's did (the run is dropped if not); beside `ward box create` of the
same box.

Anchors, from elsewhere: Morph Cloud's and Mitos's VM forks are about
27 ms and 3 MiB per fork on KVM (memory pages shared copy-on-write); ward's
vm fork copies the guest's RAM in use through the migration stream, and
its disk, so bytes per fork are the memory the guest uses.

usage: vmfork.py WARD WORKDIR OCI RUNS -> one line:
  fork_ms paused_ms state_bytes disk_bytes create_ms runs_kept"""
import json, os, re, statistics, subprocess, sys, time

ward, work, oci, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
env = dict(os.environ, XDG_DATA_HOME=os.path.join(work, "vmforkdata"))


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
ask = "wget -qO- http://127.0.0.1:8765/"
w("image", "import", oci)
boxes = []
try:
    t0 = time.monotonic()
    p = w("box", "create", "--persistent", "--backend", "vm", "--image", "ward-test/python", "--memory", "512M").strip()
    create_ms = (time.monotonic() - t0) * 1000
    boxes.append(p)
    w("box", "tool", p, "write", json.dumps({"path": "/tmp/srv.py", "content": SRV}))
    w("box", "tool", p, "bash", json.dumps({"command": "exec python3 /tmp/srv.py", "background": True}))
    # One call waits inside the box: a loaded TCG guest starting python is
    # slow to answer calls in a row.
    w("box", "exec", p, "--timeout", "300s", "--",
      "i=0; while [ ! -s /tmp/srv.ready ] && [ $i -lt 1400 ]; do sleep 0.2; i=$((i+1)); done")
    before = w("box", "exec", p, "--", ask)
    wall, paused, state, disk = [], [], [], []
    for i in range(runs):
        t0 = time.monotonic()
        c = w("box", "fork", p).strip()
        ms = (time.monotonic() - t0) * 1000
        boxes.append(c)
        f = json.loads(w("box", "info", c)).get("forked_from", {})
        ok = w("box", "exec", c, "--", ask) == before
        subprocess.run([ward, "box", "destroy", c], capture_output=True, env=env)
        if not ok:
            continue
        wall.append(ms)
        paused.append(f.get("parent_paused_ms", 0))
        state.append(f.get("state_bytes", 0))
        disk.append(f.get("disk_bytes", 0))
    med = lambda v: statistics.median(v) if v else 0
    print("%.0f %.0f %.0f %.0f %.0f %d" % (med(wall), med(paused), med(state), med(disk), create_ms, len(wall)))
finally:
    for b in boxes:
        subprocess.run([ward, "box", "destroy", b], capture_output=True, env=env)
