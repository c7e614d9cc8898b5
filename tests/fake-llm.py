#!/usr/bin/env python3
"""A fake LLM API for ward's tests: real HTTP on loopback, real SSE bytes.

It answers POST /v1/messages (Anthropic), POST /v1/chat/completions
(OpenAI) and POST /v1/responses (OpenAI's Responses API) from a named scenario: a function of the request number and the
conversation that returns one response. Every request is appended to the
log file as one JSON line, so a test can check what ward sent.

usage: fake-llm.py --scenario NAME --port-file FILE --log FILE
"""
import argparse
import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Turn:
    """One model message: blocks of ("text", s) / ("tool", name, input) /
    ("thinking", s), a stop reason, and how to deliver it."""

    def __init__(self, blocks, stop=None, status=200, headers=None, error_body=None,
                 cut_after=None, stall_after=None, stall_s=0, error_event_after=None,
                 byte_chunks=False, json_split=None, slow_s=0, failed=False, usage=None):
        self.blocks = blocks
        self.stop = stop or ("tool_use" if any(b[0] == "tool" for b in blocks) else "end_turn")
        self.status = status
        self.headers = headers or {}
        self.error_body = error_body
        self.cut_after = cut_after          # close after this many SSE events
        self.stall_after = stall_after      # go silent after this many events
        self.stall_s = stall_s
        self.error_event_after = error_event_after
        self.byte_chunks = byte_chunks      # one byte per write
        self.json_split = json_split        # tool input pieces of this size
        self.slow_s = slow_s                # a pause before each event
        self.failed = failed                # Responses API: end with response.failed
        self.usage = usage or {}            # {"input_tokens": N}: the prompt's size to report


def args_text(inp):
    """A tool call's arguments as the model streams them: the JSON of a
    value, or a string taken as the raw text itself (which need not be one
    JSON value: a key twice, a number too long for a double, ...)."""
    return inp if isinstance(inp, str) else json.dumps(inp)


def text(s, **kw):
    return Turn([("text", s)], **kw)


def tool(name, inp, say=None, **kw):
    blocks = ([("text", say)] if say else []) + [("tool", name, inp)]
    return Turn(blocks, **kw)


def last_user_text(messages):
    """What the last user message says: its text and tool results."""
    for m in reversed(messages):
        if m.get("role") in ("user", "tool"):
            c = m.get("content")
            if isinstance(c, str):
                out = [c]
                # OpenAI: consecutive tool messages belong together.
                return "\n".join(out)
            out = []
            for b in c or []:
                if b.get("type") == "text":
                    out.append(b.get("text", ""))
                elif b.get("type") == "tool_result":
                    cc = b.get("content")
                    out.append(cc if isinstance(cc, str) else json.dumps(cc))
            return "\n".join(out)
    return ""


# Scenarios: fn(n, messages) -> Turn, where n counts requests from 1.
def sc_text(n, msgs):
    return text("Hello from the fake model. Nothing to do.")


def sc_tool(n, msgs):
    if n == 1:
        return tool("bash", {"command": "echo made-by-tool > out.txt; cat out.txt"}, say="Writing a file.")
    return text("Done: out.txt holds the line.")


def sc_parallel(n, msgs):
    if n == 1:
        return Turn([("text", "Reading both."), ("tool", "read", {"path": "a.txt"}),
                     ("tool", "read", {"path": "b.txt"})])
    return text("Both read.")


def sc_split(n, msgs):
    if n == 1:
        return Turn([("tool", "write", {"path": "split.txt", "content": "ünïcode ✓ and \"quotes\"\n"})],
                    byte_chunks=True, json_split=1)
    return text("Written.")


STALLED = "Answer after a stalled stream was retried."


def sc_stall(n, msgs):
    """Silent after its first words; whole when asked again."""
    if n == 1:
        return Turn([("text", STALLED)], stall_after=5, stall_s=6)
    if n == 2:
        return text(STALLED)
    return text("unexpected request")


CUT = "The beginning of an answer that was cut and then ended well."


def sc_cut(n, msgs):
    """Cut mid-event after its first words; whole when asked again."""
    if n == 1:
        return Turn([("text", CUT)], cut_after=5)
    return text(CUT)


def sc_cut_always(n, msgs):
    return Turn([("text", CUT)], cut_after=5)


