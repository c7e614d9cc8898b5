#!/usr/bin/env python3
"""MCP and hooks, per call: ward run with the fake LLM server, the same
number of rounds each way, side by side in one run.

- dispatch: the stream's last byte to the call's frame written to the box
  (ward's own dispatch_us_median) for an MCP tool (the tools/call line on
  the server's stdin) and for bash (the CALL frame);
- the same server over streamable HTTP (on loopback, reached through the
  box's egress proxy): the wall time of a round beside stdio's;
- a PreToolUse hook's added wall time per call: rounds with a hook that
  reads its input and exits 0, against the same rounds without.

usage: mcp.py WARD WORKDIR ROUNDS -> one line: mcp_disp_us bash_disp_us
       mcp_round_ms bash_round_ms hook_ms_per_call nohook_round_ms
       http_round_ms"""
import json, os, statistics, subprocess, sys, time

ward, work, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
here = os.path.dirname(os.path.abspath(__file__))
ws = os.path.join(work, "mcpws")
os.makedirs(ws, exist_ok=True)
subprocess.run(["cp", os.path.join(here, "..", "tests", "mcp-server.py"), os.path.join(ws, "srv.py")], check=True)
conf = os.path.join(work, "mcp.json")
json.dump({"mcpServers": {"t": {"command": "python3", "args": ["/workspace/srv.py"]}}}, open(conf, "w"))
hport = os.path.join(work, "hport")
if os.path.exists(hport):
    os.unlink(hport)
hsrv = subprocess.Popen(["python3", os.path.join(here, "..", "tests", "mcp-server.py"), "--http", "0",
                         "--port-file", hport], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(100):
    if os.path.exists(hport):
        break
    time.sleep(0.05)
hp = open(hport).read().strip()
confh = os.path.join(work, "mcp-http.json")
json.dump({"mcpServers": {"h": {"type": "http", "url": "http://127.0.0.1:%s/mcp" % hp}}}, open(confh, "w"))
cfgdir = os.path.join(work, "cfg-hook")
os.makedirs(os.path.join(cfgdir, "ward"), exist_ok=True)
hook = os.path.join(work, "hook.sh")
open(hook, "w").write("#!/bin/sh\ncat >/dev/null\nexit 0\n")
os.chmod(hook, 0o755)
json.dump({"hooks": {"PreToolUse": [{"matcher": "bash", "hooks": [{"type": "command", "command": hook}]}]}},
          open(os.path.join(cfgdir, "ward", "config.json"), "w"))


def one(tool, inp, extra, cfg=None):
    env = dict(os.environ, XDG_STATE_HOME=os.path.join(work, "state"), ANTHROPIC_API_KEY="sk-bench",
               FAKE_TOOL=tool, FAKE_INPUT=json.dumps(inp), FAKE_ROUNDS=str(rounds),
               XDG_CONFIG_HOME=cfg or os.path.join(work, "cfg-none"))
    port = os.path.join(work, "port")
    if os.path.exists(port):
        os.unlink(port)
    srv = subprocess.Popen(["python3", os.path.join(here, "..", "tests", "fake-llm.py"), "--scenario", "mcp-repeat",
                            "--port-file", port, "--log", os.path.join(work, "fake.log")], env=env)
    for _ in range(100):
        if os.path.exists(port):
            break
        time.sleep(0.05)
    url = "http://127.0.0.1:" + open(port).read()
    t0 = time.monotonic()
    p = subprocess.run([ward, "run", "--json", "--base-url", url, "--model", "fake", "--workspace", ws,
                        "--max-rounds", str(rounds + 1)] + extra + ["go"], capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    srv.kill()
    srv.wait()
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["calls"] == rounds, (tool, r)
    return r["dispatch_us_median"], wall * 1000 / rounds


mcp, bash, hooked, plain, http = [], [], [], [], []
for _ in range(3):
    mcp.append(one("mcp__t__echo", {"text": "x"}, ["--mcp-config", conf]))
    http.append(one("mcp__h__echo", {"text": "x"}, ["--mcp-config", confh, "--allow-host", "127.0.0.1:" + hp]))
    bash.append(one("bash", {"command": "true"}, []))
    hooked.append(one("bash", {"command": "true"}, [], cfgdir))
    plain.append(one("bash", {"command": "true"}, []))
# The input a PreToolUse hook gets, in size and shape.
event = json.dumps({"session_id": "20261202-000000-000000", "transcript_path": os.path.join(work, "state", "x.jsonl"),
                    "cwd": ws, "hook_event_name": "PreToolUse", "tool_name": "bash",
                    "tool_input": {"command": "true"}, "tool_use_id": "toolu_0123456789"})
spawn = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(ward))), "bench", "bench-spawn")
floor = int(subprocess.run([spawn, str(rounds * 3), event, hook], capture_output=True, text=True, check=True).stdout)
med = lambda xs, i: statistics.median(x[i] for x in xs)
print(med(mcp, 0), med(bash, 0), round(med(mcp, 1), 2), round(med(bash, 1), 2),
      round(med(hooked, 1) - med(plain, 1), 2), round(med(plain, 1), 2), round(med(http, 1), 2), round(floor / 1000, 2))
hsrv.kill()
hsrv.wait()
