#!/usr/bin/env python3
"""Boxes as an ordinary user beside root, and what the disk ceiling
without root would cost its file system (issue 33).

1. create -> `true` -> destroy (`ward box run -- true`) as the user
   wardtest and as root (hyperfine run as each, so that it times ward
   alone), medians; a warm `true` call (bench-call) in a box of each.
2. The 10,000-file tree written (cp -a), read (every file, warm) and
   grepped (rg -l) on the host's disk, on a fuse2fs image mounted as
   wardtest (workspace/layersfuse.h, tests/integration/layers-fuse.c),
   and through fuse-overlayfs over that image (the tree as its lower, the
   image as its upper, as a box's copy-on-write over it is). Medians of
   RUNS.
3. The same tree as a box's /workspace, written, read and grepped inside
   the box, and a warm `true` in it: as wardtest with --disk (fuse-overlayfs
   over the fuse2fs image its keeper serves) beside root (overlayfs over a
   loop-mounted ext4). Medians of RUNS (the call: of 200).

usage: rootless.py WARD BENCHCALL LAYERSFUSE WORK TREE RUNS
  -> "create U R" (ms), "call U R" (µs), "fs OP host fuse2fs overlay" (ms),
     "box OP U R" (ms; "box call U R" in µs)"""
import json, os, shutil, statistics, subprocess, sys, tempfile

ward, bcall, lfuse, work, tree, runs = sys.argv[1:6] + [int(sys.argv[6])]
ward, bcall, lfuse = (os.path.abspath(p) for p in (ward, bcall, lfuse))
guest = os.path.join(os.path.dirname(ward), "..", "guest", "ward-guest")
udir = tempfile.mkdtemp(prefix="ward-bench-user.")
shutil.chown(udir, "wardtest", "wardtest")
os.makedirs(udir + "/run", mode=0o700)
shutil.chown(udir + "/run", "wardtest", "wardtest")
env = ["env", "WARD_GUEST=" + os.path.abspath(guest), "HOME=" + udir, "XDG_RUNTIME_DIR=" + udir + "/run",
       "XDG_STATE_HOME=" + udir + "/state"]
U = ["runuser", "-u", "wardtest", "--"] + env
R = ["runuser", "-u", "root", "--", "env", "WARD_GUEST=" + os.path.abspath(guest)]

def q(a): return " ".join("'%s'" % x for x in a)

def create(who, tag):
    """hyperfine run as who: it times ward alone, not runuser."""
    hj = os.path.join(udir, "create-%s.json" % tag)
    subprocess.run(who + ["hyperfine", "-N", "-w", "3", "-r", "20", "--export-json", hj,
                          q([ward, "box", "run", "--", "true"])], check=True, capture_output=True)
    return statistics.median(json.load(open(hj))["results"][0]["times"]) * 1e3
print("create %.1f %.1f" % (create(U, "user"), create(R, "root")))

def call(who):
    b = subprocess.run(who + [ward, "box", "create", "--persistent"], check=True, capture_output=True, text=True).stdout.strip()
    try:
        out = subprocess.run(who + [bcall, b, "200"], check=True, capture_output=True, text=True).stdout
    finally:
        subprocess.run(who + [ward, "box", "destroy", b], capture_output=True)
    return int([l.split("\t") for l in out.splitlines() if l.startswith("bash true (warm box)")][0][1])
print("call %d %d" % (call(U), call(R)))

