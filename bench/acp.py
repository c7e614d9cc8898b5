#!/usr/bin/env python3
"""ward acp, per prompt, with the fake LLM server, beside ward run:

- the stream's first byte (the server's clock, CLOCK_MONOTONIC) to the
  first session/update read from ward acp's stdout, beside the same byte
  to ward run --json's first text event: the loop's overhead through ACP
  against ward run's;
- session/cancel during a running call (bash sleep) to the session/prompt
  response read.

The editor's side is raw JSON-RPC lines over pipes (no client library:
the bench needs only python3).

usage: acp.py WARD WORKDIR N -> one line: acp_first_us run_first_us
       cancel_ms (medians of N) acp_first_min_us run_first_min_us"""
import json, os, select, statistics, subprocess, sys, time

ward, work, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
here = os.path.dirname(os.path.abspath(__file__))
ws = os.path.join(work, "acpws")
os.makedirs(ws, exist_ok=True)
first = os.path.join(work, "acp-first-byte")
port = os.path.join(work, "acp-port")
for f in (first, port):
    if os.path.exists(f):
        os.unlink(f)
env = dict(os.environ, XDG_STATE_HOME=os.path.join(work, "acp-state"), ANTHROPIC_API_KEY="sk-bench",
           XDG_CONFIG_HOME=os.path.join(work, "cfg-none"))
srv = subprocess.Popen(["python3", os.path.join(here, "..", "tests", "fake-llm.py"), "--scenario", "acp-bench",
                        "--port-file", port, "--log", os.path.join(work, "acp-fake.log"), "--first-byte", first])
for _ in range(100):
    if os.path.exists(port):
        break
    time.sleep(0.05)
url = "http://127.0.0.1:" + open(port).read()


def last_first_byte():
    return int(open(first).read().split()[-1])


class Conn:
    def __init__(self):
        self.p = subprocess.Popen([ward, "acp", "--approve", "auto", "--base-url", url, "--model", "fake"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.buf = b""
        self.id = 0

    def send(self, method, params, notify=False):
        m = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            self.id += 1
            m["id"] = self.id
        self.p.stdin.write((json.dumps(m) + "\n").encode())
        self.p.stdin.flush()
        return self.id

    def read(self, timeout=60):
        """The next message, and when its line was read (ns)."""
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            r, _, _ = select.select([self.p.stdout], [], [], max(0, end - time.monotonic()))
            if not r:
                raise SystemExit("bench/acp.py: ward acp said nothing for %d s" % timeout)
            d = os.read(self.p.stdout.fileno(), 65536)
            if not d:
                raise SystemExit("bench/acp.py: ward acp closed its stdout")
            self.buf += d
        t = time.monotonic_ns()
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line), t

    def answer(self, id):
        while True:
            m, t = self.read()
            if m.get("id") == id and "method" not in m:
                if "error" in m:
                    raise SystemExit("bench/acp.py: %s" % m["error"]["message"])
                return m["result"], t

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


c = Conn()
c.answer(c.send("initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
sid = c.answer(c.send("session/new", {"cwd": ws, "mcpServers": []}))[0]["sessionId"]
acp_first, cancel = [], []
for i in range(n + 1):
    rid = c.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi %d" % i}]})
    while True:
        m, t = c.read()
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk":
            break
    if i:  # the first prompt warms the box and the connection
        acp_first.append((t - last_first_byte()) / 1000)
    c.answer(rid)
for i in range(n):
    rid = c.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "sleep %d" % i}]})
    while True:
        m, _ = c.read()
        u = m.get("params", {}).get("update", {}) if m.get("method") == "session/update" else {}
        if u.get("sessionUpdate") == "tool_call_update" and u.get("status") == "in_progress":
            break
    time.sleep(0.2)  # the sleep runs in the box
    t0 = time.monotonic_ns()
    c.send("session/cancel", {"sessionId": sid}, notify=True)
    res, t = c.answer(rid)
    assert res["stopReason"] == "cancelled", res
    cancel.append((t - t0) / 1e6)
c.close()

run_first = []
for i in range(n + 1):
    p = subprocess.Popen([ward, "run", "--json", "--base-url", url, "--model", "fake", "--workspace", ws, "hi"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    t = None
    for line in p.stdout:
        if json.loads(line).get("type") == "text":
            t = time.monotonic_ns()
            break
    p.stdout.read()
    p.wait()
    if i and t:
        run_first.append((t - last_first_byte()) / 1000)
srv.kill()
srv.wait()
print(int(statistics.median(acp_first)), int(statistics.median(run_first)), round(statistics.median(cancel), 1),
      int(min(acp_first)), int(min(run_first)))
