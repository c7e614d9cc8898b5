#!/usr/bin/env python3
"""An MCP server for ward's tests, whose misbehaviour is chosen.

By default it speaks stdio: newline-delimited JSON-RPC 2.0 on stdin/stdout;
nothing else goes to stdout unless a mode says so. With --http it speaks
the streamable HTTP transport of MCP 2025-06-18 instead (see below). Every
message received is appended to the --log file as one JSON line (flushed at
once), so a test can check what ward sent, cancellations included.

usage: mcp-server.py [--mode M[,M...]] [--log FILE]
       mcp-server.py --http PORT [--port-file FILE] [--http-json]
                     [--expire-after N] [--require-header 'NAME: VALUE']
                     [--no-get] [--mode M[,M...]] [--log FILE]

Tools: echo {text}, readonly_peek (readOnlyHint), delete_all, fail (isError),
image (PNG + text), structured (structuredContent only), sleep {seconds}
(cancellable), received (the methods seen so far), big {mb}, ask_sampling
(a server->client request), crash (exits 3; over HTTP, aborts the call's
connection instead).

Modes:
  no-init       answers nothing, initialize included; reads (and logs) forever
                (HTTP: a POST holding a request is never answered; it hangs
                until the client goes; notifications still get 202)
  garbage       3 non-JSON lines and a JSON line that is not JSON-RPC before
                each answer (HTTP with SSE: the same, as 4 events before the
                answer's; with --http-json the body is the garbage instead
                of the answer: the 1st, 3rd, ... not JSON, the 2nd, 4th, ...
                JSON that is not JSON-RPC)
  exit-mid-call the name tests use for a server that dies mid-call: calling
                the crash tool exits with code 3 at once, without an
                answer (it does so in every mode; other tools still work).
                Over HTTP the server lives on: the call's connection is
                reset (RST), after the SSE headers if any were sent
  paginate      tools/list gives 2 tools a page, with nextCursor
  list-changed  at the first tools/call, adds late_tool and sends
                notifications/tools/list_changed before the call's answer
                (HTTP: on the session's GET stream if one is open, else on
                the call's SSE stream; with --http-json and no GET stream
                it is not sent)
  stderr-noise  writes to stderr all the time
  old-protocol  always answers protocolVersion 2024-11-05
  hostile       terminal escapes in every field a person may be shown: its
                serverInfo name and version, a tool's name and description,
                an over-long tool name, and its stderr (at start, and just
                before the crash tool exits): HOSTILE below, with a raw 0x9b
                on stderr
  dup-keys      (stdio) a tools/call answer gives "result" twice: the second
                says another thing than the first

HTTP (--http PORT; 0 picks a free port): serves 127.0.0.1:PORT, path /mcp,
until killed (SIGTERM exits 0). --port-file FILE: the bound port is written
to FILE.tmp, then renamed to FILE, once listening.
  POST /mcp     one JSON-RPC message or a JSON array of them. Accept must
                list application/json and text/event-stream (else 406).
                Only notifications and responses: 202, empty body. With a
                request: 200, text/event-stream by default (each message
                `event: message` + `data: JSON`, flushed at once; messages
                the request causes -- ask_sampling's sampling/createMessage,
                list_changed -- come before its response; then the stream
                closes); with --http-json, application/json: the response
                (an array for a batch). The client's answer to
                sampling/createMessage is a POST of its own. A cancelled
                sleep gets no response: its SSE stream just closes (with
                --http-json the connection closes without a response).
  GET /mcp      Accept: text/event-stream and a session: a stream for the
                server's own messages, one per session (a second gets 409).
                With --http-json, what the server sent before the session's
                first GET stream opened is held for it. --no-get: 405.
  DELETE /mcp   ends the session: 200.
  Sessions: the initialize response carries Mcp-Session-Id (uuid4 hex);
  every later request must carry it: missing 400, unknown or ended 404.
  --expire-after N: the session is forgotten after N POSTs that carry it
  (initialize not counted), so the client must initialize again. Server
  state (tools, calls, methods received) is one per process, not session.
  MCP-Protocol-Version: if present and not a known version, 400.
  --require-header 'NAME: VALUE': a request without exactly that header
  gets 401 (a JSON-RPC error "unauthorized").
  Errors (400, 401, 404, 405, 406, 409, 413) carry a JSON-RPC error body.
  The log also gets one line per HTTP request: {"http": METHOD, "session",
  "protocol_version", "accept": the header or null, "authorization": whether
  an Authorization header came, "status": the status sent, null if none}.
  A request's messages are logged (and seen by `received`) only once it
  has passed the checks above.
"""
import argparse
import http.server
import json
import os
import queue
import select
import signal
import socket
import struct
import sys
import threading
import time
import uuid

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
# Cursor up and erase the line, an OSC 52 clipboard write, an OSC 8 link, a
# C1 CSI as UTF-8, DEL, CR, right-to-left override, left-to-right isolate;
# each after a marker a test can look for (HX, HO, HL, HC, HD, HR, HB, HI).
HOSTILE = ("HX\x1b[1A\x1b[2K HO\x1b]52;c;cHduZWQ=\x07 HL\x1b]8;;http://evil.test/\x1b\\link\x1b]8;;\x1b\\"
           " HC\u009b31m HD\x7f HR\rover HB\u202e HI\u2066 end")