def sc_429_storm(n, msgs):
    """Five 429s in a row, then an answer: more than two retries' worth."""
    if n <= 5:
        return Turn([], status=429, headers={"retry-after-ms": "20"},
                    error_body={"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
    return text("Answer after a 429 storm.")


def sc_429_always(n, msgs):
    return Turn([], status=429, headers={"retry-after-ms": "50"},
                error_body={"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})


def sc_429_random(n, msgs):
    """FAKE_429_PCT percent of requests answered 429 at random (seeded by
    FAKE_SEED), the rest as the tool scenario: a provider's bad minute."""
    import random
    rnd = random.Random("%s-%d" % (os.environ.get("FAKE_SEED", "0"), n))
    if rnd.random() * 100 < float(os.environ.get("FAKE_429_PCT", "35")):
        return Turn([], status=429, headers={"retry-after-ms": "20"},
                    error_body={"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
    if "made-by-tool" not in json.dumps(msgs):
        return tool("bash", {"command": "echo made-by-tool > out.txt; cat out.txt"}, say="Writing a file.",
                    usage={"input_tokens": 1000})
    return text("Done: out.txt holds the line.", usage={"input_tokens": 1000})


def sc_preempt(n, msgs):
    """A long call at each of the first FAKE_LONG requests (default 2: what
    a preemption cuts), then done; each request reports 1000 input tokens."""
    if n <= int(os.environ.get("FAKE_LONG") or 2):
        return tool("bash", {"command": "sleep 60", "timeout": 120}, say="Running the long job.",
                    usage={"input_tokens": 1000})
    return text("It finished.", usage={"input_tokens": 1000})


def sc_401(n, msgs):
    return Turn([], status=401,
                error_body={"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})


def sc_403(n, msgs):
    return Turn([], status=403,
                error_body={"type": "error", "error": {"type": "permission_error", "message": "key not allowed"}})


def sc_404(n, msgs):
    return Turn([], status=404,
                error_body={"type": "error", "error": {"type": "not_found_error", "message": "Not Found"}})


def sc_429(n, msgs):
    if n == 1:
        return Turn([], status=429, headers={"retry-after": "1"},
                    error_body={"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
    return text("Answer after a 429.")


def sc_529(n, msgs):
    if n == 1:
        return Turn([], status=529, headers={"retry-after-ms": "200"},
                    error_body={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    return text("Answer after a 529.")


def sc_400(n, msgs):
    return Turn([], status=400,
                error_body={"type": "error", "error": {"type": "invalid_request_error", "message": "bad request body"}})


def sc_hostile_error(n, msgs):
    """A provider whose error messages carry terminal escapes (after the
    markers HX, HO, HB): a 529 retried, then a 400 that stops the run."""
    h = "HX\x1b[1A\x1b[2K HO\x1b]52;c;cHduZWQ=\x07 HB\u202e end"
    if n == 1:
        return Turn([], status=529, headers={"retry-after-ms": "100"},
                    error_body={"type": "error", "error": {"type": "overloaded_error", "message": "busy " + h}})
    return Turn([], status=400,
                error_body={"type": "error", "error": {"type": "invalid_request_error", "message": "refused " + h}})


ERROR_EVENT = "Some words shown before the error and the rest after it."


def sc_error_event(n, msgs):
    """An overload error mid-stream after its first words; whole when
    asked again."""
    if n == 1:
        return Turn([("text", ERROR_EVENT)], error_event_after=5)
    return text(ERROR_EVENT)


def sc_maxtokens(n, msgs):
    if n == 1:
        return Turn([("tool", "bash", {"command": "touch cut-call-ran.txt"})], stop="max_tokens")
    return text("I was cut off; stopping.")


def sc_refusal(n, msgs):
    return Turn([("text", "I can't help with that.")], stop="refusal")


def sc_loop(n, msgs):
    return tool("bash", {"command": "echo round %d" % n})


def sc_acp_bench(n, msgs):
    """bench/acp.py: a prompt that says sleep runs a long sleep (to be
    cancelled); any other is answered at once."""
    last = msgs[-1] if msgs else {}
    if "sleep" in last_user_text(msgs) and not any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in (last.get("content") or [])):
        return tool("bash", {"command": "sleep 60.%d" % os.getpid(), "timeout": 120})
    return text("Hello.")


def sc_sleep(n, msgs):
    if n == 1:
        # 100.PID seconds: a sleep of this server's own, told apart from any
        # other test's on the host.
        return tool("bash", {"command": "sleep 100.%d; touch /workspace/canary-deadline" % os.getpid(),
                             "timeout": 300})
    return text("unexpected second round")


def sc_callid(n, msgs):
    if n == 1:
        return tool("bash", {"command": "echo \"id=$WARD_CALL_ID\" > callid.txt"})
    return text("Noted.")


def sc_edit_two(n, msgs):
    """Changes a.txt and makes c.txt (ward apply's check for edits)."""
    if n == 1:
        return tool("bash", {"command": "echo box-a > a.txt && echo box-c > c.txt"})
    return text("Edited.")


def sc_patch_kinds(n, msgs):
    """Every kind of change a git patch must carry: binary content, a mode,
    symlinks, empty directories, deletions (of a binary, of a directory)."""
    if n == 1:
        return tool("bash", {"command": "printf 'new\\000bin\\001' > bin.dat && chmod +x run.sh && "
                                        "ln -sfn new-target link && ln -s a.txt newlink && "
                                        "mkdir -p empty/inner && rm gone.bin && rm -r olddir && "
                                        "printf '\\000\\001\\002' > sub/new.bin && rm keep/only.txt && "
                                        "printf 'two\\n' >> a.txt"})
    return text("Changed.")


def sc_bash_said(n, msgs):
    """The person's message is the command: run it once, then say so."""
    if n == 1:
        return tool("bash", {"command": last_user_text(msgs)})
    return text("Ran it.")


def sc_big_file(n, msgs):
    if n == 1:
        return tool("bash", {"command": "truncate -s 65M big.img"})
    return text("Made.")


def sc_write(n, msgs):
    if n == 1:
        return tool("write", {"path": "gated.txt", "content": "written\n"})
    return text("Finished: " + last_user_text(msgs)[:200])


def sc_write3(n, msgs):
    if n <= 3:
        return tool("write", {"path": "gated%d.txt" % n, "content": "written\n"})
    return text("Finished.")


def sc_bash3(n, msgs):
    if n <= 3:
        return tool("bash", {"command": "echo round %d >> rounds.txt" % n})
    return text("Finished.")


def first_user_text(messages):
    for m in messages:
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, str):
                return c
            return "\n".join(b.get("text", "") for b in c or [] if b.get("type") == "text")
    return ""


def sc_agents(n, msgs):
    """Subagents (tests/integration/agents.sh): the parent (its task "go")
    hands three parts to children with the task tool, then is done; a
    child (its task "do ...") runs a short bash call each round, forever,
    until a budget stops it. Every reply: 1000 tokens in, 20 out."""
    u = {"input_tokens": 1000}
    if first_user_text(msgs).startswith("do "):
        return tool("bash", {"command": "sleep 0.2"}, usage=u)
    if count_results(msgs) == 0:
        return Turn([("tool", "task", {"prompt": "do part %d" % i, "description": "part %d" % i}) for i in (1, 2, 3)],
                    usage=u)
    return text("The parts are done.", usage=u)


def sc_agents_share(n, msgs):
    """Subagents with shares of their own (tests/integration/agents.sh):
    the parent hands one part with max_cost and one with max_tokens; each
    child runs a short bash call each round, forever, until its share
    stops it. Every reply: 1000 tokens in, 20 out ($0.0033 at Sonnet's)."""
    u = {"input_tokens": 1000}
    if first_user_text(msgs).startswith("do "):
        return tool("bash", {"command": "true"}, usage=u)
    if count_results(msgs) == 0:
        return Turn([("tool", "task", {"prompt": "do the costly part", "description": "cost", "max_cost": "0.007"}),
                     ("tool", "task", {"prompt": "do the wordy part", "description": "tokens", "max_tokens": 2500})],
                    usage=u)
    return text("The parts are done.", usage=u)


def sc_escape_fd(n, msgs):
    """The task names a host file (SECRET=path) and a host dir (DIR=path);
    every file tool tries to reach them through /proc magic links."""
    if n == 1:
        words = dict(w.split("=", 1) for w in first_user_text(msgs).split() if "=" in w)
        up = "/.." * 16
        calls = []
        for fd in range(16):
            base = "/proc/self/fd/%d%s" % (fd, up)
            calls.append(("tool", "read", {"path": base + words["SECRET"]}))
            calls.append(("tool", "write", {"path": "%s%s/escaped-%d" % (base, words["DIR"], fd),
                                            "content": "escaped\n"}))
        calls.append(("tool", "read", {"path": "/proc/1/root" + words["SECRET"]}))
        calls.append(("tool", "read", {"path": "/proc/self/cwd" + up + words["SECRET"]}))
        calls.append(("tool", "read", {"path": "inside.txt"}))
        return Turn(calls)
    return text("Finished.")


def sc_redirect(n, msgs):
    """A redirect to another path of the same server: a client that
    followed it would send the key there (the log shows the path)."""
    return Turn([], status=307, headers={"location": "/stolen/v1/messages"},
                error_body={"error": {"type": "redirect", "message": "moved"}})


def sc_bigwrite(n, msgs):
    """Two writes of 700 KB each, streamed slowly (a pause before each of a
    few events) so that a test can stop the box's keeper first: the frames
    then wait in ward's queue."""
    if n == 1:
        big = "x" * (700 << 10)
        return Turn([("text", "Writing two big files now."),
                     ("tool", "write", {"path": "big1.txt", "content": big}),
                     ("tool", "write", {"path": "big2.txt", "content": big})],
                    slow_s=0.25, json_split=1 << 21)
    return text("Written.")


def sc_nul_path(n, msgs):
    if n == 1:
        return Turn([("tool", "write", {"path": "nul\x00evil.txt", "content": "x\n"}),
                     ("tool", "write", {"path": "nul-ok.txt", "content": "ok\n"})])
    return text("Finished: " + last_user_text(msgs)[:600])


def sc_symlink_dir(n, msgs):
    """The tree has docs -> a host directory; the box replaces the link with
    a directory of its own, and retargets another link."""
    if n == 1:
        return tool("bash", {"command": "rm docs && mkdir docs && touch docs/x && ln -sfn new-target keep-link"})
    return text("Done.")


def sc_unicode_json(n, msgs):
    """Characters that JSON carries but some encoders escape or drop:
    line and paragraph separators, NEL, NBSP, a zero-width space, an emoji."""
    return text("sep\u2028par\u2029nel\u0085nbsp\u00a0zw\u200bemoji\U0001F600 end")


def sc_unicode_term(n, msgs):
    return text("colour \x1b[31mRED\x1b[0m and a title \x1b]0;pwned\x07 and bell \x07 done")


def sc_answer_json(n, msgs):
    """A final answer that is JSON, in a fence as models like to."""
    if n == 1:
        return tool("bash", {"command": "ls | wc -l"}, say="Counting.")
    return text('```json\n{"ok": true, "files": 2}\n```')


def sc_answer_retry(n, msgs):
    """Wrong first (a string where a boolean goes), right when told why."""
    if n == 1:
        return text('{"ok": "yes", "files": 2}')
    return text('{"ok": true, "files": 2}')


def sc_answer_bad(n, msgs):
    return text("All done, no JSON here.")


def sc_rounds50(n, msgs):
    """50 rounds of a small tool call, then done: a long task's shape."""
    if n <= 50:
        return tool("bash", {"command": "echo round %d" % n}, say="Round %d." % n)
    return text("Done after 50 rounds.")


MARKDOWN_ANSWER = """# Plan

Here is **what I found** in `calc.py`, and a [link](https://example.com/docs).

- the bug is in *add*
- the test covers it
  - and mul too

```python
def add(a, b):  # fixed
    return a + b
```

| file | change | lines |
|------|--------|------:|
| calc.py | add returns a sum instead of a difference | 1 |
| test_calc.py | unchanged | 0 |

> All tests pass now.
"""


CHAT_FAILS = {}


def sc_chat(n, msgs):
    """The terminal session's tests: what the model does follows what the
    person said last; after a tool's result it answers with the result."""
    last = msgs[-1] if msgs else {}
    content = last.get("content") if isinstance(last.get("content"), list) else []
    said = last_user_text(msgs)
    if last.get("role") == "tool" or any(b.get("type") == "tool_result" for b in content):
        return text("Tool said: " + " ".join(said.split())[:160])
    words = said.split()
    if said.startswith("run ") and len(words) > 1:
        w = words[1]
        return tool("bash", {"command": "echo ran-%s > %s.txt; echo ran-%s" % (w, w, w)}, say="Running %s." % w)
    if said.startswith("count"):
        return tool("bash", {"command": "for i in $(seq 1 40); do echo line-$i; done"}, say="Counting.")
    if said.startswith("readboth"):
        return Turn([("text", "Reading two."), ("tool", "read", {"path": "a.txt"}),
                     ("tool", "read", {"path": "missing.txt"})])
    if said.startswith("overrun"):
        return tool("bash", {"command": "echo before-the-limit; sleep 30", "timeout": 1})
    if said.startswith("fail"):
        return tool("bash", {"command": "echo oops; exit 3"})
    if said.startswith("ponder"):
        return Turn([("thinking", "Let me weigh this first."), ("text", "Pondered and answered.")])
    if said.startswith("bignote"):
        return tool("write", {"path": "big.txt", "content": "".join("row %04d of a long file\n" % i for i in range(400))},
                    say="Writing a big file.")
    if said.startswith("note"):
        return tool("write", {"path": "note.txt", "content": "a note\n"}, say="Writing a note.")
    if said.startswith("sleep"):
        return tool("bash", {"command": "sleep 107; touch /workspace/canary-tui", "timeout": 300},
                    say="Sleeping.")
    if said.startswith("slowrun"):
        return Turn([("text", "Taking my time before a command."),
                     ("tool", "bash", {"command": "printf slow > slow.txt"})], slow_s=0.1)
    if said.startswith("stream"):
        return Turn([("text", "Streaming slowly: " + " ".join("word%d" % i for i in range(60)))], slow_s=0.25)
    if said.startswith("plant"):
        return tool("bash", {"command": "git init -q sub && echo s > sub/s.txt && echo 'touch x' > .envrc"},
                    say="Planting.")
    if said.startswith("markdown"):
        return Turn([("text", MARKDOWN_ANSWER)], slow_s=0.01 if "slow" in said else 0)
    if said.startswith("editcalc"):
        return tool("edit", {"path": "calc.py", "old_string": "    return a - b", "new_string": "    return a + b"},
                    say="Fixing add.")
    if said.startswith("writecalc"):
        return tool("write", {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"},
                    say="Rewriting calc.py.")
    if said.startswith("longout"):
        return tool("bash", {"command": "seq 1 5000"}, say="Counting far.")
    if said.startswith("longline"):
        return tool("bash", {"command": "head -c 50000 /dev/zero | tr '\\0' x; echo; echo after-the-line"})
    if said.startswith("colours"):
        return tool("bash", {"command": "printf '\\033[31mred-word\\033[0m plain \\033[2Jcleared \\033[41mbg\\033[0m\\n'"})
    if said.startswith("grepit"):
        return tool("grep", {"pattern": "alpha|beta", "mode": "content"})
    if said.startswith("flaky"):
        CHAT_FAILS["flaky"] = CHAT_FAILS.get("flaky", 0) + 1
        if CHAT_FAILS["flaky"] == 1:
            return Turn([], status=401, error_body={"type": "error", "error": {"type": "authentication_error",
                                                                             "message": "invalid x-api-key"}})
        return text("Flaky worked the second time.")
    if said.startswith("overload"):
        CHAT_FAILS["overload"] = CHAT_FAILS.get("overload", 0) + 1
        if CHAT_FAILS["overload"] == 1:
            return Turn([], status=529, error_body={"type": "error", "error": {"type": "overloaded_error",
                                                                             "message": "Overloaded"}})
        return text("Answered after the overload.")
    if said.startswith("longcmd"):
        return tool("bash", {"command": "echo " + "x" * 3000})
    if said.startswith("cutmid"):
        return Turn([("text", "The beginning of an answer that the server cuts")], cut_after=5)
    if said.startswith("autherr"):
        return Turn([], status=401, error_body={"type": "error", "error": {"type": "authentication_error",
                                                                         "message": "invalid x-api-key"}})
    if said.startswith("escape"):
        return text("colour \x1b[31mRED\x1b[0m title \x1b]0;pwned\x07 clear \x1b[2J"
                    " alt \x1b[?1049h cursor \x1b[?25l bell \x07 done")
    return text("You said: " + " ".join(words)[:200])


def sc_resp_reason(n, msgs):
    """A reasoning item, text and a call; then an answer."""
    if n == 1:
        return Turn([("thinking", "The user wants a file; bash can write it."), ("text", "Writing a file."),
                     ("tool", "bash", {"command": "echo made-by-tool > out.txt; cat out.txt"})])
    return text("Done: " + last_user_text(msgs)[:200])


def sc_resp_two(n, msgs):
    if n == 1:
        return Turn([("tool", "bash", {"command": "echo one-ran > one.txt; echo one-ran"}),
                     ("tool", "bash", {"command": "echo two-ran > two.txt; echo two-ran"})])
    return text("Both ran.")


def sc_resp_cut(n, msgs):
    """A whole call, then one cut by the output limit."""
    if n == 1:
        return Turn([("tool", "bash", {"command": "touch first-ran.txt"}),
                     ("tool", "bash", {"command": "touch cut-call-ran.txt"})], stop="max_tokens")
    return text("I was cut off; stopping.")


def sc_resp_failed(n, msgs):
    return Turn([("text", "Some words shown before the failure")], failed=True)


def sc_resp_400(n, msgs):
    return Turn([], status=400, error_body={"error": {"message": "Unsupported parameter: 'temperature'",
                                                      "type": "invalid_request_error", "param": "temperature",
                                                      "code": "unsupported_parameter"}})


# MCP: ward names a server's tools mcp__SERVER__TOOL; "everything" is the
# reference server that .ci/setup installs (its tools echo, add and
# longRunningOperation).
def sc_mcp_echo(n, msgs):
    if n == 1:
        return tool("mcp__everything__echo", {"message": "hello from the model"})
    if n == 2:
        return tool("mcp__everything__add", {"a": 2, "b": 40})
    return text("The last tool said: " + last_user_text(msgs)[:500])


def sc_mcp_long(n, msgs):
    """A call that outlasts the test: what a cancel or a deadline meets."""
    if n == 1:
        return tool("mcp__everything__longRunningOperation", {"duration": 60, "steps": 10})
    return text("The long operation is over: " + last_user_text(msgs)[:500])


def sc_mcp_call(n, msgs):
    """Any one call (or two) the test chooses, so that each MCP test needs
    no scenario of its own: FAKE_TOOL and FAKE_INPUT (JSON, default {}),
    then FAKE_TOOL2 and FAKE_INPUT2 if FAKE_TOOL2 is set; then the text
    "done: " and what the last call returned."""
    calls = [(os.environ["FAKE_TOOL"], os.environ.get("FAKE_INPUT") or "{}")]
    if os.environ.get("FAKE_TOOL2"):
        calls.append((os.environ["FAKE_TOOL2"], os.environ.get("FAKE_INPUT2") or "{}"))
    if n <= len(calls):
        return tool(calls[n - 1][0], json.loads(calls[n - 1][1]))
    return text("done: " + last_user_text(msgs))


def sc_raw_calls(n, msgs):
    """FAKE_CALLS, a JSON array of [TOOL, RAW] pairs: request N makes the
    Nth call, its arguments the raw text RAW as it is (one call to a
    request); then the text "done: " and what the last call returned."""
    calls = json.loads(os.environ["FAKE_CALLS"])
    if n <= len(calls):
        return tool(calls[n - 1][0], calls[n - 1][1])
    return text("done: " + last_user_text(msgs))


def sc_mcp_repeat(n, msgs):
    """FAKE_TOOL with FAKE_INPUT at every request (FAKE_ROUNDS of them,
    default 6): a model that insists, as one refused for want of a person
    would; or the same call round after round, for the benchmark."""
    if n <= int(os.environ.get("FAKE_ROUNDS") or 6):
        return tool(os.environ["FAKE_TOOL"], json.loads(os.environ.get("FAKE_INPUT") or "{}"))
    return text("gave up")


# Compaction. A request without tools is ward's summary request.
def summary_turn():
    return text("SUMMARY-OF-EARLIER: the agent ran the first rounds' commands and read their output.",
                usage={"input_tokens": 7777})


def context_error():
    if State.openai:
        return {"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages "
                                     "resulted in 131072 tokens. Please reduce the length of the messages.",
                          "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}
    return {"type": "error", "error": {"type": "invalid_request_error",
                                       "message": "prompt is too long: 208310 tokens > 200000 maximum"}}


def count_results(msgs):
    return sum(1 for m in msgs if m.get("role") == "tool") + sum(
        1 for m in msgs if isinstance(m.get("content"), list)
        for b in m["content"] if b.get("type") == "tool_result")


def round_call(k):
    # Some 3 KB of output a round, marked with the round.
    return tool("bash", {"command": "echo mark-%d; seq 1000 1600" % k})


def sc_compact_grow(n, msgs):
    """The prompt grows by 20k tokens a round (20000 for each tool result
    sent, and 20000 more); five rounds of calls, then an answer."""
    if not State.req.get("tools"):
        return summary_turn()
    State.tools_n += 1
    u = {"input_tokens": 20000 * (1 + count_results(msgs))}
    if State.tools_n <= 5:
        t = round_call(State.tools_n)
        t.usage = u
        return t
    return text("Finished after six rounds.", usage=u)


def sc_compact_ctx400(n, msgs):
    """Three rounds, then the API says the prompt is too long, once."""
    if not State.req.get("tools"):
        return summary_turn()
    State.tools_n += 1
    if State.tools_n <= 3:
        return round_call(State.tools_n)
    if State.tools_n == 4:
        return Turn([], status=400, error_body=context_error())
    return text("Finished after the compaction.")


def sc_compact_ctx400_again(n, msgs):
    """The same, but every request with tools after the third is too long."""
    if not State.req.get("tools"):
        return summary_turn()
    State.tools_n += 1
    if State.tools_n <= 3:
        return round_call(State.tools_n)
    return Turn([], status=400, error_body=context_error())


def sc_compact_summary_fails(n, msgs):
    """The prompt passes the threshold and the summary request fails."""
    if not State.req.get("tools"):
        return Turn([], status=400, error_body={"type": "error", "error": {
            "type": "invalid_request_error", "message": "summary refused"}})
    State.tools_n += 1
    return Turn(round_call(State.tools_n).blocks, usage={"input_tokens": 20000 * (1 + count_results(msgs))})


SCENARIOS = {k[3:].replace("_", "-"): v for k, v in globals().items() if k.startswith("sc_")}


def anthropic_events(t, usage=None):
    ev = [("message_start", {"type": "message_start", "message": {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": "fake-model",
        "content": [], "usage": usage or {"input_tokens": t.usage.get("input_tokens", 10), "output_tokens": 1}}})]
    ev.append(("ping", {"type": "ping"}))
    for i, b in enumerate(t.blocks):
        if b[0] == "text":
            ev.append(("content_block_start", {"type": "content_block_start", "index": i,
                                               "content_block": {"type": "text", "text": ""}}))
            words = b[1].split(" ")
            for k, w in enumerate(words):
                piece = w + (" " if k < len(words) - 1 else "")
                if piece:
                    ev.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                       "delta": {"type": "text_delta", "text": piece}}))
        elif b[0] == "thinking":
            ev.append(("content_block_start", {"type": "content_block_start", "index": i,
                                               "content_block": {"type": "thinking", "thinking": ""}}))
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                               "delta": {"type": "thinking_delta", "thinking": b[1]}}))
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                               "delta": {"type": "signature_delta", "signature": "sig-fake"}}))
        elif b[0] == "tool":
            ev.append(("content_block_start", {"type": "content_block_start", "index": i,
                                               "content_block": {"type": "tool_use", "id": "toolu_fake_%d" % i,
                                                                 "name": b[1], "input": {}}}))
            js = args_text(b[2])
            step = t.json_split or 12
            for k in range(0, len(js), step):
                ev.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                   "delta": {"type": "input_json_delta",
                                                             "partial_json": js[k:k + step]}}))
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    ev.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": t.stop},
                                 "usage": {"output_tokens": 20}}))
    ev.append(("message_stop", {"type": "message_stop"}))
    return ["event: %s\ndata: %s\n\n" % (name, json.dumps(data)) for name, data in ev]


