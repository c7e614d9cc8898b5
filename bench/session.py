#!/usr/bin/env python3
"""The interactive session's timings, measured through a real pty against
the fake LLM server: start to the first prompt (box included), Esc during a
running call to the cancelled card on the screen, and Esc to the call's
process gone from the host. Prints one line: medians and counts, in ms.

usage: session.py WARD WORKDIR [ROUNDS]
"""
import os
import pty
import select
import signal
import statistics
import subprocess
import sys
import time

ward, work = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 20
ws = os.path.join(work, "sessws")
os.makedirs(ws, exist_ok=True)
port = os.path.join(work, "sessport")
srv = subprocess.Popen(["python3", "tests/fake-llm.py", "--scenario", "chat", "--port-file", port,
                        "--log", os.path.join(work, "sess.log")])
for _ in range(100):
    if os.path.exists(port):
        break
    time.sleep(0.05)
url = "http://127.0.0.1:" + open(port).read()
env = dict(os.environ, XDG_STATE_HOME=os.path.join(work, "sessstate"), ANTHROPIC_API_KEY="sk-bench", TERM="xterm")


class Pane:
    def __init__(self):
        self.t0 = time.perf_counter()
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve(ward, [ward, "--base-url", url, "--model", "fake", "--approve", "auto", "--workspace", ws], env)
        self.out = b""

    def wait_for(self, needle, start=0, timeout=20.0):
        """Read until needle appears after offset start; the time it did."""
        until = time.perf_counter() + timeout
        while needle not in self.out[start:]:
            left = until - time.perf_counter()
            if left <= 0:
                raise SystemExit("bench: no %r on the screen; the last of it: %r" % (needle, self.out[-300:]))
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                self.out += os.read(self.fd, 65536)
        return time.perf_counter()

    def send(self, b):
        os.write(self.fd, b)

    def wait_exit(self, timeout=10.0):
        """The session ends (its pty drained meanwhile); killed past timeout."""
        until = time.perf_counter() + timeout
        while time.perf_counter() < until:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return
            r, _, _ = select.select([self.fd], [], [], 0.05)
            if r:
                try:
                    self.out += os.read(self.fd, 65536)
                except OSError:
                    pass
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        raise SystemExit("bench: the session did not end within %.0f s of Ctrl-D" % timeout)


def sleepers():
    found = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if open("/proc/%s/cmdline" % p, "rb").read() == b"sleep\x00107\x00":
                    found.append(int(p))
            except OSError:
                pass
    return found


starts, cards, gone = [], [], []
for i in range(5):
    p = Pane()
    starts.append((p.wait_for(b"\xe2\x80\xba ") - p.t0) * 1000)   # the prompt's "›"
    p.send(b"\x04")                                                  # Ctrl-D: no changes, no question
    p.wait_exit()
    os.close(p.fd)
p = Pane()
p.wait_for(b"\xe2\x80\xba ")
for i in range(rounds):
    mark = len(p.out)
    p.send(b"sleep\r")
    p.wait_for(b"esc to interrupt", mark)
    pids = []
    until = time.perf_counter() + 10
    while not pids:
        if time.perf_counter() > until:
            raise SystemExit("bench: the call's sleep did not start within 10 s")
        pids = sleepers()
        time.sleep(0.002)
    mark = len(p.out)
    t0 = time.perf_counter()
    p.send(b"\x1b")
    t_card = t_gone = None
    while t_card is None or t_gone is None:
        if time.perf_counter() - t0 > 10:
            raise SystemExit("bench: Esc did not cancel the call within 10 s")
        r, _, _ = select.select([p.fd], [], [], 0.0005)
        if r:
            p.out += os.read(p.fd, 65536)
        now = time.perf_counter()
        if t_card is None and b"cancelled" in p.out[mark:]:
            t_card = now
        if t_gone is None and not any(os.path.exists("/proc/%d" % q) for q in pids):
            t_gone = now
    cards.append((t_card - t0) * 1000)
    gone.append((t_gone - t0) * 1000)
    p.wait_for(b"\xe2\x80\xba ", mark)
p.send(b"\x04")
p.wait_exit()
srv.send_signal(signal.SIGTERM)
srv.wait()
print("%.1f %.1f %.1f %d %d" % (statistics.median(starts), statistics.median(cards), statistics.median(gone),
                                len(starts), len(cards)))
