#!/usr/bin/env python3
"""ward box fork (ns), medians of RUNS forks of one box: the wall time of
the command (the parent's options asked and its cgroup frozen, the fork
created, its keeper copying the parent's layers, its guest started) and
the keeper's copy alone, and the bytes each fork copies (the parent's
changes: FILES files of 4 KiB in /workspace and a 1 MiB file written in
/etc, its root's changes), beside `ward box create` of the same box.

Anchors, from elsewhere: Morph Cloud's and Mitos's VM forks are about
27 ms and 3 MiB per fork on KVM (memory pages shared copy-on-write); an
ns fork carries files, not processes, so it copies the layers' changed
bytes (FICLONE shares them where the file system can).

usage: fork.py WARD WORKDIR RUNS FILES -> one line:
  fork_ms copy_ms bytes files create_ms"""
import json, os, statistics, subprocess, sys, time

ward, work, runs, files = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])


def w(*args):
    p = subprocess.run([ward, *args], capture_output=True, text=True)
    if p.returncode:
        sys.exit("bench: ward %s: exit %d: %s" % (" ".join(args[:3]), p.returncode, p.stderr.strip()))
    return p.stdout


ws = os.path.join(work, "fork-ws")
os.makedirs(ws, exist_ok=True)
boxes = []
try:
    t0 = time.monotonic()
    p = w("box", "create", "--persistent", "--workspace", ws, "--idle", "0").strip()
    create_ms = (time.monotonic() - t0) * 1000
    boxes.append(p)
    w("box", "exec", p, "--", "mkdir -p /workspace/src && for i in $(seq %d); do head -c 4096 /dev/urandom "
      ">/workspace/src/f$i; done; head -c 1048576 /dev/urandom >/etc/bench-fork" % files)
    wall, copy, nbytes, nfiles = [], [], [], []
    for i in range(runs):
        t0 = time.monotonic()
        c = w("box", "fork", p).strip()
        wall.append((time.monotonic() - t0) * 1000)
        boxes.append(c)
        f = json.loads(w("box", "info", c)).get("forked_from", {})
        copy.append(f.get("ms", 0))
        nbytes.append(f.get("bytes_copied", 0))
        nfiles.append(f.get("files", 0))
    print("%.1f %.1f %d %d %.1f" % (statistics.median(wall), statistics.median(copy), statistics.median(nbytes),
                                    statistics.median(nfiles), create_ms))
finally:
    for b in boxes:
        subprocess.run([ward, "box", "destroy", b], capture_output=True)