# The file system: one script as wardtest, timing each step itself.
src = os.path.join(udir, "tree")
subprocess.run(["cp", "-a", tree, src], check=True)
subprocess.run(["chown", "-R", "wardtest:wardtest", src], check=True)
body = r'''
set -eu
D=$1 SRC=$2 LF=$3 RUNS=$4
t() { s=$(date +%s%N); "$@" >/dev/null 2>&1; echo $(( ($(date +%s%N) - s) / 1000000 )); }
rd() { find "$1" -type f -exec cat {} + ; }
ops() { # ops DIR: write, read, grep, RUNS times each
	for i in $(seq "$RUNS"); do rm -rf "$1/w"; echo "write $(t cp -a "$SRC" "$1/w")"; done
	for i in $(seq "$RUNS"); do echo "read $(t rd "$1/w")"; done
	for i in $(seq "$RUNS"); do echo "grep $(t rg -l 'needle_[0-9]+' "$1/w")"; done
	rm -rf "$1/w"
}
mkdir "$D/host" "$D/L"
ops "$D/host" | sed 's/^/host /'
read -r HP HPATH <<EOT
$("$LF" mount "$D/img" "$D/L" $((1 << 30)))
EOT
ops "$HPATH" | sed 's/^/fuse2fs /'
mkdir "$HPATH/upper" "$HPATH/work"
# fuse-overlayfs in a user namespace below the holder's (where a box
# would be): the tree as the lower, the image as the upper.
if command -v fuse-overlayfs >/dev/null; then
	mkdir "$D/m"
	nsenter -t "$HP" -U -m --preserve-credentials unshare -Urm sh -c '
		set -eu
		fuse-overlayfs -o "lowerdir=$1,upperdir=$2/upper,workdir=$2/work" "$3" 2>/dev/null
		. "$4"
		for i in $(seq "$5"); do echo "overlay read $(t rd "$3")"; done
		for i in $(seq "$5"); do echo "overlay grep $(t rg -l "needle_[0-9]+" "$3")"; done
		for i in $(seq "$5"); do rm -rf "$3/w"; echo "overlay write $(t cp -a "$1" "$3/w")"; done
		rm -rf "$3/w"
		umount "$3"
	' sh "$SRC" "$D/L" "$D/m" "$D/fns.sh" "$RUNS"
fi
"$LF" unmount "$HP" "$D/L"
'''
fns = r'''t() { s=$(date +%s%N); "$@" >/dev/null 2>&1; echo $(( ($(date +%s%N) - s) / 1000000 )); }
rd() { find "$1" -type f -exec cat {} + ; }
'''
fsd = os.path.join(udir, "fs")
os.makedirs(fsd)
open(fsd + "/fns.sh", "w").write(fns)
shutil.chown(fsd, "wardtest", "wardtest")
out = subprocess.run(["runuser", "-u", "wardtest", "--", "bash", "-c", body, "sh", fsd, src, lfuse, str(runs)],
                     capture_output=True, text=True)
m = {}
for line in out.stdout.splitlines():
    where, op, ms = line.split()
    m.setdefault(op, {}).setdefault(where, []).append(int(ms))
for op in ("write", "read", "grep"):
    v = m.get(op, {})
    print("fs %s %s" % (op, " ".join("%.0f" % statistics.median(v[k]) if k in v else "-" for k in ("host", "fuse2fs", "overlay"))))

# 3. A box's own /workspace: as wardtest with --disk, fuse-overlayfs over
# the tree and a fuse2fs image its keeper serves; as root, overlayfs over
# a loop-mounted ext4 image. The same tree (a directory holding it), the
# same ops timed inside the box, and a warm `true` (bench-call) in each.
wsb = os.path.join(udir, "wsb")
os.makedirs(wsb)
shutil.move(src, wsb + "/tree")
shutil.chown(wsb, "wardtest", "wardtest")
inbox = r'''t() { s=$(date +%s%N); "$@" >/dev/null 2>&1; echo $(( ($(date +%s%N) - s) / 1000000 )); }
rd() { find "$1" -type f -exec cat {} + ; }
case $1 in
write) rm -rf /workspace/w; echo "$(t cp -a /workspace/tree /workspace/w)"; rm -rf /workspace/w ;;
read) rd /workspace/tree >/dev/null; echo "$(t rd /workspace/tree)" ;;
grep) echo "$(t rg -l 'needle_[0-9]+' /workspace/tree)" ;;
esac'''
def boxfs(who):
    b = subprocess.run(who + [ward, "box", "create", "--persistent", "--disk", "2G", "--workspace", wsb],
                       check=True, capture_output=True, text=True).stdout.strip()
    r = {}
    try:
        by = json.loads(subprocess.run(who + [ward, "box", "info", b], capture_output=True, text=True).stdout)
        r["by"] = by.get("limits", {}).get("disk_by", "?")
        for op in ("write", "read", "grep"):
            v = []
            for i in range(runs):
                out = subprocess.run(who + [ward, "box", "exec", b, "--", "sh", "-c", inbox, "sh", op],
                                     capture_output=True, text=True).stdout.split()
                if out:
                    v.append(int(out[-1]))
            r[op] = statistics.median(v) if v else None
        out = subprocess.run(who + [bcall, b, "200"], check=True, capture_output=True, text=True).stdout
        r["call"] = int([l.split("\t") for l in out.splitlines() if l.startswith("bash true (warm box)")][0][1])
    finally:
        subprocess.run(who + [ward, "box", "destroy", b], capture_output=True)
    return r
bu, br = boxfs(U), boxfs(R)
for op in ("write", "read", "grep", "call"):
    print("box %s %s %s" % (op, "%.0f" % bu[op] if bu.get(op) is not None else "-", "%.0f" % br[op] if br.get(op) is not None else "-"))
print("boxby", bu["by"].split(":")[0].replace(" ", "_"), br["by"].split(":")[0].replace(" ", "_"), file=sys.stderr)
subprocess.run(["rm", "-rf", udir])
