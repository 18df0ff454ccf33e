#!/usr/bin/env python3
"""Head-of-line blocking: a short request's TTFT behind a long prompt, per prefill schedule.

Usage: head_of_line.py [--model DIR] [--long-words 4000] [--rounds 2] [--port 18191]
                       [--schedule NAME=FLAGS ...] [--out FILE.md]

Per round and schedule (schedules alternate, order reversed every other round): `mlx-ring serve`
is started with the schedule's flags (default schedules: "mlx-lm" = --prefill-share 1
--short-prompts-first off, the unit of mlx-lm's BatchGenerator, which mlx-ring ran before these
flags existed; "default" = no flags), then request L (a chat prompt of --long-words words, ~1.3
tokens a word, max_tokens 1, different words every round so no prefix is cached) is sent and, 2 s
later, request S ("What is the capital of France?", max_tokens 32, streaming). Recorded: S's time
to its first content token (TTFT), S's total time, L's total time. The server is stopped between
runs. Nothing else should run on the machine.
"""

import argparse
import json
import os
import statistics
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def wait_ready(base, proc, timeout=300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("serve exited with %s" % proc.returncode)
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError("serve did not become ready")


def chat(base, content, max_tokens, stream, on_token=None):
    body = json.dumps({"model": "default_model", "messages": [{"role": "user", "content": content}],
                       "max_tokens": max_tokens, "temperature": 0.0, "stream": stream}).encode()
    req = urllib.request.Request(base + "/v1/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=1800) as resp:
        if not stream:
            return json.loads(resp.read())
        for raw in resp:
            line = raw.decode().strip()
            if not line.startswith("data:") or line[5:].strip() == "[DONE]":
                continue
            choices = json.loads(line[5:]).get("choices") or []
            if choices and (choices[0].get("delta") or {}).get("content") and on_token:
                on_token(time.monotonic())


def one_run(args, flags, round_no):
    base = "http://127.0.0.1:%d" % args.port
    cmd = [str(ROOT / "mlx-ring"), "serve", "--model", args.model, "--port", str(args.port)] + flags.split()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    try:
        wait_ready(base, proc)
        words = " ".join("w%d_%d" % (round_no, (i * 7919) % 3001) for i in range(args.long_words))
        long_done = {}

        def long_request():
            t0 = time.monotonic()
            r = chat(base, "Summarize: " + words, 1, False)
            long_done["s"] = time.monotonic() - t0
            long_done["prompt_tokens"] = r["usage"]["prompt_tokens"]

        t = threading.Thread(target=long_request)
        t.start()
        time.sleep(2.0)
        first = []
        s0 = time.monotonic()
        chat(base, "What is the capital of France?", 32, True, lambda ts: first.append(ts))
        short_total = time.monotonic() - s0
        t.join()
        return {"ttft": first[0] - s0 if first else float("nan"), "short_total": short_total,
                "long_total": long_done["s"], "prompt_tokens": long_done["prompt_tokens"]}
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="models/smollm2-135m-instruct")
    ap.add_argument("--long-words", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--port", type=int, default=18191)
    ap.add_argument("--schedule", action="append", default=None, help="NAME=serve flags")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    schedules = [s.split("=", 1) for s in (args.schedule or
                 ["mlx-lm=--prefill-share 1 --short-prompts-first off", "default="])]
    results = {name: [] for name, _ in schedules}
    for r in range(args.rounds):
        order = schedules if r % 2 == 0 else list(reversed(schedules))
        for name, flags in order:
            res = one_run(args, flags, r)
            results[name].append(res)
            print("round %d %-8s long prompt %d tokens: short TTFT %.2f s, short total %.2f s, long total %.2f s"
                  % (r, name, res["prompt_tokens"], res["ttft"], res["short_total"], res["long_total"]), flush=True)
    lines = ["| schedule | long prompt tokens | short TTFT s (median) | short total s | long total s | runs |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, _ in schedules:
        rs = results[name]
        med = lambda k: statistics.median(x[k] for x in rs)
        lines.append("| %s | %d | %.2f | %.2f | %.2f | %d |" % (name, rs[0]["prompt_tokens"], med("ttft"),
                     med("short_total"), med("long_total"), len(rs)))
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        Path(args.out).write_text(report)


if __name__ == "__main__":
    main()