def openai_events(t):
    out = []

    def chunk(delta, finish=None, usage=None):
        d = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": "fake-model",
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        if usage:
            d = {"id": "chatcmpl-fake", "choices": [], "usage": usage}
        out.append("data: %s\n\n" % json.dumps(d))

    chunk({"role": "assistant", "content": ""})
    k = 0
    for b in t.blocks:
        if b[0] == "text":
            for w in b[1].split(" "):
                chunk({"content": w + " "})
        elif b[0] == "tool":
            js = args_text(b[2])
            step = t.json_split or 12
            chunk({"tool_calls": [{"index": k, "id": "call_fake_%d" % k, "type": "function",
                                   "function": {"name": b[1], "arguments": ""}}]})
            for i in range(0, len(js), step):
                chunk({"tool_calls": [{"index": k, "function": {"arguments": js[i:i + step]}}]})
            k += 1
    finish = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length",
              "refusal": "content_filter"}.get(t.stop, "stop")
    chunk({}, finish)
    chunk(None, usage={"prompt_tokens": t.usage.get("input_tokens", 10), "completion_tokens": 20})
    out.append("data: [DONE]\n\n")
    return out


def responses_messages(items):
    """Responses-API input items as the messages the scenarios read."""
    out = []
    for it in items or []:
        t = it.get("type")
        if t == "message":
            out.append({"role": it.get("role"), "content": [{"type": "text", "text": p.get("text", "")}
                                                           for p in it.get("content") or []]})
        elif t == "function_call_output":
            out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": it.get("call_id"),
                                                     "content": it.get("output", "")}]})
    return out


