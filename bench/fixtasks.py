"""The fleet rows' tasks: the demo's recorded model fixing a failing test
(examples/fix-test), each task in a workspace of its own under FL, one
line each in the task file f (bench/fleet.py, bench/scale.py)."""
import json, os, shutil

EX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "fix-test")


def write(fl, n, f):
    """Lines t0..t(n-1) into f; the recorded model at FL/fix.json."""
    shutil.copy(os.path.join(EX, "replay.json"), os.path.join(fl, "fix.json"))
    for i in range(n):
        ws = os.path.join(fl, "ws", "t%d" % i)
        os.makedirs(ws)
        for name in ("calc.py", "test_calc.py"):
            shutil.copy(os.path.join(EX, name), ws)
        f.write(json.dumps({"id": "t%d" % i, "task": "make the tests pass", "workspace": ws,
                            "model": "replay:" + os.path.join(fl, "fix.json")}) + "\n")
