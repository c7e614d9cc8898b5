#!/usr/bin/env python3
"""Images: `ward image import` of the Debian minimal image (an OCI archive
of mmdebstrap --variant=minbase, tests/images/make-fixtures.sh), its first
unpack alone (from the same image as an OCI layout directory: the layer
verified and applied), an import of an image that is here already, and
`tar -xzf` of its layer beside them (what a plain unpack costs). Medians of
RUNS, each into an empty store. Prints "import again unpack tar files mb",
or nothing when the fixture cannot be made here.
  image.py WARD WORK FIXTURES [RUNS]"""
import json, os, shutil, statistics, subprocess, sys, tarfile, time

ward, work, fix = sys.argv[1], sys.argv[2], sys.argv[3]
runs = int(sys.argv[4]) if len(sys.argv) > 4 else 3
here = os.path.dirname(os.path.abspath(__file__))
if subprocess.run(["sh", os.path.join(here, "..", "tests", "images", "make-fixtures.sh"), fix],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
    sys.exit(0)
arch = os.path.join(fix, "debian.oci.tar")
if not os.path.exists(arch):
    sys.exit(0)
lay = os.path.join(work, "debian-layout")
with tarfile.open(arch) as t:
    t.extractall(lay)
blobs = os.path.join(lay, "blobs", "sha256")
layer = max((os.path.join(blobs, b) for b in os.listdir(blobs)), key=os.path.getsize)


def timed(argv, env=None):
    t0 = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    if p.returncode:
        sys.exit("image.py: %s failed" % " ".join(argv))
    return (time.monotonic() - t0) * 1000, p.stdout.decode().strip()


imp, again, unp, tx = [], [], [], []
digest = None
for i in range(runs):
    store = os.path.join(work, "imgstore%d" % i)
    env = dict(os.environ, XDG_DATA_HOME=store)
    ms, digest = timed([ward, "image", "import", arch], env)
    imp.append(ms)
    again.append(timed([ward, "image", "import", arch], env)[0])
    shutil.rmtree(store, ignore_errors=True)
    unp.append(timed([ward, "image", "import", lay], env)[0])
    if i < runs - 1:
        shutil.rmtree(store, ignore_errors=True)
    dst = os.path.join(work, "tarx%d" % i)
    os.makedirs(dst)
    tx.append(timed(["tar", "-xzf", layer, "-C", dst])[0])
    shutil.rmtree(dst, ignore_errors=True)
ls = json.loads(subprocess.run([ward, "image", "ls", "--json"], stdout=subprocess.PIPE,
                               env=dict(os.environ, XDG_DATA_HOME=store)).stdout)
im = [x for x in ls if x["digest"] == digest][0]
shutil.rmtree(store, ignore_errors=True)
shutil.rmtree(lay, ignore_errors=True)
med = statistics.median
print("%.0f %.0f %.0f %.0f %d %.0f" % (med(imp), med(again), med(unp), med(tx), im["files"], im["size"] / 1e6))
