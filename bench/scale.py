#!/usr/bin/env python3
"""Scale (issue 31): many boxes and many tasks on this one machine.

- ns: N idle boxes at once (WARD_SCALE_BOXES, default 1000), made one after
  another: the create rate and how a create's time grows with the boxes
  already there; host memory per box (the PSS of every process a box adds,
  its keeper and its guest, from /proc/PID/smaps_rollup; the kernel's share
  from /proc/meminfo's deltas and the boxes' memory cgroups); `ward box ls`
  with N boxes; one `ward box destroy` of them all; and that nothing is
  left after (no keeper or guest, no mount, no loop device, no cgroup, no
  runtime or state directory).
- vm: M hibernated vm boxes (WARD_SCALE_VM, default 100; host view: a
  hibernate keeps their files) and, where the python image is here,
  WARD_SCALE_VM_IMAGE (default 100) boxes of it, which a hibernate saves
  whole: bytes on disk each, and the wake (the first call) of one while the
  others sleep beside the wake of one alone.
- fleet: T concurrent `ward run --task-file` tasks (WARD_SCALE_TASKS,
  default 50; the demo's replayed fix, each its own workspace): tasks per
  minute, and the tail of ward's own time per task under that load.

Everything runs under runtime, state, data and config directories of its
own (WORKDIR/scale), so that other wards on the machine neither show up in
`ward box ls` nor get destroyed; whatever stops the run (an error, a
signal), `cleanup` destroys what it made and removes what is left.

usage: scale.py run WARD WORKDIR [ns] [vm] [fleet] > WORKDIR/scale.json
       scale.py rows WORKDIR/scale.json   (the RESULTS.md section)
       scale.py cleanup WARD WORKDIR"""
import json, os, re, signal, shutil, statistics, subprocess, sys, time
import fixtasks

MEMINFO = ("MemAvailable", "MemFree", "Buffers", "Cached", "Shmem", "Slab", "SReclaimable", "SUnreclaim",
           "KernelStack", "PageTables", "Percpu")


def log(*a):
    print("scale:", *a, file=sys.stderr, flush=True)


