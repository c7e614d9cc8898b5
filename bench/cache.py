#!/usr/bin/env python3
"""Prompt caching over a long task: a 50-round run against the fake LLM
server, which reports cache reads and writes as Anthropic's API would
(--cache-sim), once with ward's breakpoints (--cache-ttl 5m) and once
without (--cache-ttl off), priced as claude-sonnet-4.

usage: cache.py WARD WORKDIR
prints: cached_cost uncached_cost cached_full_price_tokens uncached_input_tokens hit_rate prompt_tokens
"""
import json
import os
import subprocess
import sys
import time


def run(ward, work, ttl):
    ws = os.path.join(work, "cachews")
    os.makedirs(ws, exist_ok=True)
    open(os.path.join(ws, "a.txt"), "w").write("hi\n")
    port = os.path.join(work, "cacheport")
    if os.path.exists(port):
        os.unlink(port)
    srv = subprocess.Popen(["python3", "tests/fake-llm.py", "--scenario", "rounds50", "--cache-sim",
                            "--port-file", port, "--log", os.path.join(work, "cache-%s.log" % ttl)])
    try:
        for _ in range(100):
            if os.path.exists(port):
                break
            time.sleep(0.05)
        url = "http://127.0.0.1:" + open(port).read()
        env = dict(os.environ, XDG_STATE_HOME=os.path.join(work, "state"), ANTHROPIC_API_KEY="sk-bench",
                   XDG_CONFIG_HOME=os.path.join(work, "config"))
        p = subprocess.run([ward, "run", "--json", "--base-url", url, "--model", "claude-sonnet-4-bench",
                            "--cache-ttl", ttl, "--workspace", ws, "--no-project-instructions", "go"],
                           capture_output=True, text=True, env=env)
    finally:
        srv.kill()
        srv.wait()
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["rounds"] == 51, r
    return r


def main():
    ward, work = sys.argv[1], sys.argv[2]
    c = run(ward, work, "5m")
    u = run(ward, work, "off")
    cu, uu = c["usage"], u["usage"]
    prompt = cu["input_tokens"] + cu["cache_read_tokens"] + cu["cache_write_tokens"]
    print("%.4f %.4f %d %d %.3f %d" % (c["cost_usd"], u["cost_usd"], cu["input_tokens"] + cu["cache_write_tokens"],
                                       uu["input_tokens"], cu["cache_hit_rate"], prompt))


main()