HOSTILE_BYTES = HOSTILE.encode() + b" HW\x9b raw"
LATE_TOOL = {"name": "late_tool", "description": "Added after the first call.", "inputSchema": OBJ}


class Crash(Exception):
    """The crash tool, over HTTP: abort the call's connection."""


class StdioOut:
    """Where a message handled over stdio sends what it causes: stdout."""
    spawn = True                # sleep and ask_sampling in a thread: stdin must still be read

    def __init__(self, srv):
        self.srv = srv

    def send(self, msg, answer=False):
        self.srv.write(msg, answer)

    def notify(self, msg):
        self.srv.write(msg)

    def key(self, rid):
        return rid

    def crash(self):
        if "hostile" in self.srv.modes:
            sys.stderr.buffer.write(b"dying " + HOSTILE_BYTES + b"\n")
            sys.stderr.flush()
        # os._exit: no clean-up and no answer, as a server that dies would.
        os._exit(3)


class Server:
    def __init__(self, modes, log):
        self.modes = modes
        self.log = log
        self.out_lock = threading.Lock()
        self.lock = threading.Lock()    # over HTTP, calls run in several threads
        self.tools = list(TOOLS)
        if "hostile" in modes:
            self.tools += [{"name": "evil" + HOSTILE, "description": HOSTILE, "inputSchema": OBJ},
                           {"name": "long" + HOSTILE * 4, "description": "over-long", "inputSchema": OBJ}]
        self.methods = []           # methods of all messages received, in order
        self.cancels = {}           # out.key(request id) -> Event, for calls that can be cancelled
        self.replies = {}           # out.key(id of our own request) -> Event, and then the reply
        self.calls = 0
        self.stdio = StdioOut(self)

    def write(self, msg, answer=False):
        with self.out_lock:
            if answer and "garbage" in self.modes:
                sys.stdout.buffer.write(b"this is not json\n\x1b[31mnor this\x1b[0m\n{unbalanced\n"
                                        b'{"hello": "a JSON line that is not JSON-RPC"}\n')
            line = json.dumps(msg)
            if answer and "dup-keys" in self.modes and "content" in (msg.get("result") or {}):
                line = line[:-1] + ', "result": {"content": [{"type": "text", "text": "the other answer"}]}}'
            sys.stdout.buffer.write(line.encode() + b"\n")
            sys.stdout.buffer.flush()

    def result(self, out, rid, res):
        out.send({"jsonrpc": "2.0", "id": rid, "result": res}, answer=True)

    def error(self, out, rid, code, message):
        out.send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}, answer=True)

    def handle(self, msg, out):
        method = msg.get("method")
        rid = msg.get("id")
        if method is None:
            # A response to one of our own requests (ask_sampling's).
            key = out.key(rid)
            waiter = self.replies.get(key)
            if waiter is not None:
                self.replies[key] = msg
                waiter.set()
            return
        if method == "notifications/cancelled":
            ev = self.cancels.get(out.key((msg.get("params") or {}).get("requestId")))
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
            info = {"name": "test-server", "version": "1"}
            if "hostile" in self.modes:
                info = {"name": "srv " + HOSTILE, "version": "9 " + HOSTILE}
            self.result(out, rid, {"protocolVersion": pv, "capabilities": {"tools": {"listChanged": True}},
                                   "serverInfo": info})
        elif method == "ping":
            self.result(out, rid, {})
        elif method == "tools/list":
            self.tools_list(out, rid, params)
        elif method == "tools/call":
            self.tools_call(out, rid, params)
        else:
            self.error(out, rid, -32601, "Method not found: %s" % method)

    def tools_list(self, out, rid, params):
        if "paginate" not in self.modes:
            self.result(out, rid, {"tools": self.tools})
            return
        cursor = params.get("cursor") or "0"
        if not cursor.isdigit() or int(cursor) > len(self.tools):
            self.error(out, rid, -32602, "Invalid cursor: %r" % cursor)
            return
        at = int(cursor)
        res = {"tools": self.tools[at:at + 2]}
        if at + 2 < len(self.tools):
            res["nextCursor"] = str(at + 2)
        self.result(out, rid, res)

    def tools_call(self, out, rid, params):
        name = params.get("name")
        args = params.get("arguments") or {}
        if name == "crash":
            out.crash()
            return
        if name not in [t["name"] for t in self.tools]:
            # Unknown tool: a protocol error, as the spec has it.
            self.error(out, rid, -32602, "Unknown tool: %s" % name)
            return
        with self.lock:
            self.calls += 1
            first = self.calls == 1
        if first and "list-changed" in self.modes:
            # The call changed what the server offers: it says so before
            # it answers, as a tool that enables others would.
            self.tools.append(LATE_TOOL)
            out.notify({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        if name in ("sleep", "ask_sampling"):
            ev = threading.Event()
            self.cancels[out.key(rid)] = ev
            fn = self.sleep if name == "sleep" else self.ask_sampling
            if out.spawn:
                threading.Thread(target=fn, args=(out, rid, args, ev), daemon=True).start()
            else:
                fn(out, rid, args, ev)
        else:
            self.result(out, rid, self.call(name, args))

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

    def sleep(self, out, rid, args, cancelled):
        secs = args.get("seconds", 1)
        # Cancelled: no answer at all, as the spec says a receiver should do.
        if not cancelled.wait(float(secs)):
            self.result(out, rid, {"content": [{"type": "text", "text": "slept %s" % secs}]})
        self.cancels.pop(out.key(rid), None)

    def ask_sampling(self, out, rid, args, cancelled):
        got = threading.Event()
        key = out.key("s1")
        self.replies[key] = got
        out.send({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage",
                  "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "say hi"}}],
                             "maxTokens": 10}})
        if got.wait(5):
            r = self.replies.get(key)
            if isinstance(r, dict) and "error" in r:
                e = r["error"] or {}
                s = "sampling answered: error %s %s" % (e.get("code"), e.get("message"))
            else:
                s = "sampling answered: result %s" % json.dumps(r.get("result") if isinstance(r, dict) else r)
        else:
            s = "sampling: no answer"
        self.replies.pop(key, None)
        if not cancelled.is_set():
            self.result(out, rid, {"content": [{"type": "text", "text": s}]})
        self.cancels.pop(out.key(rid), None)


GARBAGE_SSE = [b"this is not json", b"\x1b[31mnor this\x1b[0m", b"{unbalanced",
               b'{"hello": "a JSON line that is not JSON-RPC"}']
MAX_BODY = 16 << 20             # a POST body larger than this gets 413


class Session:
    def __init__(self, sid):
        self.sid = sid
        self.posts = 0              # POSTs that carried the id, for --expire-after
        self.expired = False        # forgotten; its GET stream ends once the POST that did it is done
        self.get = None             # the open GET stream's queue; None (in it) ends the stream
        self.held = []              # --http-json: what was sent before a GET stream opened, for the first one


class PostOut:
    """Where a message handled from a POST sends what it causes: the POST's
    SSE stream, or (--http-json) the response body for answers and the GET
    stream for anything else."""
    spawn = False               # each POST has its own thread already: run tools in it

    def __init__(self, h, sess):
        self.h = h
        self.app = h.server.app
        self.sess = sess
        self.answers = []       # --http-json: the responses, sent as one body at the end
        self.answered = False

    def send(self, msg, answer=False):
        if not self.app.sse:
            if answer:
                self.answers.append(msg)
            else:
                # No stream of its own: the GET stream's, or held for the
                # first one the client opens (it may open it after this).
                if not self.app.push(self.sess, msg) and self.sess is not None:
                    with self.app.lock:
                        self.sess.held.append(msg)
            return
        data = []
        if answer:
            self.answered = True
            if "garbage" in self.app.srv.modes:
                data += GARBAGE_SSE
        self.h.events(data + [json.dumps(msg).encode()])

    def notify(self, msg):
        if not self.app.push(self.sess, msg):
            self.send(msg)

    def key(self, rid):
        # Request ids are per session: two sessions may both call with id 3.
        return (self.sess.sid if self.sess else None, rid)

    def crash(self):
        raise Crash()


class App:
    """The HTTP transport's state, shared by the request threads."""

    def __init__(self, srv, a):
        self.srv = srv
        self.sse = not a.http_json
        self.expire = a.expire_after
        self.no_get = a.no_get
        self.require = None
        if a.require_header:
            name, _, value = a.require_header.partition(":")
            self.require = (name.strip(), value.strip())
        self.lock = threading.Lock()
        self.log_lock = threading.Lock()
        self.sessions = {}
        self.garbage_n = 0

    def log_line(self, obj):
        if self.srv.log:
            with self.log_lock:
                self.srv.log.write(json.dumps(obj) + "\n")
                self.srv.log.flush()

    def new_session(self):
        sess = Session(uuid.uuid4().hex)
        with self.lock:
            self.sessions[sess.sid] = sess
        return sess

    def end(self, sess):
        with self.lock:
            self.sessions.pop(sess.sid, None)
            if sess.get is not None:
                sess.get.put(None)

    def push(self, sess, msg):
        """Puts msg on the session's GET stream; False if none is open."""
        with self.lock:
            if sess is None or sess.get is None:
                return False
            sess.get.put(msg)
            return True


def rpc_error(code, message):
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive for sized answers; SSE streams close
    server_version = "mcp-test-server/1"

    def log_message(self, fmt, *args):
        pass                        # stderr is for stderr-noise only

    def begin(self):
        self.app = self.server.app
        self.logged = False
        self.gone = False
        self.wlock = threading.Lock()

    def send_response(self, code, message=None):
        super().send_response(code, message)
        self.log_http(code)

    def log_http(self, status):
        if getattr(self, "logged", True):
            return
        self.logged = True
        h = self.headers
        self.app.log_line({"http": self.command, "session": h.get("Mcp-Session-Id"),
                           "protocol_version": h.get("MCP-Protocol-Version"), "accept": h.get("Accept"),
                           "authorization": h.get("Authorization") is not None, "status": status})

    def reply(self, code, obj=None, headers=(), body=None):
        if obj is not None:
            body = json.dumps(obj).encode()
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def fail(self, code, message, headers=()):
        self.reply(code, rpc_error(-32001 if code == 401 else -32000, message), headers)

    def sse_begin(self, headers=()):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")   # the stream ends when the connection does
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True

    def events(self, data):
        with self.wlock:
            if self.gone:
                return
            try:
                for d in data:
                    self.wfile.write(b"event: message\ndata: " + d + b"\n\n")
                self.wfile.flush()
            except OSError:
                self.gone = True

    def peer_gone(self, wait=0.0):
        r, _, _ = select.select([self.connection], [], [], wait)
        if not r:
            return False
        try:
            if self.connection.recv(1, socket.MSG_PEEK) == b"":
                return True
        except OSError:
            return True
        time.sleep(wait)            # readable, but with data: not gone; do not spin
        return False

    def abort(self):
        # RST, not FIN: what a client sees of a server that died mid-call.
        self.log_http(None)
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def hang(self):
        self.log_http(None)
        while not self.peer_gone(0.5):
            pass
        self.close_connection = True

    def authorized(self):
        if self.app.require is None:
            return True
        name, value = self.app.require
        got = self.headers.get(name)
        if got is not None and got.strip() == value:
            return True
        self.fail(401, "unauthorized")
        return False

    def accepts(self, *types):
        got = {p.split(";")[0].strip().lower() for p in (self.headers.get("Accept") or "").split(",")}
        return all(t in got for t in types)

    def version_ok(self):
        v = self.headers.get("MCP-Protocol-Version")
        if v is None or v in VERSIONS:
            return True
        self.fail(400, "Bad Request: unsupported MCP-Protocol-Version: %s" % v)
        return False

    def session(self, count):
        """The request's session, or None once 400 or 404 is sent."""
        sid = self.headers.get("Mcp-Session-Id")
        if sid is None:
            self.fail(400, "Bad Request: Mcp-Session-Id header is required")
            return None
        with self.app.lock:
            sess = self.app.sessions.get(sid)
            if sess is not None and count:
                sess.posts += 1
                if self.app.expire and sess.posts >= self.app.expire:
                    del self.app.sessions[sid]
                    sess.expired = True
        if sess is None:
            self.fail(404, "Session not found")
        return sess

    def read_body(self):
        """The request body, or None once an error is sent."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            data = b""
            while True:
                line = self.rfile.readline(1024)
                try:
                    n = int(line.split(b";")[0].strip(), 16)
                except ValueError:
                    n = -1
                if n < 0 or len(data) + n > MAX_BODY:
                    self.close_connection = True
                    self.fail(413 if n > 0 else 400, "Bad chunked body or body too large")
                    return None
                if n == 0:
                    while self.rfile.readline(1024).strip():
                        pass            # trailers
                    return data
                data += self.rfile.read(n)
                self.rfile.readline(1024)
        cl = self.headers.get("Content-Length") or "0"
        if not cl.isdigit() or int(cl) > MAX_BODY:
            self.close_connection = True
            self.fail(413 if cl.isdigit() else 400, "Bad Content-Length or body too large")
            return None
        return self.rfile.read(int(cl))

    def on_path(self):
        if self.path.split("?")[0] == "/mcp":
            return True
        self.fail(404, "Not Found: the endpoint is /mcp")
        return False

    def do_POST(self):
        self.begin()
        body = self.read_body()
        if body is None or not self.on_path() or not self.authorized():
            return
        if not self.accepts("application/json", "text/event-stream"):
            self.fail(406, "Not Acceptable: Accept must list application/json and text/event-stream")
            return
        if not self.version_ok():
            return
        try:
            parsed = json.loads(body)
        except ValueError:
            self.app.log_line({"unparsed": body.decode("utf-8", "replace")})
            self.reply(400, rpc_error(-32700, "Parse error"))
            return
        batch = isinstance(parsed, list)
        msgs = parsed if batch else [parsed]
        if not msgs or not all(isinstance(m, dict) for m in msgs):
            self.reply(400, rpc_error(-32600, "Invalid Request"))
            return
        requests = [m for m in msgs if m.get("method") is not None and m.get("id") is not None]
        if any(m.get("method") == "initialize" for m in requests):
            sess = self.app.new_session()
        else:
            sess = self.session(count=True)
            if sess is None:
                return
        for m in msgs:
            self.app.log_line(m)
            if m.get("method"):
                self.app.srv.methods.append(m["method"])
        try:
            self.dispatch(msgs, requests, sess, batch)
        finally:
            if sess.expired:
                self.app.end(sess)

    def dispatch(self, msgs, requests, sess, batch):
        srv = self.app.srv
        out = PostOut(self, sess)
        if not requests:
            for m in msgs:
                srv.handle(m, out)
            self.reply(202)
            return
        if "no-init" in srv.modes:
            for m in msgs:
                srv.handle(m, out)      # cancellations, replies: as in stdio
            self.hang()
            return
        sid = [("Mcp-Session-Id", sess.sid)] if any(m.get("method") == "initialize" for m in requests) else []
        if self.app.sse:
            self.sse_begin(sid)
        try:
            for m in msgs:
                srv.handle(m, out)
        except Crash:
            self.abort()
            return
        if self.app.sse:
            return                      # answered or cancelled, the stream ends here
        if not out.answers:
            # Cancelled: no response to give; the connection just closes.
            self.log_http(None)
            self.close_connection = True
            return
        body = json.dumps(out.answers if batch else out.answers[0]).encode()
        if "garbage" in srv.modes:
            with self.app.lock:
                self.app.garbage_n += 1
                odd = self.app.garbage_n % 2 == 1
            body = (b"this is not json\n\x1b[31mnor this\x1b[0m\n{unbalanced\n" if odd else
                    b'{"hello": "a JSON body that is not JSON-RPC"}')
        self.reply(200, headers=sid, body=body)

    def do_GET(self):
        self.begin()
        if not self.on_path() or not self.authorized():
            return
        if self.app.no_get:
            self.fail(405, "Method Not Allowed: no GET stream here", [("Allow", "POST, DELETE")])
            return
        if not self.accepts("text/event-stream"):
            self.fail(406, "Not Acceptable: Accept must list text/event-stream")
            return
        if not self.version_ok():
            return
        sess = self.session(count=False)
        if sess is None:
            return
        q = queue.Queue()
        with self.app.lock:
            busy = sess.get is not None
            if not busy:
                sess.get = q
                for msg in sess.held:
                    q.put(msg)
                sess.held = []
        if busy:
            self.fail(409, "Conflict: this session has a GET stream already")
            return
        try:
            self.sse_begin()
            while not self.gone:
                try:
                    msg = q.get(timeout=0.2)
                except queue.Empty:
                    if self.peer_gone():
                        break
                    continue
                if msg is None:
                    break
                self.events([json.dumps(msg).encode()])
        finally:
            with self.app.lock:
                if sess.get is q:
                    sess.get = None

    def do_DELETE(self):
        self.begin()
        if not self.on_path() or not self.authorized() or not self.version_ok():
            return
        sess = self.session(count=False)
        if sess is None:
            return
        self.app.end(sess)
        self.reply(200)

    def do_other(self):
        self.begin()
        self.close_connection = True    # its body, if any, is not read
        self.fail(405, "Method Not Allowed", [("Allow", "GET, POST, DELETE")])

    do_PUT = do_PATCH = do_OPTIONS = do_other


def serve_http(srv, a):
    app = App(srv, a)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", a.http), Handler)
    httpd.app = app
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write("%d\n" % httpd.server_address[1])
        os.replace(a.port_file + ".tmp", a.port_file)

    def on_term(signum, frame):
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, on_term)
    try:
        httpd.serve_forever()
    except (SystemExit, KeyboardInterrupt):
        pass
    # os._exit: request threads may be blocked in a tool or a stream.
    if srv.log:
        srv.log.close()
    os._exit(0)


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
    ap.add_argument("--http", type=int, metavar="PORT")
    ap.add_argument("--port-file", metavar="FILE")
    ap.add_argument("--http-json", action="store_true")
    ap.add_argument("--expire-after", type=int, metavar="N")
    ap.add_argument("--require-header", metavar="'NAME: VALUE'")
    ap.add_argument("--no-get", action="store_true")
    a = ap.parse_args()
    if a.http is None and (a.port_file or a.http_json or a.expire_after or a.require_header or a.no_get):
        ap.error("--port-file, --http-json, --expire-after, --require-header and --no-get need --http")
    if a.require_header and ":" not in a.require_header:
        ap.error("--require-header wants 'NAME: VALUE'")
    modes = set(m for m in a.mode.split(",") if m)
    known = {"no-init", "garbage", "exit-mid-call", "paginate", "list-changed", "stderr-noise", "old-protocol", "hostile", "dup-keys"}
    if modes - known:
        ap.error("unknown mode(s): %s" % ", ".join(sorted(modes - known)))
    log = open(a.log, "a") if a.log else None
    srv = Server(modes, log)
    if "stderr-noise" in modes:
        threading.Thread(target=noise, daemon=True).start()
    if "hostile" in modes:
        sys.stderr.buffer.write(b"starting " + HOSTILE_BYTES + b"\n")
        sys.stderr.flush()
    if a.http is not None:
        serve_http(srv, a)
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
                srv.error(srv.stdio, None, -32700, "Parse error")
            continue
        if msg.get("method"):
            srv.methods.append(msg["method"])
        srv.handle(msg, srv.stdio)
    # stdin closed: the client is gone. os._exit, not a return: the noise
    # thread may sit blocked in a write to a stderr nobody reads, holding the
    # lock that the interpreter's exit would wait on to flush it.
    if log:
        log.close()
    os._exit(0)


if __name__ == "__main__":
    main()
