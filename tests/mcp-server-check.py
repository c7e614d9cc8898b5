#!/usr/bin/env python3
"""Checks tests/mcp-server.py by hand (not part of the suite): drives it over
a pipe in each mode and prints TAP. A fixture that is wrong would make the
MCP tests blame ward for its faults.

usage: python3 tests/mcp-server-check.py
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mcp-server.py")
N = 0
FAILED = 0


def ok(cond, desc, got=None):
    global N, FAILED
    N += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", N, desc))
    if not cond:
        FAILED += 1
        print("#   got: %s" % str(got)[:300])


class Client:
    def __init__(self, mode="", stderr=subprocess.DEVNULL):
        self.log = tempfile.NamedTemporaryFile(prefix="mcp-log.", delete=False).name
        args = [sys.executable, SERVER, "--log", self.log] + (["--mode", mode] if mode else [])
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, bufsize=0)
        self.lines = []
        self.cv = threading.Condition()
        threading.Thread(target=self.reader, daemon=True).start()

    def reader(self):
        for raw in self.p.stdout:
            with self.cv:
                self.lines.append(raw.decode().rstrip("\n"))
                self.cv.notify_all()

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def wait_for(self, pred, timeout=5):
        """The first line read so far (or within timeout) that is JSON and pred holds for."""
        end = time.monotonic() + timeout
        with self.cv:
            while True:
                for line in self.lines:
                    try:
                        m = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(m, dict) and pred(m):
                        return m
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self.cv.wait(left)

    def req(self, rid, method, params=None, timeout=5):
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
        return self.wait_for(lambda m: m.get("id") == rid and "method" not in m, timeout)

    def call(self, rid, name, args=None, timeout=5):
        return self.req(rid, "tools/call", {"name": name, "arguments": args or {}}, timeout)

    def init(self, pv="2025-06-18"):
        r = self.req(0, "initialize", {"protocolVersion": pv, "capabilities": {},
                                        "clientInfo": {"name": "check", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r

    def logged(self):
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def close(self):
        self.p.stdin.close()
        try:
            rc = self.p.wait(5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = "hung"
        os.unlink(self.log)
        return rc


def text(r):
    return "".join(c.get("text", "") for c in r["result"]["content"] if c["type"] == "text")


def main():
    c = Client()
    r = c.init()
    ok(r["result"]["protocolVersion"] == "2025-06-18" and r["result"]["serverInfo"]["name"] == "test-server",
       "initialize answers 2025-06-18", r)
    ok(c.req(1, "ping")["result"] == {}, "ping")
    tools = c.req(2, "tools/list")["result"]
    names = [t["name"] for t in tools["tools"]]
    ok("nextCursor" not in tools and {"echo", "readonly_peek", "delete_all", "sleep", "crash"} <= set(names),
       "tools/list, one page", names)
    ro = [t["name"] for t in tools["tools"] if (t.get("annotations") or {}).get("readOnlyHint")]
    ok(ro == ["readonly_peek"], "only readonly_peek is readOnlyHint", ro)
    ok(text(c.call(3, "echo", {"text": "hi"})) == "echo: hi", "echo")
    r = c.call(4, "fail")["result"]
    ok(r.get("isError") is True and r["content"][0]["text"] == "it failed on purpose", "fail: isError", r)
    r = c.call(5, "image")["result"]["content"]
    ok(r[0]["type"] == "image" and r[0]["mimeType"] == "image/png" and r[1]["type"] == "text", "image", r)
    r = c.call(6, "structured")["result"]
    ok(r["structuredContent"] == {"n": 42, "ok": True} and not r["content"], "structured", r)
    ok(len(text(c.call(7, "big", {"mb": 2}))) == 2 * 1024 * 1024, "big 2 MB")
    r = c.req(8, "nosuch/method")
    ok(r["error"]["code"] == -32601, "unknown method: -32601", r)
    r = c.call(9, "nosuch")
    ok("error" in r, "unknown tool: an error", r)
    # sleep: answers late, ping answered meanwhile (stdin read while sleeping)
    c.send({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "sleep", "arguments": {"seconds": 1}}})
    t = time.monotonic()
    ok(c.req(11, "ping", timeout=0.5) is not None, "ping answered while sleep runs")
    r = c.wait_for(lambda m: m.get("id") == 10)
    ok(r and text(r) == "slept 1" and time.monotonic() - t > 0.8, "sleep answers 'slept 1'", r)
    # cancelled sleep: no answer ever, cancellation logged and in received
    c.send({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "sleep", "arguments": {"seconds": 1}}})
    c.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 12, "reason": "test"}})
    ok(c.wait_for(lambda m: m.get("id") == 12, 1.8) is None, "cancelled sleep never answers")
    got = json.loads(text(c.call(13, "received")))
    ok("notifications/cancelled" in got and got[0] == "initialize" and got[-1] == "tools/call", "received", got)
    ok(any(m.get("method") == "notifications/cancelled" and m["params"]["requestId"] == 12 for m in c.logged()),
       "cancellation in the log")
    # ask_sampling: the client answers with an error, then with a result, then not at all
    c.send({"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": {"name": "ask_sampling", "arguments": {}}})
    s = c.wait_for(lambda m: m.get("method") == "sampling/createMessage")
    ok(s and s["id"] == "s1", "ask_sampling sends a request s1", s)
    c.send({"jsonrpc": "2.0", "id": "s1", "error": {"code": -32601, "message": "Method not found"}})
    r = c.wait_for(lambda m: m.get("id") == 14)
    ok(r and text(r) == "sampling answered: error -32601 Method not found", "sampling error reported", r)
    with c.cv:
        c.lines.clear()
    c.send({"jsonrpc": "2.0", "id": 15, "method": "tools/call", "params": {"name": "ask_sampling", "arguments": {}}})
    c.wait_for(lambda m: m.get("method") == "sampling/createMessage")
    c.send({"jsonrpc": "2.0", "id": "s1", "result": {"role": "assistant", "content": {"type": "text", "text": "hi"}}})
    r = c.wait_for(lambda m: m.get("id") == 15)
    ok(r and text(r).startswith("sampling answered: result {"), "sampling result reported", r)
    r = c.call(16, "ask_sampling", timeout=7)
    ok(r and text(r) == "sampling: no answer", "sampling unanswered: bounded", r)
    c.send({"jsonrpc": "2.0", "id": 17, "method": "tools/call", "params": {"name": "crash", "arguments": {}}})
    ok(c.p.wait(5) == 3, "crash exits 3")
    c.close()

    for pv, want, mode in (("2025-03-26", "2025-03-26", ""), ("2024-11-05", "2024-11-05", ""),
                           ("1999-01-01", "2025-06-18", ""), ("2025-06-18", "2024-11-05", "old-protocol")):
        c = Client(mode)
        got = c.init(pv)["result"]["protocolVersion"]
        ok(got == want, "asked %s (%s): answers %s" % (pv, mode or "default", want), got)
        ok(c.close() == 0, "exits 0 when stdin closes")

    c = Client("no-init")
    ok(c.init() is None and c.p.poll() is None, "no-init: no answer, still running")
    ok(c.logged()[0]["method"] == "initialize", "no-init: initialize logged")
    c.close()

    c = Client("garbage")
    r = c.init()
    ok(r is not None, "garbage: the answer still comes")
    with c.cv:
        junk = [ln for ln in c.lines if not ln.startswith('{"jsonrpc"')]
    ok(len(junk) == 4 and json.loads(junk[3]) and "jsonrpc" not in json.loads(junk[3]), "garbage: 4 junk lines", junk)
    c.close()

    c = Client("paginate")
    c.init()
    names, cursor, pages = [], None, 0
    while True:
        r = c.req(100 + pages, "tools/list", {"cursor": cursor} if cursor else {})["result"]
        pages += 1
        ok(len(r["tools"]) <= 2, "paginate: page %d has %d tools" % (pages, len(r["tools"])))
        names += [t["name"] for t in r["tools"]]
        cursor = r.get("nextCursor")
        if not cursor or pages > 20:
            break
    ok(len(names) == len(set(names)) == 11, "paginate: all 11 tools in %d pages" % pages, names)
    ok("error" in c.req(200, "tools/list", {"cursor": "bogus"}), "paginate: a bad cursor is an error")
    c.close()

    c = Client("list-changed")
    c.init()
    ok("late_tool" not in str(c.req(1, "tools/list")), "list-changed: no late_tool at first")
    c.call(2, "echo", {"text": "x"})
    ok(c.wait_for(lambda m: m.get("method") == "notifications/tools/list_changed") is not None,
       "list-changed: notification after the first call")
    ok("late_tool" in str(c.req(3, "tools/list")) and text(c.call(4, "late_tool")) == "late", "list-changed: late_tool")
    c.close()

    c = Client("stderr-noise,old-protocol", stderr=subprocess.PIPE)
    time.sleep(0.2)
    ok(c.init()["result"]["protocolVersion"] == "2024-11-05", "two modes at once")
    ok(c.p.stderr.readline().startswith(b"noise"), "stderr-noise: writes to stderr")
    c.close()

    print("1..%d" % N)
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
