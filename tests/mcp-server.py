#!/usr/bin/env python3
"""A stdio MCP server for ward's tests, whose misbehaviour is chosen.

Newline-delimited JSON-RPC 2.0 on stdin/stdout; nothing else goes to stdout
unless a mode says so. Every message received is appended to the --log
file as one JSON line (flushed at once), so a test can check what ward sent,
cancellations included.

usage: mcp-server.py [--mode M[,M...]] [--log FILE]

Tools: echo {text}, readonly_peek (readOnlyHint), delete_all, fail (isError),
image (PNG + text), structured (structuredContent only), sleep {seconds}
(cancellable), received (the methods seen so far), big {mb}, ask_sampling
(a server->client request), crash (exits 3).

Modes:
  no-init       answers nothing, initialize included; reads (and logs) forever
  garbage       3 non-JSON lines and a JSON line that is not JSON-RPC before
                each answer
  exit-mid-call the name tests use for a server that dies mid-call: calling
                the crash tool exits with code 3 at once, without an
                answer (it does so in every mode; other tools still work)
  paginate      tools/list gives 2 tools a page, with nextCursor
  list-changed  at the first tools/call, adds late_tool and sends
                notifications/tools/list_changed before the call's answer
  stderr-noise  writes to stderr all the time
  old-protocol  always answers protocolVersion 2024-11-05
"""
import argparse
import json
import os
import sys
import threading
import time

VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")
# A valid 1x1 PNG (one opaque white pixel).
PNG_1X1 = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP4"
           "//8/AAX+Av4zEpUUAAAAAElFTkSuQmCC")
OBJ = {"type": "object", "properties": {}}