def responses_events(t, n):
    """The Responses API's events for a Turn: a reasoning item for each
    thinking block (encrypted content "enc-N-I": request N, block I), a
    message for each text block, a function_call for each tool block.
    stop "max_tokens": the response is incomplete, cut in the last call
    after its arguments (whole, parseable: only the missing done events say
    it was cut) and before it was finished; t.failed: it ends with
    response.failed."""
    ev = []

    def add(typ, **d):
        d = dict(type=typ, sequence_number=len(ev), **d)
        ev.append("event: %s\ndata: %s\n\n" % (typ, json.dumps(d)))

    resp = {"id": "resp_fake_%d" % n, "object": "response", "model": "fake-model", "status": "in_progress",
            "output": []}
    add("response.created", response=resp)
    add("response.in_progress", response=resp)
    cut = t.stop == "max_tokens"
    last_tool = max([i for i, b in enumerate(t.blocks) if b[0] == "tool"], default=-1)
    for i, b in enumerate(t.blocks):
        if b[0] == "thinking":
            rid = "rs_fake_%d" % i
            add("response.output_item.added", output_index=i, item={"id": rid, "type": "reasoning", "summary": []})
            add("response.reasoning_summary_part.added", item_id=rid, output_index=i, summary_index=0,
                part={"type": "summary_text", "text": ""})
            add("response.reasoning_summary_text.delta", item_id=rid, output_index=i, summary_index=0, delta=b[1])
            add("response.reasoning_summary_text.done", item_id=rid, output_index=i, summary_index=0, text=b[1])
            add("response.output_item.done", output_index=i,
                item={"id": rid, "type": "reasoning", "encrypted_content": "enc-%d-%d" % (n, i),
                      "summary": [{"type": "summary_text", "text": b[1]}]})
        elif b[0] == "text":
            mid = "msg_fake_%d" % i
            add("response.output_item.added", output_index=i,
                item={"id": mid, "type": "message", "status": "in_progress", "role": "assistant", "content": []})
            add("response.content_part.added", item_id=mid, output_index=i, content_index=0,
                part={"type": "output_text", "text": "", "annotations": []})
            words = b[1].split(" ")
            for k, w in enumerate(words):
                piece = w + (" " if k < len(words) - 1 else "")
                if piece:
                    add("response.output_text.delta", item_id=mid, output_index=i, content_index=0, delta=piece)
            add("response.output_text.done", item_id=mid, output_index=i, content_index=0, text=b[1])
            part = {"type": "output_text", "text": b[1], "annotations": []}
            add("response.content_part.done", item_id=mid, output_index=i, content_index=0, part=part)
            add("response.output_item.done", output_index=i,
                item={"id": mid, "type": "message", "status": "completed", "role": "assistant", "content": [part]})
        elif b[0] == "tool":
            fid, cid = "fc_fake_%d" % i, "call_fake_%d_%d" % (n, i)
            item = {"id": fid, "type": "function_call", "status": "in_progress", "arguments": "",
                    "call_id": cid, "name": b[1]}
            add("response.output_item.added", output_index=i, item=item)
            js = args_text(b[2])
            step = t.json_split or 12
            for k in range(0, len(js), step):
                add("response.function_call_arguments.delta", item_id=fid, output_index=i, delta=js[k:k + step])
            if cut and i == last_tool:
                break
            add("response.function_call_arguments.done", item_id=fid, output_index=i, arguments=js)
            add("response.output_item.done", output_index=i, item=dict(item, status="completed", arguments=js))
    resp = dict(resp, usage={"input_tokens": 10, "input_tokens_details": {"cached_tokens": 4},
                             "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 5},
                             "total_tokens": 30})
    if t.failed:
        add("response.failed", response=dict(resp, status="failed",
                                             error={"code": "server_error", "message": "The model failed"}))
    elif cut:
        add("response.incomplete", response=dict(resp, status="incomplete",
                                                 incomplete_details={"reason": "max_output_tokens"}))
    else:
        add("response.completed", response=dict(resp, status="completed"))
    return ev


