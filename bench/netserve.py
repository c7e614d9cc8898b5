"""The loopback servers the egress rows download from (tests/net-servers.py):
a 100 MB file `big` and a 512-byte `small` under a root of their own, a
certificate of a CA made for the run (its names given), the ports the
servers listen on. Shared by net.py and nettls.py."""
import json
import os
import subprocess
import time


def start(work, tag, names):
    """Start the servers in WORK/TAG*; returns (process, ports, cert_dir)."""
    root = os.path.join(work, tag + "root")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "big"), "wb") as f:
        f.truncate(100 << 20)
    open(os.path.join(root, "small"), "w").write("x" * 512)
    ports = os.path.join(work, tag + "ports")
    if os.path.exists(ports):
        os.unlink(ports)
    d = os.path.join(work, tag + "cert")
    os.makedirs(d, exist_ok=True)
    q = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", d + "/k.pem", "-out", d + "/c.pem", "-days", "1", "-subj", "/CN=" + names[0],
                    "-addext", "subjectAltName=" + ",".join("DNS:" + n for n in names)], **q)
    srv = subprocess.Popen(["python3", "tests/net-servers.py", "--root", root, "--cert", d + "/c.pem", "--key",
                            d + "/k.pem", "--ports", ports, "--abstract", "ward-bench-%s-%d" % (tag, os.getpid())])
    deadline = time.monotonic() + 10
    while not os.path.exists(ports):
        if srv.poll() is not None or time.monotonic() > deadline:
            srv.kill()
            raise SystemExit("bench: the loopback servers did not start (tests/net-servers.py)")
        time.sleep(0.05)
    return srv, json.load(open(ports)), d
