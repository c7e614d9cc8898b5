#!/usr/bin/env python3
"""Hibernate, wake and the warm pool, for each backend given, side by side
in one run, medians of RUNS.

- hibernate: `ward box hibernate`'s own figure (the keeper's, from the
  request to the saved state's manifest) for a box holding MB megabytes in
  /tmp (half noise, half text) and a few files in /workspace;
- warm wake: `ward box wake` (state on local disk); cold wake: the same
  after --cold-after moved the state to a directory store (fetch,
  zstd -d, check, start, /tmp back);
- bytes on disk per hibernated box (the saved state) and in the store
  when cold, beside what the guest had in use (vm: MemTotal - MemAvailable
  inside the guest; ns: the box's memory cgroup) before it hibernated;
- vm only: `ward box create --backend vm` taken from a warm pool against a
  create by restore, wall time of the command.

usage: hibernate.py WARD WORKDIR RUNS MB BACKEND... -> one line per backend:
  BACKEND hib_ms warm_ms cold_ms state_bytes stored_bytes used_bytes
and for vm one more: pool pool_create_ms restore_create_ms"""
import json, os, re, signal, statistics, subprocess, sys, time

ward, work, runs, mb = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
backends = sys.argv[5:]


def w(*args, check=True):
    p = subprocess.run([ward, *args], capture_output=True, text=True)
    if check and p.returncode:
        sys.exit("bench: ward %s: exit %d: %s" % (" ".join(args[:3]), p.returncode, p.stderr.strip()))
    return p.stdout


def ms_of(out):
    m = re.search(r"in (\d+) ms", out)
    return int(m.group(1)) if m else -1


def info(b):
    return json.loads(w("box", "info", b))


fill = ("head -c %d /dev/urandom >/tmp/noise; yes 'pip install -r requirements.txt; collected 42 items' "
        "| head -c %d >/tmp/text; mkdir -p /workspace/src; for i in $(seq 50); do echo $i >/workspace/src/f$i; done"
        % (mb << 19, mb << 19))
used_cmd = "awk '/MemTotal/{t=$2}/MemAvailable/{a=$2}END{print (t-a)*1024}' /proc/meminfo"

for be in backends:
    hib, warm, cold, state, stored, used = [], [], [], [], [], []
    store = os.path.join(work, "cold-" + be)
    for i in range(runs):
        ws = os.path.join(work, "ws-%s-%d" % (be, i))
        os.makedirs(ws, exist_ok=True)
        b = w("box", "create", "--persistent", "--backend", be, "--workspace", ws, "--cold-after", "2s",
              "--store", store, "--idle", "0").strip()
        try:
            w("box", "exec", b, "--", fill)
            if be == "vm":
                used.append(int(w("box", "exec", b, "--", used_cmd).strip() or 0))
            else:
                used.append(int(info(b).get("box_memory_bytes", 0)))
            hib.append(ms_of(w("box", "hibernate", b)))
            state.append(int(info(b)["hibernate"]["state_bytes"]))
            warm.append(ms_of(w("box", "wake", b)))
            w("box", "hibernate", b)
            for _ in range(100):
                if info(b)["state"] == "cold":
                    break
                time.sleep(0.1)
            stored.append(int(info(b)["hibernate"].get("stored_bytes", 0)))
            cold.append(ms_of(w("box", "wake", b)))
        finally:
            w("box", "destroy", b, check=False)
    med = lambda v: statistics.median(v) if v else -1
    print(be, med(hib), med(warm), med(cold), med(state), med(stored), med(used))

if "vm" in backends:
    # Create by restore, then from a pool of 2, alternating, so that both
    # see the same machine.
    def create_ms():
        t0 = time.monotonic()
        b = w("box", "create", "--backend", "vm", "--persistent").strip()
        dt = (time.monotonic() - t0) * 1000
        w("box", "destroy", b, check=False)
        return dt

    restore = [create_ms() for _ in range(runs)]
    err = open(os.path.join(work, "pool.err"), "w")
    pool = subprocess.Popen([ward, "box", "pool", "--backend", "vm", "--size", "2"], stderr=err)
    pooled = []
    try:
        for _ in range(runs):
            for _ in range(600):  # wait until the pool is full again
                ls = w("box", "ls")
                if len(re.findall(r" pooled ", ls)) >= 2:
                    break
                time.sleep(0.1)
            pooled.append(create_ms())
    finally:
        pool.send_signal(signal.SIGTERM)
        pool.wait(timeout=30)
    print("pool", round(statistics.median(pooled), 1), round(statistics.median(restore), 1))