class Scale:
    def __init__(self, ward, work):
        self.ward = os.path.abspath(ward)
        self.root = os.path.join(os.path.abspath(work), "scale")
        self.run_dir = os.path.join(self.root, "run")
        os.makedirs(self.run_dir, mode=0o700, exist_ok=True)
        os.chmod(self.run_dir, 0o700)
        self.env = dict(os.environ, XDG_RUNTIME_DIR=self.run_dir,
                        XDG_STATE_HOME=os.path.join(self.root, "state"),
                        XDG_DATA_HOME=os.path.join(self.root, "data"),
                        XDG_CONFIG_HOME=os.path.join(self.root, "config"))
        for k in ("WARD_MODEL", "ANTHROPIC_MODEL", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
            self.env.pop(k, None)
        self.boxes_dir = os.path.join(self.run_dir, "ward", "boxes")
        self.state = os.path.join(self.root, "state", "ward")
        self.pids_file = os.path.join(self.root, "keepers")
        self.procs = []

    def w(self, *args, check=True, timeout=600):
        p = subprocess.run([self.ward, *args], capture_output=True, text=True, env=self.env, timeout=timeout)
        if check and p.returncode:
            raise RuntimeError("ward %s: exit %d: %s" % (" ".join(args[:3]), p.returncode, p.stderr.strip()[-400:]))
        return p.stdout

    def timed(self, *args, **kw):
        t0 = time.perf_counter()
        out = self.w(*args, **kw)
        return (time.perf_counter() - t0) * 1000, out

    def names(self):
        try:
            return sorted(d for d in os.listdir(self.boxes_dir) if not d.startswith("."))
        except FileNotFoundError:
            return []

    def keeper_of(self, name):
        try:
            return int(open(os.path.join(self.boxes_dir, name, "keeper.pid")).read())
        except (OSError, ValueError):
            return 0

    def remember(self, name):
        """The box's keeper, written down at once: what cleanup kills
        should ward itself fail to destroy it."""
        k = self.keeper_of(name)
        with open(self.pids_file, "a") as f:
            f.write("%d %s\n" % (k, name))
        return k

    def create(self, *flags):
        # A ttl as well: should everything else fail, the keepers end
        # their boxes within the hour on their own.
        ms, out = self.timed("box", "create", "--persistent", "--ttl", "1h", *flags)
        name = out.strip()
        self.remember(name)
        return name, ms

    def destroy_all(self):
        n = self.names()
        if n:
            self.w("box", "destroy", *n, check=False)


# ---- what a process costs, what is left ---------------------------------

def children_map():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            st = open("/proc/%s/stat" % d).read()
        except OSError:
            continue
        f = st[st.rindex(")") + 2:].split()
        kids.setdefault(int(f[1]), []).append(int(d))
    return kids


def tree(pid, kids):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def rollup(pid):
    r = {}
    try:
        for l in open("/proc/%d/smaps_rollup" % pid):
            m = re.match(r"(\w+):\s+(\d+) kB", l)
            if m:
                r[m.group(1)] = int(m.group(2))
        for l in open("/proc/%d/status" % pid):
            if l.startswith("Threads:"):
                r["Threads"] = int(l.split()[1])
    except OSError:
        pass
    return r


def comm(pid):
    try:
        return open("/proc/%d/comm" % pid).read().strip()
    except OSError:
        return "?"


def mappings(pid):
    """Anonymous and resident kB of one process by what is mapped."""
    out, name = {}, None
    try:
        for l in open("/proc/%d/smaps" % pid):
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", l):
                f = l.split()
                name = os.path.basename(f[5]) if len(f) > 5 else "[anon]"
                out.setdefault(name, [0, 0, 0])
            elif l.startswith("Anonymous:"):
                out[name][0] += int(l.split()[1])
            elif l.startswith("Rss:"):
                out[name][1] += int(l.split()[1])
            elif l.startswith("Pss:"):
                out[name][2] += int(l.split()[1])
    except OSError:
        pass
    return out


def meminfo():
    m = {}
    for l in open("/proc/meminfo"):
        k, v = l.split(":")
        m[k] = int(v.split()[0])
    return m


def slabinfo():
    """kB in use by each slab cache (root only; empty elsewhere)."""
    out = {}
    try:
        for l in open("/proc/slabinfo").readlines()[2:]:
            f = l.split()
            out[f[0]] = int(f[2]) * int(f[3]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return out


def kthreads():
    n = 0
    for k in children_map().get(2, []):
        n += 1
    return n


def mounts_under(path):
    return [l.split()[4] for l in open("/proc/self/mountinfo") if path in l.split()[4] or path in l.split(" - ")[-1]]


def loops_under(path):
    out = []
    for d in os.listdir("/sys/block"):
        try:
            bf = open("/sys/block/%s/loop/backing_file" % d).read().strip()
        except OSError:
            continue
        if bf.startswith(path):
            out.append("/dev/" + d)
    return out


def keepers_under(path):
    """Keepers of boxes under path, whoever made them (a fleet task's box
    too): a keeper's stderr is its box's keeper.log."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and comm(int(d)) == "ward-keeper":
            try:
                if os.readlink("/proc/%s/fd/2" % d).startswith(path + "/"):
                    out.append(int(d))
            except OSError:
                pass
    return out


def alive(pid):
    try:
        st = open("/proc/%d/stat" % pid).read()
    except OSError:
        return False
    return st[st.rindex(")") + 2] != "Z"


def du(path):
    total = 0
    for dp, dn, fn in os.walk(path):
        for f in fn + dn:
            try:
                total += os.lstat(os.path.join(dp, f)).st_blocks * 512
            except OSError:
                pass
    return total


def box_bytes(s, name):
    """Blocks in use of what a box keeps: its entries in the state dir
    (layers image, disk, hibernated state) and its runtime dir."""
    total = 0
    for sub in os.listdir(s.state) if os.path.isdir(s.state) else []:
        d = os.path.join(s.state, sub)
        if not os.path.isdir(d):
            continue
        for e in os.listdir(d):
            if e == name or e.startswith(name + "."):
                p = os.path.join(d, e)
                total += du(p) if os.path.isdir(p) and not os.path.islink(p) else os.lstat(p).st_blocks * 512
    return total + du(os.path.join(s.boxes_dir, name))


def cgroups_of(s, name):
    try:
        j = json.load(open(os.path.join(s.boxes_dir, name, "info.json")))
    except (OSError, ValueError):
        return []
    return [j[k] for k in ("cgroup_v2", "cgroup_memory", "cgroup_pids") if j.get(k)]


def cg_mem(paths):
    """Bytes the box's memory cgroup is charged (v1 memory or v2)."""
    for p in paths:
        for f, kf in (("memory.usage_in_bytes", "memory.kmem.usage_in_bytes"), ("memory.current", None)):
            try:
                u = int(open(os.path.join(p, f)).read())
            except (OSError, ValueError):
                continue
            k = 0
            if kf:
                try:
                    k = int(open(os.path.join(p, kf)).read())
                except (OSError, ValueError):
                    pass
            return u, k
    return None


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(q / 100 * (len(v) - 1))))] if v else 0


