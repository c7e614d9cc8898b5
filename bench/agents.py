#!/usr/bin/env python3
"""Subagents (the task tool): a child's start (its box forked from the
parent's, its base manifest read, its ward run spawned: the result's
agents[].start_ms) when the parent's workspace layer holds FILES changed
files of 4 KiB, beside `ward box create` of a box on the same workspace;
and three children that each sleep 2 s side by side (--max-subagents 3)
vs one after another (--max-subagents 1), wall time of the parent's run.
Replayed, so no model's time is in it.

usage: agents.py WARD WORKDIR RUNS FILES -> one line:
  start_ms create_ms parallel_ms serial_ms"""
import json, os, statistics, subprocess, sys, time

ward, work, runs, files = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
d = os.path.join(work, "agents")
os.makedirs(d, exist_ok=True)


def script(name, turns):
    with open(os.path.join(d, name), "w") as f:
        json.dump({"turns": turns}, f)


def bash(cmd):
    return {"tools": [{"name": "bash", "input": {"command": cmd, "timeout": 300}}]}


def task(child):
    return {"name": "task", "input": {"prompt": "go", "model": "replay:" + child}}


script("idle.json", [{"text": "nothing to do"}])
script("sleep.json", [bash("sleep 2"), {"text": "slept"}])
script("start.json", [bash("mkdir -p /workspace/src && for i in $(seq %d); do head -c 4096 /dev/urandom "
                           ">/workspace/src/f$i; done" % files), {"tools": [task("idle.json")]}, {"text": "done"}])
script("three.json", [{"tools": [task("sleep.json")] * 3}, {"text": "done"}])


def run(name, *flags):
    ws = os.path.join(d, "ws-" + name)
    os.makedirs(ws, exist_ok=True)
    t0 = time.monotonic()
    p = subprocess.run([ward, "run", "--json", "--model", "replay:" + os.path.join(d, name), "--workspace", ws, *flags,
                        "go"], capture_output=True, text=True)
    ms = (time.monotonic() - t0) * 1000
    if p.returncode:
        sys.exit("bench: ward run %s: exit %d: %s" % (name, p.returncode, p.stderr.strip()[-400:]))
    return json.loads(p.stdout.strip().splitlines()[-1]), ms


starts, creates, par, ser = [], [], [], []
for _ in range(runs):
    r, _ms = run("start.json")
    starts.append(r["agents"][0]["start_ms"])
    ws = os.path.join(d, "ws-create")
    os.makedirs(ws, exist_ok=True)
    t0 = time.monotonic()
    b = subprocess.run([ward, "box", "create", "--persistent", "--workspace", ws], capture_output=True, text=True)
    creates.append((time.monotonic() - t0) * 1000)
    subprocess.run([ward, "box", "destroy", b.stdout.strip()], capture_output=True)
    par.append(run("three.json", "--max-subagents", "3")[1])
    ser.append(run("three.json", "--max-subagents", "1")[1])
m = statistics.median
print("%.0f %.0f %.0f %.0f" % (m(starts), m(creates), m(par), m(ser)))
