#!/usr/bin/env python3
"""Where secrets are: every process's environment and command line, and
the memory of the processes named.

usage: secret-scan.py [--mem PID,...] HEX...

Each HEX is a secret, hex-encoded, so that this scanner's own command line
does not hold it (nor that of a shell running it). For every process but
this one, prints
  P PID PPID COMM ARGS            (the process table)
  HIT PID COMM WHERE SECRET#      (a secret found; WHERE environ or cmdline)
and for each PID of --mem, the same HIT line with WHERE mem for a secret
found anywhere in its readable memory (mappings up to 512 MiB: a
sanitizer's shadow is larger, and holds no strings), then
  MEM PID BYTES                   (how much of it was read).
Run as root to read other users' processes (the proxy runs as nobody).
"""
import os
import sys

MAP_MAX = 512 << 20


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def scan_mem(pid, needles):
    found, total = set(), 0
    maps = read("/proc/%d/maps" % pid)
    if maps is None:
        return found, -1
    try:
        mem = open("/proc/%d/mem" % pid, "rb", buffering=0)
    except OSError:
        return found, -1
    longest = max(len(n) for n in needles)
    with mem:
        for line in maps.decode(errors="replace").splitlines():
            f = line.split()
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            if f[1][0] != "r" or hi - lo > MAP_MAX or (len(f) > 5 and f[5] in ("[vvar]", "[vsyscall]")):
                continue
            tail = b""
            for off in range(lo, hi, 1 << 20):
                try:
                    mem.seek(off)
                    b = mem.read(min(1 << 20, hi - off))
                except (OSError, OverflowError, ValueError):
                    break
                total += len(b)
                chunk = tail + b
                for i, n in enumerate(needles):
                    if n in chunk:
                        found.add(i)
                tail = chunk[-longest:]
    return found, total


def main():
    args = sys.argv[1:]
    mem_pids = []
    if args[:1] == ["--mem"]:
        mem_pids = [int(p) for p in args[1].split(",") if p]
        args = args[2:]
    needles = [bytes.fromhex(h) for h in args]
    me = os.getpid()
    for d in sorted(os.listdir("/proc"), key=lambda s: (len(s), s)):
        if not d.isdigit() or int(d) == me:
            continue
        pid = int(d)
        stat = read("/proc/%d/stat" % pid)
        if not stat:
            continue
        s = stat.decode(errors="replace")
        comm = s[s.index("(") + 1:s.rindex(")")].replace(" ", "_")
        ppid = int(s[s.rindex(")") + 2:].split()[1])
        cmdline = read("/proc/%d/cmdline" % pid) or b""
        args_s = cmdline.replace(b"\0", b" ").decode(errors="replace").strip()
        print("P %d %d %s %s" % (pid, ppid, comm, args_s))
        for where, data in (("environ", read("/proc/%d/environ" % pid) or b""), ("cmdline", cmdline)):
            for i, n in enumerate(needles):
                if n in data:
                    print("HIT %d %s %s %d" % (pid, comm, where, i))
    for pid in mem_pids:
        found, total = scan_mem(pid, needles)
        comm = (read("/proc/%d/comm" % pid) or b"?").decode().strip()
        for i in sorted(found):
            print("HIT %d %s mem %d" % (pid, comm, i))
        print("MEM %d %d" % (pid, total))


main()
