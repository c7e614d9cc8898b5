#!/usr/bin/env python3
"""Write OCI image layouts and archives for the image tests, from trees and
from layers this script makes itself (the hostile ones no tool would make).

  oci.py image OUT --name NAME [--env K=V]... [--workdir D] [--user U]
                   [--arch A] --layer SPEC...
      an OCI image layout in OUT (a directory) or, for OUT ending in .tar,
      an OCI archive (the layout, tarred). A layer SPEC is KIND:ARG[:COMP]
      with COMP gzip (the default), zstd or none:
        tree:DIR        DIR's files, owned by root (numeric ids 0)
        tar:FILE        FILE as it is (a tar, e.g. mmdebstrap's)
        made:WHAT       one of the layers of made() below
  oci.py index OUT --name NAME LAYOUT...
      an OCI archive whose index lists the images of the LAYOUTs (one
      platform each) as one image index: a multi-platform image.
Only the standard library, and zstd(1) for zstd layers."""
import argparse, hashlib, io, json, os, stat, subprocess, sys, tarfile, tempfile

MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER = {"gzip": "application/vnd.oci.image.layer.v1.tar+gzip",
            "zstd": "application/vnd.oci.image.layer.v1.tar+zstd",
            "none": "application/vnd.oci.image.layer.v1.tar"}
MTIME = 1700000000
OS_RELEASE = b'PRETTY_NAME="ward busybox"\nNAME="ward busybox"\nID=ward-busybox\n'


def info(name, typ=tarfile.REGTYPE, size=0, mode=0o644, uid=0, gid=0, link=""):
    t = tarfile.TarInfo(name)
    t.type, t.size, t.mode, t.uid, t.gid, t.linkname, t.mtime = typ, size, mode, uid, gid, link, MTIME
    return t


def add_file(tf, name, data=b"", mode=0o644, **kw):
    tf.addfile(info(name, size=len(data), mode=mode, **kw), io.BytesIO(data))


def tree_tar(root, out):
    """DIR's files, sorted, owned by root, with their modes."""
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for dirpath, dirs, files in os.walk(root):
            dirs.sort()
            for n in sorted(dirs) + sorted(files):
                p = os.path.join(dirpath, n)
                rel = os.path.relpath(p, root)
                st = os.lstat(p)
                if stat.S_ISLNK(st.st_mode):
                    tf.addfile(info(rel, tarfile.SYMTYPE, link=os.readlink(p), mode=0o777))
                elif stat.S_ISDIR(st.st_mode):
                    tf.addfile(info(rel, tarfile.DIRTYPE, mode=stat.S_IMODE(st.st_mode)))
                elif stat.S_ISREG(st.st_mode):
                    with open(p, "rb") as f:
                        tf.addfile(info(rel, size=st.st_size, mode=stat.S_IMODE(st.st_mode)), f)


