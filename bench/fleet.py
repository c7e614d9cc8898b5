#!/usr/bin/env python3
"""A fleet on one machine: N replay tasks (the demo's recorded model fixing
a failing test, each in a workspace of its own) through `parallel -j 2`
against the same tasks one after another, side by side in one run; and
ward's own overhead per task: a task whose model answers at once (no tool
call: start, box, result, teardown and nothing else) beside a whole task.

The machine's own ceiling beside it: N runs of a task-sized CPU-bound
process (python3 running calc.py's tests, as a task does twice) the same two
ways, so that ward's speed-up reads against what two cores give here.

usage: fleet.py WARD WORKDIR N -> one line: serial_s parallel_s
       tasks_per_min_serial tasks_per_min_parallel overhead_ms task_ms
       control_speedup"""
import json, os, shutil, statistics, subprocess, sys, time
import fixtasks

ward, work, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
fl = os.path.join(work, "fleet")
shutil.rmtree(fl, ignore_errors=True)
os.makedirs(fl)
json.dump({"turns": [{"text": "Nothing to do."}]}, open(os.path.join(fl, "idle.json"), "w"))
with open(os.path.join(fl, "tasks.jsonl"), "w") as f:
    fixtasks.write(fl, n, f)
    f.write(json.dumps({"id": "idle", "task": "nothing", "workspace": os.path.join(fl, "ws", "t0"),
                        "model": "replay:" + os.path.join(fl, "idle.json")}) + "\n")
env = dict(os.environ, XDG_STATE_HOME=os.path.join(work, "state-fleet"), XDG_CONFIG_HOME=os.path.join(work, "cfg-none"))


def one(i, out):
    return subprocess.run([ward, "run", "--task-file", os.path.join(fl, "tasks.jsonl"), "--task-index", str(i),
                           "--out", out], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode


def done(out):
    return sum(1 for i in range(n) if os.path.exists(os.path.join(out, "t%d" % i, "result.json")))


t0 = time.monotonic()
for i in range(n):
    one(i, os.path.join(fl, "serial"))
serial = time.monotonic() - t0
assert done(os.path.join(fl, "serial")) == n
t0 = time.monotonic()
subprocess.run("seq 0 %d | parallel --will-cite -j 2 %s run --task-file %s --task-index {} --out %s" %
               (n - 1, ward, os.path.join(fl, "tasks.jsonl"), os.path.join(fl, "par")),
               shell=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
par = time.monotonic() - t0
assert done(os.path.join(fl, "par")) == n
# Overhead: the idle task (index n) against a whole task, 5 each, alone.
idle, whole = [], []
for k in range(5):
    t0 = time.monotonic()
    one(n, os.path.join(fl, "idle%d" % k))
    idle.append((time.monotonic() - t0) * 1000)
    t0 = time.monotonic()
    one(0, os.path.join(fl, "whole%d" % k))
    whole.append((time.monotonic() - t0) * 1000)
# The control: the same count of python3 test runs, one by one and -j 2.
ctl = "cd %s && python3 -m unittest -q >/dev/null 2>&1" % os.path.join(fl, "ws", "t0")
t0 = time.monotonic()
for i in range(n):
    subprocess.run(ctl, shell=True)
cser = time.monotonic() - t0
t0 = time.monotonic()
subprocess.run("seq %d | parallel --will-cite -j 2 '%s'" % (n, ctl), shell=True)
cpar = time.monotonic() - t0
print("%.1f %.1f %.1f %.1f %.0f %.0f %.2f" % (serial, par, n / serial * 60, n / par * 60, statistics.median(idle),
                                            statistics.median(whole), cser / cpar))
