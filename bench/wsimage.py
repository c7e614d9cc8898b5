#!/usr/bin/env python3
"""What a workspace's read-only block image costs to make: mkfs.erofs (as
a vm box's workspace image is made at its create, sandbox/vm-ws.c, with
image/erofs.c's image_erofs_make) of a tree of N files of 2 KiB in 50
directories, median of RUNS, and the image's size. This is what a vm box
of an image with a copy-on-write --workspace adds to its create the first
time a tree is seen; a second box of an unchanged tree links the cached
image (keyed by a walk of the tree's metadata, no file read) instead.

usage: wsimage.py WORKDIR RUNS N... -> one line per N: N ms bytes"""
import os, shutil, statistics, subprocess, sys, time

work, runs, ns = sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3:]]
mkfs = shutil.which("mkfs.erofs") or "/usr/bin/mkfs.erofs"
for n in ns:
    d = os.path.join(work, "wsimg-%d" % n)
    for i in range(n):
        sub = os.path.join(d, "d%02d" % (i % 50))
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, "f%05d.txt" % i), "wb") as f:
            f.write(os.urandom(2048))
    img = d + ".erofs"
    ts = []
    for _ in range(runs):
        if os.path.exists(img):
            os.unlink(img)
        t0 = time.monotonic()
        subprocess.run([mkfs, "--quiet", img, d], check=True, capture_output=True)
        ts.append((time.monotonic() - t0) * 1000)
    print("%d %.1f %d" % (n, statistics.median(ts), os.path.getsize(img)))
    shutil.rmtree(d)
    os.unlink(img)