def made(what, out):
    """Layers no tree gives: what a hostile image is made of, their
    legitimate twins, and the whiteouts and links of OCI's layer format."""
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tf:
        if what == "overlay2":
            # Over the busybox tree's usr/share/ward: a whiteout, an opaque
            # directory with a new file, and os-release replaced.
            add_file(tf, "etc/os-release", OS_RELEASE)
            add_file(tf, "usr/share/ward/.wh.gone")
            tf.addfile(info("usr/share/ward/old", tarfile.DIRTYPE, mode=0o755))
            add_file(tf, "usr/share/ward/old/.wh..wh..opq")
            add_file(tf, "usr/share/ward/old/c", b"c\n")
        elif what == "overlay3":
            # A hard link to a file of the layer below.
            tf.addfile(info("usr/share/ward/link", tarfile.LNKTYPE, link="etc/os-release"))
        elif what == "usrmerge1":
            tf.addfile(info("usr/bin", tarfile.DIRTYPE, mode=0o755))
            tf.addfile(info("bin", tarfile.SYMTYPE, link="usr/bin", mode=0o777))
        elif what == "usrmerge2":
            add_file(tf, "bin/ward-through", b"through usr-merge\n")
        elif what == "readonly":
            # Directories the image makes unwritable, one unreadable.
            tf.addfile(info("ro", tarfile.DIRTYPE, mode=0o555))
            add_file(tf, "ro/f", b"x", mode=0o444)
            tf.addfile(info("ro/locked", tarfile.DIRTYPE, mode=0o000))
            add_file(tf, "ro/locked/f", b"y", mode=0o400)
        elif what.startswith("arch-"):
            add_file(tf, "etc/arch", what[5:].encode() + b"\n")
        elif what == "suid":
            # A setuid-root and a setgid shell: busybox, which runs as sh.
            with open("/bin/busybox", "rb") as f:
                bb = f.read()
            add_file(tf, "bin/suidsh", bb, mode=0o4755)
            add_file(tf, "bin/sgidsh", bb, mode=0o2755)
            add_file(tf, "bin/plainsh", bb, mode=0o755)
        elif what == "dev":
            # /dev/mem (1,1), a disk (8,0) and a FIFO; and a file beside them.
            t = info("dev/mem", tarfile.CHRTYPE, mode=0o666)
            t.devmajor, t.devminor = 1, 1
            tf.addfile(t)
            t = info("dev/sda", tarfile.BLKTYPE, mode=0o666)
            t.devmajor, t.devminor = 8, 0
            tf.addfile(t)
            tf.addfile(info("run/fifo", tarfile.FIFOTYPE, mode=0o666))
            add_file(tf, "etc/dev-twin", b"made\n")
        elif what == "dotdot":
            add_file(tf, "etc/dotdot-twin", b"made\n")
            add_file(tf, "../../etc/ward-dotdot", b"escaped\n")
        elif what == "abs":
            # An absolute name is the tree's own path (docker's reading).
            add_file(tf, "/etc/ward-abs", b"inside\n")
        elif what == "links":
            # Symlinks out of the tree, absolute and by "..", for the next
            # layer to write through.
            tf.addfile(info("escape", tarfile.SYMTYPE, link="/etc", mode=0o777))
            tf.addfile(info("escape2", tarfile.SYMTYPE, link="../../../../../../../etc", mode=0o777))
        elif what == "through":
            add_file(tf, "escape/ward-escape", b"through an absolute link\n")
            add_file(tf, "escape2/ward-escape2", b"through a .. link\n")
        elif what == "hardlink":
            tf.addfile(info("etc/hl", tarfile.LNKTYPE, link="../../../../etc/passwd"))
        elif what == "bomb":
            # One GiB of zeros: a few hundred KiB once compressed.
            n = 1 << 30
            tf.addfile(info("bomb", size=n), Zeros(n))
        elif what == "bigfile":
            # The twin of the bomb: a MiB of random bytes (no ratio at all).
            add_file(tf, "random", os.urandom(1 << 20))
        elif what.startswith("files"):
            # files3000: that many empty files.
            for i in range(int(what[5:])):
                add_file(tf, "many/f%06d" % i)
        elif what == "size":
            # A header that claims a petabyte, and no content.
            t = info("huge", size=1 << 50)
            tf.addfile(t)  # tarfile pads nothing: the stream ends here
        elif what == "longpath":
            add_file(tf, "/".join(["d" * 200] * 25) + "/f", b"x")
        else:
            sys.exit("oci.py: no layer %r" % what)


class Zeros(io.RawIOBase):
    def __init__(self, n):
        self.left = n

    def readable(self):
        return True

    def readinto(self, b):
        k = min(len(b), self.left)
        b[:k] = bytes(k)
        self.left -= k
        return k


def compress(raw, comp):
    if comp == "none":
        return raw
    if comp == "gzip":
        import gzip
        return gzip.compress(raw, compresslevel=6, mtime=0)
    if comp == "zstd":
        return subprocess.run(["zstd", "-q", "-3", "-c"], input=raw, stdout=subprocess.PIPE, check=True).stdout
    sys.exit("oci.py: no compression %r" % comp)


def make_layer(spec):
    parts = spec.split(":")
    kind, arg = parts[0], parts[1]
    comp = parts[2] if len(parts) > 2 else "gzip"
    buf = io.BytesIO()
    if kind == "tree":
        tree_tar(arg, buf)
    elif kind == "tar":
        with open(arg, "rb") as f:
            buf.write(f.read())
    elif kind == "made":
        if arg == "bomb":
            # Streamed through zstd: a GiB never sits in memory.
            return bomb_layer()
        made(arg, buf)
        if arg == "size":
            buf.truncate(buf.tell())
    else:
        sys.exit("oci.py: no layer kind %r" % kind)
    raw = buf.getvalue()
    return raw, compress(raw, comp), comp