def leftovers(s, keepers, cgroups, wait_s=30):
    """What the boxes left, waited for up to wait_s (a keeper ends after
    its destroy's answer): (seconds until none, {what: count})."""
    t0 = time.monotonic()
    while True:
        kids = children_map()
        procs = {p for k in set(keepers) | set(keepers_under(s.root)) for p in (tree(k, kids) if alive(k) else [])}
        left = {
            "processes": len(procs),
            "mounts": len(mounts_under(s.root)),
            "loops": len(loops_under(s.root)),
            "cgroups": sum(1 for c in cgroups if os.path.isdir(c)),
            "runtime_dirs": len(s.names()),
            "state_entries": sum(len(os.listdir(os.path.join(s.state, d))) for d in ("workspaces", "disks", "hibernated")
                                 if os.path.isdir(os.path.join(s.state, d))),
        }
        if not any(left.values()) or time.monotonic() - t0 > wait_s:
            return time.monotonic() - t0, left
        time.sleep(0.05)


def strace_top(s, *args):
    """The syscalls a ward command spends its time in (strace -c -f: its
    counts, not its times, are the figure; tracing slows each call)."""
    if not shutil.which("strace"):
        return []
    f = os.path.join(s.root, "strace.txt")
    subprocess.run(["strace", "-c", "-f", "-o", f, s.ward, *args], env=s.env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=120)
    rows = []
    for l in open(f):
        c = l.split()
        if len(c) >= 5 and re.match(r"^[0-9.]+$", c[0]) and c[-1] != "total":
            rows.append((float(c[1]), int(c[3]), c[-1]))
    return sorted(rows, reverse=True)[:5]


# ---- ns: N idle boxes ----------------------------------------------------

