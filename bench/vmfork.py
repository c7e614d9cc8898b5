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

Beside each fork, in the same run, what a qcow2 overlay over the parent's
disk would cost in place of the disk's copy (the copy-on-write disk the
fork does not make yet: see SECURITY.md's fork section): `qemu-img
create -f qcow2 -b DISK -F raw` of one, its time and its bytes on disk,
next to a copy of the same disk as the fork makes it (a clone where the
file system can, else its extents), its time and bytes; 0 0 where
qemu-img is missing.

usage: vmfork.py WARD WORKDIR OCI RUNS -> one line:
  fork_ms paused_ms state_bytes disk_bytes create_ms runs_kept
  copy_ms copy_bytes overlay_ms overlay_bytes"""
import json, os, re, shutil, statistics, subprocess, sys, time

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
    # Calls in a row until the job listens (its start is a minute under a
    # loaded TCG).
    until = time.monotonic() + 300
    while w("box", "exec", p, "--", "cat /tmp/srv.ready 2>/dev/null; true") != "up":
        if time.monotonic() > until:
            sys.exit("bench: the python job did not start within 300 s")
        time.sleep(0.2)
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
    # The parent's disk, its copy and an overlay over it, side by side.
    sdir = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    base = os.path.join(sdir, "ward", "disks", p + ".img")
    cp_ms, cp_b, ov_ms, ov_b = [], [], [], []
    qimg = shutil.which("qemu-img")
    for i in range(runs if qimg and os.path.exists(base) else 0):
        dst, ov = os.path.join(work, "vmfork-copy.img"), os.path.join(work, "vmfork-ov.qcow2")
        t0 = time.monotonic()
        # What vm_disk_copy does where FICLONE fails: the data extents.
        subprocess.run(["cp", "--sparse=always", "--reflink=auto", base, dst], check=True)
        cp_ms.append((time.monotonic() - t0) * 1000)
        cp_b.append(os.stat(dst).st_blocks * 512)
        t0 = time.monotonic()
        subprocess.run([qimg, "create", "-q", "-f", "qcow2", "-b", base, "-F", "raw", ov], check=True)
        ov_ms.append((time.monotonic() - t0) * 1000)
        ov_b.append(os.stat(ov).st_blocks * 512)
        os.unlink(dst)
        os.unlink(ov)
    med = lambda v: statistics.median(v) if v else 0
    print("%.0f %.0f %.0f %.0f %.0f %d %.1f %.0f %.1f %.0f" % (med(wall), med(paused), med(state), med(disk), create_ms,
                                                         len(wall), med(cp_ms), med(cp_b), med(ov_ms), med(ov_b)))
finally:
    for b in boxes:
        subprocess.run([ward, "box", "destroy", b], capture_output=True, env=env)