def bomb_layer():
    p = subprocess.Popen(["zstd", "-q", "-3", "-c"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out = tempfile.TemporaryFile()
    import threading
    # A daemon: a failure below does not leave the process waiting on it.
    th = threading.Thread(target=lambda: out.write(p.stdout.read()), daemon=True)
    th.start()
    h = hashlib.sha256()

    class Tee(io.RawIOBase):
        pos = 0

        def writable(self):
            return True

        def tell(self):
            return self.pos

        def write(self, b):
            h.update(b)
            p.stdin.write(b)
            self.pos += len(b)
            return len(b)
    try:
        with tarfile.open(fileobj=Tee(), mode="w", format=tarfile.PAX_FORMAT) as tf:
            n = 1 << 30
            tf.addfile(info("bomb", size=n), Zeros(n))
    finally:
        p.stdin.close()
    th.join()
    p.wait()
    out.seek(0)
    return h, out.read(), "zstd"


class Layout:
    def __init__(self):
        self.blobs = {}

    def blob(self, data, mt):
        d = "sha256:" + hashlib.sha256(data).hexdigest()
        self.blobs[d] = data
        return {"mediaType": mt, "digest": d, "size": len(data)}

    def image(self, layers, env, workdir, user, arch):
        descs, diff_ids = [], []
        for raw, comp_data, comp in layers:
            descs.append(self.blob(comp_data, MT_LAYER[comp]))
            diff_ids.append("sha256:" + (raw.hexdigest() if hasattr(raw, "hexdigest") else hashlib.sha256(raw).hexdigest()))
        cfg = {"architecture": arch, "os": "linux", "created": "2024-01-01T00:00:00Z",
               "config": {"Env": env}, "rootfs": {"type": "layers", "diff_ids": diff_ids}}
        if workdir:
            cfg["config"]["WorkingDir"] = workdir
        if user:
            cfg["config"]["User"] = user
        man = {"schemaVersion": 2, "mediaType": MT_MANIFEST,
               "config": self.blob(json.dumps(cfg, sort_keys=True).encode(), MT_CONFIG), "layers": descs}
        d = self.blob(json.dumps(man, sort_keys=True).encode(), MT_MANIFEST)
        d["platform"] = {"architecture": arch, "os": "linux"}
        return d

    def write(self, out, top, name):
        top = dict(top)
        top["annotations"] = {"org.opencontainers.image.ref.name": name}
        files = {"oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
                 "index.json": json.dumps({"schemaVersion": 2, "mediaType": MT_INDEX, "manifests": [top]}).encode()}
        for d, data in self.blobs.items():
            files["blobs/sha256/" + d[7:]] = data
        if out.endswith(".tar"):
            with tarfile.open(out + ".part", "w", format=tarfile.PAX_FORMAT) as tf:
                for p in ["blobs", "blobs/sha256"]:
                    tf.addfile(info(p, tarfile.DIRTYPE, mode=0o755))
                for p in sorted(files):
                    add_file(tf, p, files[p])
            os.rename(out + ".part", out)
        else:
            os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)
            for p, data in files.items():
                with open(os.path.join(out, p), "wb") as f:
                    f.write(data)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    im = sub.add_parser("image")
    im.add_argument("out")
    im.add_argument("--name", required=True)
    im.add_argument("--env", action="append", default=[])
    im.add_argument("--workdir")
    im.add_argument("--user")
    im.add_argument("--arch", default="amd64")
    im.add_argument("--layer", action="append", required=True)
    ix = sub.add_parser("index")
    ix.add_argument("out")
    ix.add_argument("--name", required=True)
    ix.add_argument("--image", action="append", required=True, help="ARCH=LAYERSPEC[,LAYERSPEC...]")
    a = ap.parse_args()
    L = Layout()
    env = a.env if a.cmd == "image" and a.env else ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
    if a.cmd == "image":
        top = L.image([make_layer(s) for s in a.layer], env, a.workdir, a.user, a.arch)
    else:
        ms = []
        for spec in a.image:
            arch, layers = spec.split("=", 1)
            ms.append(L.image([make_layer(s) for s in layers.split(",")], env, None, None, arch))
        top = L.blob(json.dumps({"schemaVersion": 2, "mediaType": MT_INDEX, "manifests": ms}).encode(), MT_INDEX)
    L.write(a.out, top, a.name)


if __name__ == "__main__":
    main()