def ns_scale(s, n):
    out = {"n": n}
    m0, k0, s0 = meminfo(), kthreads(), slabinfo()
    names, ms = [], []
    t0 = time.perf_counter()
    for i in range(n):
        b, dt = s.create()
        names.append(b)
        ms.append(dt)
        if i == 0:
            # One box alone: its processes' PSS before any file page is
            # shared with a second box.
            kids = children_map()
            out["one_pss_kb"] = sum(rollup(p).get("Pss", 0) for p in tree(s.keeper_of(b), kids))
        if (i + 1) % 100 == 0:
            log("ns: %d boxes, %.0f ms for the last" % (i + 1, dt))
    total = time.perf_counter() - t0
    time.sleep(1)   # the last keepers settle
    m1, k1, s1 = meminfo(), kthreads(), slabinfo()
    out["slab_kb"] = sorted(((s1[c] - s0.get(c, 0)) / n, c) for c in s1)[::-1][:10]
    dec = max(1, n // 10)
    out.update(create_s=total, rate=n / total, create_ms_median=statistics.median(ms),
               create_ms_first=statistics.median(ms[:dec]), create_ms_last=statistics.median(ms[-dec:]),
               create_ms_p99=pct(ms, 99))
    # Every process a box adds: its keeper and what runs under it.
    kids = children_map()
    keepers = [s.keeper_of(b) for b in names]
    per = {}
    nproc = nthreads = 0
    tot = {}
    for k in keepers:
        for p in tree(k, kids):
            r = rollup(p)
            c = comm(p)
            nproc += 1
            nthreads += r.get("Threads", 0)
            a = per.setdefault(c, {"n": 0})
            a["n"] += 1
            for f in ("Rss", "Pss", "Pss_Anon", "Pss_File", "Pss_Shmem", "Private_Dirty", "Anonymous"):
                a[f] = a.get(f, 0) + r.get(f, 0)
                tot[f] = tot.get(f, 0) + r.get(f, 0)
    out.update(procs=nproc, threads=nthreads, by_comm=per, pss_kb=tot.get("Pss", 0) / n,
               anon_kb=tot.get("Pss_Anon", 0) / n, file_kb=tot.get("Pss_File", 0) / n,
               rss_kb=tot.get("Rss", 0) / n)
    # The biggest anonymous mappings of one keeper and one guest.
    k = keepers[len(keepers) // 2]
    out["keeper_maps"] = sorted(((v[0], v[1], v[2], nm) for nm, v in mappings(k).items()), reverse=True)[:8]
    g = [p for p in tree(k, kids) if p != k]
    out["guest_maps"] = sorted(((v[0], v[1], v[2], nm) for nm, v in mappings(g[0]).items()), reverse=True)[:5] if g else []
    # The kernel's: meminfo's deltas, kernel threads, the cgroups.
    out["meminfo_kb"] = {f: (m0.get(f, 0) - m1.get(f, 0)) / n if f in ("MemAvailable", "MemFree") else
                         (m1.get(f, 0) - m0.get(f, 0)) / n for f in MEMINFO}
    out["kthreads"] = (k1 - k0) / n
    cgroups = [c for b in names for c in cgroups_of(s, b)]
    cg = [cg_mem(cgroups_of(s, b)) for b in names]
    cg = [x for x in cg if x]
    if cg:
        out["cgroup_kb"] = sum(u for u, _ in cg) / len(cg) / 1024
        out["cgroup_kmem_kb"] = sum(k for _, k in cg) / len(cg) / 1024
    out["cgroup_dirs"] = len(cgroups) / n
    out["mounts_host"] = len(mounts_under(s.root)) / n
    out["loops"] = len(loops_under(s.root)) / n
    out["disk_bytes"] = statistics.median(box_bytes(s, b) for b in names[: min(n, 20)])
    # The sweep of dead boxes every `ward box` command makes first, at N.
    out["reap_ms"] = statistics.median(s.timed("box", "reap")[0] for _ in range(3))
    out["strace_reap"] = strace_top(s, "box", "reap")
    out["ls_ms"] = statistics.median(s.timed("box", "ls")[0] for _ in range(3))
    out["ls_json_ms"] = statistics.median(s.timed("box", "ls", "--json")[0] for _ in range(3))
    ls = json.loads(s.w("box", "ls", "--json"))
    out["ls_listed"] = len(ls)
    out["ls_running"] = sum(1 for b in ls if b.get("state") == "running")
    out["info_ms"] = statistics.median(s.timed("box", "info", names[len(names) // 2])[0] for _ in range(3))
    # One destroy of them all.
    dt, _ = s.timed("box", "destroy", *names)
    out["destroy_s"] = dt / 1000
    gone_s, left = leftovers(s, keepers, cgroups)
    out["gone_after_s"] = gone_s
    out["left"] = left
    # What the destroy gave back: a second reading of the same cost, as
    # noisy as the first on a shared machine.
    time.sleep(1)
    m2 = meminfo()
    out["freed_kb"] = {f: (m2.get(f, 0) - m1.get(f, 0)) / n if f in ("MemAvailable", "MemFree") else
                       (m1.get(f, 0) - m2.get(f, 0)) / n for f in MEMINFO}
    out["reap0_ms"] = statistics.median(s.timed("box", "reap")[0] for _ in range(3))
    log("ns: %d boxes: %.1f/s, %.0f kB PSS each, ls %.0f ms, destroy %.1f s, left %s" %
        (n, out["rate"], out["pss_kb"], out["ls_ms"], out["destroy_s"], left))
    return out


# ---- vm: M hibernated boxes ---------------------------------------------

def first_call_ms(s, b):
    dt, _ = s.timed("box", "exec", b, "--", "true", timeout=300)
    return dt


def vm_scale(s, m, flags, label):
    out = {"n": m, "label": label}
    alone = []
    for i in range(3):
        b, _ = s.create("--backend", "vm", *flags)
        try:
            s.w("box", "hibernate", b, timeout=300)
            alone.append(first_call_ms(s, b))
        finally:
            s.w("box", "destroy", b, check=False)
    out["wake_alone_ms"] = statistics.median(alone)
    names, cms, hms = [], [], []
    t0 = time.perf_counter()
    for i in range(m):
        b, dt = s.create("--backend", "vm", *flags)
        names.append(b)
        cms.append(dt)
        hms.append(s.timed("box", "hibernate", b, timeout=300)[0])
        if (i + 1) % 10 == 0:
            log("vm %s: %d boxes hibernated, %.0f + %.0f ms for the last" % (label, i + 1, dt, hms[-1]))
    out["make_s"] = time.perf_counter() - t0
    out["per_box_ms"] = out["make_s"] * 1000 / m
    out["create_ms"] = statistics.median(cms)
    out["hibernate_ms"] = statistics.median(hms)
    infos = [json.loads(s.w("box", "info", b)) for b in names]
    out["hibernated"] = sum(1 for j in infos if j.get("state") == "hibernated")
    out["state_bytes"] = statistics.median(j.get("hibernate", {}).get("state_bytes", 0) for j in infos)
    out["kept"] = sum(1 for j in infos if "nothing" in j.get("hibernate", {}).get("loses", ""))
    bb = [box_bytes(s, b) for b in names]
    out["bytes"] = statistics.median(bb)
    out["bytes_total"] = sum(bb)
    # What a sleeping box still holds on the host: its keeper.
    kids = children_map()
    keepers = [s.keeper_of(b) for b in names]
    procs = [p for k in keepers for p in tree(k, kids)]
    out["procs"] = len(procs) / m
    out["pss_kb"] = sum(rollup(p).get("Pss", 0) for p in procs) / m
    out["procs_comm"] = sorted(set(comm(p) for p in procs))
    # The first call of one while the others sleep (three of them, each
    # put back to sleep after).
    wake = []
    for b in (names[0], names[m // 2], names[-1]) if m >= 3 else names:
        wake.append(first_call_ms(s, b))
        s.w("box", "hibernate", b, timeout=300)
    out["wake_ms"] = statistics.median(wake)
    cgroups = [c for b in names for c in cgroups_of(s, b)]
    dt, _ = s.timed("box", "destroy", *names)
    out["destroy_s"] = dt / 1000
    out["gone_after_s"], out["left"] = leftovers(s, keepers, cgroups)
    log("vm %s: %d boxes, %.0f ms each to make, %.1f MB each, wake %.0f ms (alone %.0f), left %s" %
        (label, m, out["per_box_ms"], out["bytes"] / 1e6, out["wake_ms"], out["wake_alone_ms"], out["left"]))
    return out


# ---- fleet: T concurrent ward run tasks ----------------------------------

def fleet_scale(s, n):
    fl = os.path.join(s.root, "fleet")
    shutil.rmtree(fl, ignore_errors=True)
    os.makedirs(fl)
    tasks = os.path.join(fl, "tasks.jsonl")
    with open(tasks, "w") as f:
        fixtasks.write(fl, n + 5, f)   # the last 5 run alone, one at a time

    def start(i, out):
        p = subprocess.Popen([s.ward, "run", "--task-file", tasks, "--task-index", str(i), "--out", out],
                             env=s.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        s.procs.append(p)
        return p

    def task_figures(out, i, wall_ms):
        d = os.path.join(out, "t%d" % i)
        r = json.load(open(os.path.join(d, "result.json")))
        calls = 0
        for l in open(os.path.join(d, "journal.jsonl")):
            j = json.loads(l)
            if j.get("type") == "result" and "elapsed_ms" in j:
                calls += j["elapsed_ms"]
        return {"wall_ms": wall_ms, "calls_ms": calls, "overhead_ms": wall_ms - calls, "stop": r.get("stop"),
                "dispatch_med": r.get("dispatch_us_median", 0), "dispatch_max": r.get("dispatch_us_max", 0)}

    # Alone first: the same task, one at a time (5 runs).
    alone = []
    for k in range(5):
        t0 = time.perf_counter()
        p = start(n + k, os.path.join(fl, "alone"))
        p.wait()
        alone.append(task_figures(os.path.join(fl, "alone"), n + k, (time.perf_counter() - t0) * 1000))
    # Then all n at once.
    out = os.path.join(fl, "out")
    t0 = time.perf_counter()
    ps = {}
    for i in range(n):
        ps[start(i, out).pid] = (i, time.perf_counter())
    ends = {}
    while len(ends) < n:
        pid, st = os.wait()
        if pid in ps:
            ends[ps[pid][0]] = (time.perf_counter(), st)
    wall = time.perf_counter() - t0
    figs = [task_figures(out, i, (ends[i][0] - ps_t) * 1000) for pid, (i, ps_t) in ps.items()]
    done = sum(1 for f in figs if f["stop"] == "done")
    oh = [f["overhead_ms"] for f in figs]
    res = {"n": n, "done": done, "cpus": os.cpu_count(), "wall_s": wall, "per_min": n / wall * 60,
           "task_ms_p50": pct([f["wall_ms"] for f in figs], 50), "task_ms_p99": pct([f["wall_ms"] for f in figs], 99),
           "overhead_ms_p50": pct(oh, 50), "overhead_ms_p99": pct(oh, 99),
           "calls_ms_p50": pct([f["calls_ms"] for f in figs], 50),
           "dispatch_us_p50": pct([f["dispatch_med"] for f in figs], 50),
           "dispatch_us_p99": pct([f["dispatch_max"] for f in figs], 99),
           "alone_overhead_ms": statistics.median(f["overhead_ms"] for f in alone),
           "alone_task_ms": statistics.median(f["wall_ms"] for f in alone),
           "alone_dispatch_us": statistics.median(f["dispatch_med"] for f in alone),
           "alone_per_min": 60000 / statistics.median(f["wall_ms"] for f in alone)}
    res["gone_after_s"], res["left"] = leftovers(s, [], [])
    log("fleet: %d tasks, %d done, %.0f/min, overhead p50 %.0f p99 %.0f ms (alone %.0f), left %s" %
        (n, done, res["per_min"], res["overhead_ms_p50"], res["overhead_ms_p99"], res["alone_overhead_ms"], res["left"]))
    return res


# ---- cleanup --------------------------------------------------------------

def cleanup(s):
    """Whatever the run made, gone, whatever state it stopped in."""
    for p in s.procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in s.procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    if not os.path.isdir(s.root):
        return
    try:
        s.destroy_all()
    except Exception as e:   # a destroy that hangs: the kills below
        log("cleanup: destroy: %s" % e)
    # Keepers ward did not end: each written down when it was made, and
    # ended by its pid where that pid is still a keeper: SIGTERM (the
    # keeper destroys its box), then SIGKILL to it and what runs under it
    # (the sweep below removes what a killed keeper left).
    pids = set()
    try:
        pids |= {int(l.split()[0]) for l in open(s.pids_file) if l.split() and int(l.split()[0]) > 1}
    except OSError:
        pass
    pids |= {k for k in (s.keeper_of(b) for b in s.names()) if k > 1}
    pids |= set(keepers_under(s.root))

    def keepers():
        out = []
        for k in pids:
            try:
                if alive(k) and os.path.basename(os.readlink("/proc/%d/exe" % k)).startswith("ward-keeper"):
                    out.append(k)
            except OSError:
                pass
        return out

    for k in keepers():
        os.kill(k, signal.SIGTERM)
    until = time.monotonic() + 10
    while keepers() and time.monotonic() < until:
        time.sleep(0.1)
    kids = children_map()
    for k in keepers():
        for p in reversed(tree(k, kids)):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
    s.w("box", "reap", check=False)
    for mp in sorted(mounts_under(s.root), key=len, reverse=True):
        subprocess.run(["umount", "-l", mp], stderr=subprocess.DEVNULL)
    for l in loops_under(s.root):
        subprocess.run(["losetup", "-d", l], stderr=subprocess.DEVNULL)
    shutil.rmtree(s.root, ignore_errors=True)


# ---- the RESULTS.md section ----------------------------------------------

def rows(r):
    P = print
    P("\n## Scale\n")
    P("Many boxes and many tasks at once on this machine (`bench/scale.py`; %s)." % r.get("when", ""))
    P("Each part runs under runtime and state directories of its own, so no other ward's boxes count;")
    P("the load averages (1, 5, 15 min) at each part's start and end: " +
      "; ".join("%s %s" % (k, (r[k][0] if isinstance(r[k], list) else r[k]).get("load", "?"))
                for k in ("ns", "vm", "fleet") if r.get(k)) + ".\n")
    P("| what | ward | beside it | ratio | goal |")
    P("|---|---|---|---|---|")
    ns = r.get("ns")
    if ns:
        n = ns["n"]
        mi = ns["meminfo_kb"]
        fr = ns["freed_kb"]
        # Reclaimable slab (dentries, inodes) moves with everyone's work:
        # never below the unreclaimable part.
        kern = max(mi["Slab"], mi["SUnreclaim"]) + mi["KernelStack"] + mi["PageTables"] + mi["Percpu"]
        P("| %d idle ns boxes made one after another (`ward box create --persistent`): boxes per second (median %.0f ms a create; the first tenth %.0f ms, the last %.0f ms, p99 %.0f ms) | %.1f/s | | | |" %
          (n, ns["create_ms_median"], ns["create_ms_first"], ns["create_ms_last"], ns["create_ms_p99"], ns["rate"]))
        P("| host memory per box with %d up: the PSS of every process a box adds (%d processes, %d threads a box: its keeper and its guest; %.0f kB of it anonymous) vs one box alone (its file pages shared with nobody) | %.0f kB | %.0f kB | %.2f× | ≤ 1 MB |" %
          (n, ns["procs"] // n, ns["threads"] // n, ns["anon_kb"], ns["pss_kb"], ns["one_pss_kb"], ns["pss_kb"] / ns["one_pss_kb"]))
        P("| the kernel's share per box with %d up (/proc/meminfo's deltas over the run: slab %.0f kB (%.0f kB unreclaimable), kernel stacks %.0f kB, page tables %.0f kB, per-CPU %.0f kB; %.1f kernel threads, %.0f loop device, %.0f mount in the host's namespace, %.0f cgroup directories a box) vs the processes' PSS | %.0f kB | %.0f kB | %.2f× | |" %
          (n, mi["Slab"], mi["SUnreclaim"], mi["KernelStack"], mi["PageTables"], mi["Percpu"], ns["kthreads"], ns["loops"],
           ns["mounts_host"], ns["cgroup_dirs"], kern, ns["pss_kb"], kern / ns["pss_kb"]))
        P("| all of it: MemAvailable's drop per box while the %d were made (a shared machine: others' work moves it too; page cache %.0f kB, buffers %.0f kB a box) vs its rise per box when they were destroyed (slab %.0f kB, unreclaimable %.0f kB, page tables %.0f kB, kernel stacks %.0f kB of it) | %.0f kB | %.0f kB | %.2f× | ≤ 1 MB |" %
          (n, mi["Cached"], mi["Buffers"], fr["Slab"], fr["SUnreclaim"], fr["PageTables"], fr["KernelStack"], mi["MemAvailable"],
           fr["MemAvailable"], mi["MemAvailable"] / fr["MemAvailable"] if fr["MemAvailable"] else 0))
        if "cgroup_kb" in ns:
            P("| a box's memory cgroup with %d up (what its guest is charged, kernel memory %.0f kB of it; the keeper is outside it) | %.0f kB | | | |" %
              (n, ns["cgroup_kmem_kb"], ns["cgroup_kb"]))
        P("| disk per idle box (its layers image's blocks in use) | %.1f MB | | | |" % (ns["disk_bytes"] / 1e6))
        P("| `ward box ls` with %d boxes (%d listed, %d running; median of 3) vs `ward box ls --json` | %.0f ms | %.0f ms | %.2f× | |" %
          (n, ns["ls_listed"], ns["ls_running"], ns["ls_ms"], ns["ls_json_ms"], ns["ls_ms"] / ns["ls_json_ms"]))
        P("| the sweep every `ward box` command makes first (`ward box reap`, nothing to reap) with %d boxes vs with none; `ward box info` of one of them: %.0f ms | %.0f ms | %.0f ms | %.1f× | |" %
          (n, ns["info_ms"], ns["reap_ms"], ns["reap0_ms"], ns["reap_ms"] / max(ns["reap0_ms"], 0.1)))
        P("| destroy of all %d (one `ward box destroy` of them all; %s: %s) | %.1f s | %.0f ms a box | | |" %
          (n, left_words(ns, "it returned"), ", ".join("%s %d" % kv for kv in ns["left"].items()), ns["destroy_s"], ns["destroy_s"] * 1000 / n))
    for v in r.get("vm", []):
        m = v["n"]
        P("| %d hibernated vm boxes (%s; %d of %d hibernated, %d with their processes kept; made in %.0f ms a box: create %.0f ms, hibernate %.0f ms): bytes on disk each (the saved state %.1f MB of it; %.2f GB for all) | %.1f MB | | | |" %
          (m, v["label"], v["hibernated"], m, v["kept"], v["per_box_ms"], v["create_ms"], v["hibernate_ms"], v["state_bytes"] / 1e6,
           v["bytes_total"] / 1e9, v["bytes"] / 1e6))
        P("| the same: what a sleeping box still holds on the host (its keeper: %.0f process%s a box, %s): PSS a box | %.0f kB | | | |" %
          (v["procs"], "" if v["procs"] == 1 else "es", ", ".join(v["procs_comm"]), v["pss_kb"]))
        P("| the same: the wake (its first call, `ward box exec B -- true`) of one while %d sleep (median of 3) vs of one alone | %.0f ms | %.0f ms | %.2f× | |" %
          (m - 1, v["wake_ms"], v["wake_alone_ms"], v["wake_ms"] / v["wake_alone_ms"]))
        P("| the same: destroy of all %d (one `ward box destroy`; %s: %s) | %.1f s | | | |" %
          (m, left_words(v, "it returned"), ", ".join("%s %d" % kv for kv in v["left"].items()), v["destroy_s"]))
    f = r.get("fleet")
    if f:
        P("| %d concurrent `ward run --task-file` tasks (the demo's replayed fix, each its own workspace; %d done): tasks per minute vs one task at a time | %.0f/min | %.0f/min | %.2f× | |" %
          (f["n"], f["done"], f["per_min"], f["alone_per_min"], f["per_min"] / f["alone_per_min"]))
        P("| the same: ward's own time per task under that load (the task's wall time less its tool calls' elapsed_ms, waits for a CPU included: %d tasks on %d CPUs; p99 %.0f ms; a task's wall time p50 %.0f ms, p99 %.0f ms; %s) vs alone: p50 | %.0f ms | %.0f ms | %.2f× | |" %
          (f["n"], f.get("cpus", 0), f["overhead_ms_p99"], f["task_ms_p50"], f["task_ms_p99"], left_words(f, "the last ended", "of any task"), f["overhead_ms_p50"],
           f["alone_overhead_ms"], f["overhead_ms_p50"] / f["alone_overhead_ms"]))
        P("| the same: the loop's overhead per round under that load (the stream's end to the call's frame written; p50 of the tasks' medians, p99 of their maxima %d µs) vs alone | %d µs | %d µs | %.2f× | < 1 ms |" %
          (f["dispatch_us_p99"], f["dispatch_us_p50"], f["alone_dispatch_us"], f["dispatch_us_p50"] / max(f["alone_dispatch_us"], 1)))
    if ns:
        P("\nWhere an idle ns box's memory goes (%d up), by process: " % ns["n"] +
          "; ".join("%s %.0f kB PSS (%.0f kB anonymous, %.0f kB file; RSS %.0f kB)" %
                    (c, a["Pss"] / a["n"], a["Pss_Anon"] / a["n"], a["Pss_File"] / a["n"], a["Rss"] / a["n"])
                    for c, a in sorted(ns["by_comm"].items(), key=lambda x: -x[1]["Pss"])) + ".")
        P("A keeper's largest anonymous mappings (anonymous/resident kB): " +
          ", ".join("%s %d/%d" % (nm, a, rs) for a, rs, _, nm in ns["keeper_maps"] if a) + ".")
        if ns["guest_maps"]:
            P("The guest's: " + ", ".join("%s %d/%d" % (nm, a, rs) for a, rs, _, nm in ns["guest_maps"] if a) + ".")
        if ns.get("strace_reap"):
            P("The sweep with %d boxes spends its time in (strace -c, calls): " % ns["n"] +
              ", ".join("%s %d" % (nm, c) for _, c, nm in ns["strace_reap"]) + ".")
        if ns.get("slab_kb"):
            P("The slab caches that grew most, per box (/proc/slabinfo: objects × size, kB): " +
              ", ".join("%s %.0f" % (c, kb) for kb, c in ns["slab_kb"] if kb >= 1) + ".")


def left_words(part, after, whose=""):
    """What was left of a part's boxes or tasks once they were gone, in words:
    nothing, or each kind that was and how many."""
    left = {k: v for k, v in part.get("left", {}).items() if v}
    if not left:
        return "nothing%s left %.1f s after %s" % (" " + whose if whose else "", part.get("gone_after_s", 0), after)
    return "left %.1f s after %s: %s" % (part.get("gone_after_s", 0), after,
                                          ", ".join("%s %d" % (k, v) for k, v in sorted(left.items())))


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "rows":
        rows(json.load(open(sys.argv[2])))
        return
    if len(sys.argv) < 4 or sys.argv[1] not in ("run", "cleanup"):
        sys.exit(__doc__)
    s = Scale(sys.argv[2], sys.argv[3])
    if sys.argv[1] == "cleanup":
        cleanup(s)
        return
    parts = sys.argv[4:] or ["ns", "vm", "fleet"]
    # A signal ends the run through the finally below, as an error would.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *a: sys.exit("scale: stopped by a signal"))
    r = {"when": "%s UTC, load average at the start %s" % (time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
                                                          " ".join(open("/proc/loadavg").read().split()[:3]))}
    parts_run = {
        "ns": lambda: ns_scale(s, int(os.environ.get("WARD_SCALE_BOXES", "1000"))),
        "vm": lambda: vm_parts(s),
        "fleet": lambda: fleet_scale(s, int(os.environ.get("WARD_SCALE_TASKS", "50"))),
    }
    failed = False
    try:
        for part in ("ns", "vm", "fleet"):
            if part not in parts:
                continue
            # A part that fails is said and left out; the others still run,
            # and what was measured is printed whatever stops the run.
            try:
                load0 = loadavg()
                r[part] = parts_run[part]()
                for x in r[part] if isinstance(r[part], list) else [r[part]]:
                    x["load"] = "%s → %s" % (load0, loadavg())
            except Exception as e:
                log("%s: %s" % (part, e))
                failed = True
                cleanup(s)
                s = Scale(sys.argv[2], sys.argv[3])
    finally:
        r["load_after"] = loadavg()
        print(json.dumps(r, indent=1))
        sys.stdout.flush()
        cleanup(s)
    if failed:
        sys.exit(1)


def vm_parts(s):
    out = [vm_scale(s, int(os.environ.get("WARD_SCALE_VM", "100")), [], "the host's view: a hibernate keeps its files")]
    oci = os.environ.get("WARD_SCALE_VM_OCI", "build/tests/images/python.oci.tar")
    mi = int(os.environ.get("WARD_SCALE_VM_IMAGE", "100"))
    if mi and os.path.exists(oci):
        s.w("image", "import", oci)
        out.append(vm_scale(s, mi, ["--image", "ward-test/python"], "of the python image: a hibernate saves the whole machine"))
    return out


if __name__ == "__main__":
    main()