class State:
    lock = threading.Lock()
    n = 0
    req = {}            # the request being answered
    openai = False      # ... at /chat/completions
    tools_n = 0         # requests with tools so far (compaction scenarios)
    cached = set()      # --cache-sim: the prefixes written to the cache


def cache_usage(req):
    """--cache-sim: the usage Anthropic's API would report for this request.
    The prompt is a run of blocks (tools, system, then each message's
    blocks), about 4 bytes a token. A request reads the longest prefix that
    an earlier request wrote at one of its breakpoints (cache_control),
    writes every breakpoint of its own past that, and pays full price for
    the rest."""
    import hashlib
    blocks = list(req.get("tools") or []) + list(req.get("system") or [])
    for m in req.get("messages", []):
        c = m.get("content")
        blocks += [{"type": "text", "text": c}] if isinstance(c, str) else list(c or [])
    toks, marks, hashes = [], [], []
    h = hashlib.sha256()
    for b in blocks:
        plain = {k: v for k, v in b.items() if k != "cache_control"}
        js = json.dumps(plain, sort_keys=True)
        h.update(js.encode())
        hashes.append(h.copy().hexdigest())
        toks.append(max(1, len(js) // 4))
        marks.append("cache_control" in b)
    bps = [i for i, m in enumerate(marks) if m]
    with State.lock:
        hit = max([i for i in range(len(blocks)) if hashes[i] in State.cached and (not bps or i <= bps[-1])],
                  default=-1)
        for i in bps:
            if i > hit:
                State.cached.add(hashes[i])
    last = bps[-1] if bps else -1
    read = sum(toks[:hit + 1])
    write = sum(toks[hit + 1:last + 1]) if last > hit else 0
    rest = sum(toks[max(hit, last) + 1:])
    return {"input_tokens": rest, "cache_read_input_tokens": read, "cache_creation_input_tokens": write,
            "output_tokens": 1}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        try:
            req = json.loads(body)
        except ValueError:
            req = {}
        with State.lock:
            State.n += 1
            n = State.n
        openai = self.path.endswith("/chat/completions")
        responses = self.path.endswith("/responses")
        rec = {"n": n, "path": self.path, "body": req,
               "has_key": bool(self.headers.get("x-api-key") or self.headers.get("authorization")),
               "anthropic_version": self.headers.get("anthropic-version"),
               "user_agent": self.headers.get("user-agent")}
        with open(self.server.log_path, "a") as f:
            f.write(json.dumps(rec) + "\n")
        msgs = req.get("messages", []) if not responses else responses_messages(req.get("input"))
        State.req, State.openai = req, openai
        t = self.server.scenario(n, msgs)
        if t.status != 200:
            payload = json.dumps(t.error_body or {}).encode()
            self.send_response(t.status)
            self.send_header("content-type", "application/json")
            self.send_header("request-id", "req_fake_%d" % n)
            for k, v in t.headers.items():
                self.send_header(k, v)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        usage = cache_usage(req) if self.server.cache_sim and not openai and not responses else None
        events = openai_events(t) if openai else responses_events(t, n) if responses else anthropic_events(t, usage)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            if self.server.first_byte:
                # When the stream's first byte goes out (CLOCK_MONOTONIC,
                # as the reader's): bench/acp.py measures from here.
                with open(self.server.first_byte, "a") as f:
                    f.write("%d\n" % time.monotonic_ns())
            for i, e in enumerate(events):
                if t.cut_after is not None and i == t.cut_after:
                    # Cut mid-event: half an event, then the connection goes.
                    self.wfile.write(e[:len(e) // 2].encode())
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if t.slow_s:
                    time.sleep(t.slow_s)
                if t.stall_after is not None and i == t.stall_after:
                    self.wfile.flush()
                    time.sleep(t.stall_s)
                if t.error_event_after is not None and i == t.error_event_after:
                    err = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
                    if responses:
                        self.wfile.write(("event: error\ndata: %s\n\n" % json.dumps(
                            {"type": "error", "code": "server_error", "message": "Overloaded",
                             "param": None})).encode())
                    elif openai:
                        self.wfile.write(("data: %s\n\n" % json.dumps({"error": {"message": "Overloaded", "type": "overloaded_error"}})).encode())
                    else:
                        self.wfile.write(("event: error\ndata: %s\n\n" % json.dumps(err)).encode())
                    self.wfile.flush()
                    return
                data = e.encode()
                if t.byte_chunks:
                    for k in range(len(data)):
                        self.wfile.write(data[k:k + 1])
                        self.wfile.flush()
                else:
                    self.wfile.write(data)
                    self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True, choices=sorted(SCENARIOS))
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--cache-sim", action="store_true", help="report prompt caching as the API would")
    ap.add_argument("--first-byte", help="append each stream's first byte's CLOCK_MONOTONIC ns to this file")
    a = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.scenario = SCENARIOS[a.scenario]
    srv.log_path = a.log
    srv.cache_sim = a.cache_sim
    srv.first_byte = a.first_byte
    open(a.log, "w").close()
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(a.port_file + ".tmp", a.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