TOOLS = [
    {"name": "echo", "description": "Echoes the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "readonly_peek", "description": "Looks without changing anything.",
     "inputSchema": OBJ, "annotations": {"readOnlyHint": True}},
    {"name": "delete_all", "description": "Deletes everything (says it does).", "inputSchema": OBJ},
    {"name": "fail", "description": "Always fails.", "inputSchema": OBJ},
    {"name": "image", "description": "Returns a tiny PNG and a caption.", "inputSchema": OBJ},
    {"name": "structured", "description": "Returns structured content only.", "inputSchema": OBJ,
     "outputSchema": {"type": "object", "properties": {"n": {"type": "number"}, "ok": {"type": "boolean"}},
                      "required": ["n", "ok"]}},
    {"name": "sleep", "description": "Sleeps; a cancellation stops it without an answer.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]}},
    {"name": "received", "description": "The methods of all messages received so far.", "inputSchema": OBJ},
    {"name": "big", "description": "A text of MB megabytes.",
     "inputSchema": {"type": "object", "properties": {"mb": {"type": "number"}}}},
    {"name": "ask_sampling", "description": "Asks the client for sampling/createMessage first.",
     "inputSchema": OBJ},
    {"name": "crash", "description": "Exits with code 3 at once.", "inputSchema": OBJ},
]
LATE_TOOL = {"name": "late_tool", "description": "Added after the first call.", "inputSchema": OBJ}


class Server:
    def __init__(self, modes, log):
        self.modes = modes
        self.log = log
        self.out_lock = threading.Lock()
        self.tools = list(TOOLS)
        self.methods = []           # methods of all messages received, in order
        self.cancels = {}           # request id -> Event, for calls that can be cancelled
        self.replies = {}           # id of our own request -> Event, and then the reply
        self.calls = 0

    def write(self, msg, answer=False):
        with self.out_lock:
            if answer and "garbage" in self.modes:
                sys.stdout.buffer.write(b"this is not json\n\x1b[31mnor this\x1b[0m\n{unbalanced\n"
                                        b'{"hello": "a JSON line that is not JSON-RPC"}\n')
            sys.stdout.buffer.write(json.dumps(msg).encode() + b"\n")
            sys.stdout.buffer.flush()

    def result(self, rid, res):
        self.write({"jsonrpc": "2.0", "id": rid, "result": res}, answer=True)

    def error(self, rid, code, message):
        self.write({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}, answer=True)

    def handle(self, msg):
        method = msg.get("method")
        rid = msg.get("id")
        if method is None:
            # A response to one of our own requests (ask_sampling's).
            waiter = self.replies.get(rid)
            if waiter is not None:
                self.replies[rid] = msg
                waiter.set()
            return
        if method == "notifications/cancelled":
            ev = self.cancels.get((msg.get("params") or {}).get("requestId"))
            if ev is not None:
                ev.set()
            return
        if rid is None:
            return                  # other notifications: nothing to do
        if "no-init" in self.modes:
            return
        params = msg.get("params") or {}
        if method == "initialize":
            asked = params.get("protocolVersion")
            pv = asked if asked in VERSIONS else VERSIONS[0]
            if "old-protocol" in self.modes:
                pv = "2024-11-05"
            self.result(rid, {"protocolVersion": pv, "capabilities": {"tools": {"listChanged": True}},
                              "serverInfo": {"name": "test-server", "version": "1"}})
        elif method == "ping":
            self.result(rid, {})
        elif method == "tools/list":
            self.tools_list(rid, params)
        elif method == "tools/call":
            self.tools_call(rid, params)
        else:
            self.error(rid, -32601, "Method not found: %s" % method)

    def tools_list(self, rid, params):
        if "paginate" not in self.modes:
            self.result(rid, {"tools": self.tools})
            return
        cursor = params.get("cursor") or "0"
        if not cursor.isdigit() or int(cursor) > len(self.tools):
            self.error(rid, -32602, "Invalid cursor: %r" % cursor)
            return
        at = int(cursor)
        res = {"tools": self.tools[at:at + 2]}
        if at + 2 < len(self.tools):
            res["nextCursor"] = str(at + 2)
        self.result(rid, res)

    def tools_call(self, rid, params):
        name = params.get("name")
        args = params.get("arguments") or {}
        if name == "crash":
            # os._exit: no clean-up and no answer, as a server that dies would.
            os._exit(3)
        if name not in [t["name"] for t in self.tools]:
            # Unknown tool: a protocol error, as the spec has it.
            self.error(rid, -32602, "Unknown tool: %s" % name)
            return
        self.calls += 1
        if self.calls == 1 and "list-changed" in self.modes:
            # The call changed what the server offers: it says so before
            # it answers, as a tool that enables others would.
            self.tools.append(LATE_TOOL)
            self.write({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        if name in ("sleep", "ask_sampling"):
            # In a thread: stdin must still be read, for the cancellation or
            # the client's answer.
            ev = threading.Event()
            self.cancels[rid] = ev
            fn = self.sleep if name == "sleep" else self.ask_sampling
            threading.Thread(target=fn, args=(rid, args, ev), daemon=True).start()
        else:
            self.result(rid, self.call(name, args))

    def call(self, name, args):
        def txt(s):
            return {"content": [{"type": "text", "text": s}]}
        if name == "echo":
            return txt("echo: %s" % args.get("text", ""))
        if name == "readonly_peek":
            return txt("peeked")
        if name == "delete_all":
            return txt("deleted")
        if name == "fail":
            return {"content": [{"type": "text", "text": "it failed on purpose"}], "isError": True}
        if name == "image":
            return {"content": [{"type": "image", "data": PNG_1X1, "mimeType": "image/png"},
                                {"type": "text", "text": "a 1x1 white PNG"}]}
        if name == "structured":
            return {"content": [], "structuredContent": {"n": 42, "ok": True}}
        if name == "received":
            return txt(json.dumps(self.methods))
        if name == "big":
            return txt("x" * int(float(args.get("mb", 20)) * 1024 * 1024))
        if name == "late_tool":
            return txt("late")
        return txt("?")

    def sleep(self, rid, args, cancelled):
        secs = args.get("seconds", 1)
        # Cancelled: no answer at all, as the spec says a receiver should do.
        if not cancelled.wait(float(secs)):
            self.result(rid, {"content": [{"type": "text", "text": "slept %s" % secs}]})
        self.cancels.pop(rid, None)

    def ask_sampling(self, rid, args, cancelled):
        got = threading.Event()
        self.replies["s1"] = got
        self.write({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage",
                    "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "say hi"}}],
                               "maxTokens": 10}})
        if got.wait(5):
            r = self.replies.get("s1")
            if isinstance(r, dict) and "error" in r:
                e = r["error"] or {}
                s = "sampling answered: error %s %s" % (e.get("code"), e.get("message"))
            else:
                s = "sampling answered: result %s" % json.dumps(r.get("result") if isinstance(r, dict) else r)
        else:
            s = "sampling: no answer"
        self.replies.pop("s1", None)
        if not cancelled.is_set():
            self.result(rid, {"content": [{"type": "text", "text": s}]})
        self.cancels.pop(rid, None)


def noise():
    # A server that chatters on stderr: the client must drain it (or send it
    # somewhere) and never mistake it for protocol.
    n = 0
    while True:
        n += 1
        try:
            sys.stderr.write("noise %d: some diagnostic a server prints to stderr\n" % n)
            sys.stderr.flush()
        except OSError:
            return
        time.sleep(0.02)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="")
    ap.add_argument("--log")
    a = ap.parse_args()
    modes = set(m for m in a.mode.split(",") if m)
    known = {"no-init", "garbage", "exit-mid-call", "paginate", "list-changed", "stderr-noise", "old-protocol"}
    if modes - known:
        ap.error("unknown mode(s): %s" % ", ".join(sorted(modes - known)))
    log = open(a.log, "a") if a.log else None
    srv = Server(modes, log)
    if "stderr-noise" in modes:
        threading.Thread(target=noise, daemon=True).start()
    for line in sys.stdin.buffer:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            msg = None
        if log:
            log.write((json.dumps(msg) if isinstance(msg, dict) else
                       json.dumps({"unparsed": line.decode("utf-8", "replace")})) + "\n")
            log.flush()
        if not isinstance(msg, dict):
            if "no-init" not in modes:
                srv.error(None, -32700, "Parse error")
            continue
        if msg.get("method"):
            srv.methods.append(msg["method"])
        srv.handle(msg)
    # stdin closed: the client is gone. os._exit, not a return: the noise
    # thread may sit blocked in a write to a stderr nobody reads, holding the
    # lock that the interpreter's exit would wait on to flush it.
    if log:
        log.close()
    os._exit(0)


if __name__ == "__main__":
    main()
