#!/usr/bin/env python3
"""The stall a running stream sees while a long prompt joins (interleaved prefill).

Usage: join_stall.py --target NAME=http://127.0.0.1:PORT [--target ...] [--prompt-words 1200]
                     [--runs 1] [--out FILE.md]

Per target and run: stream A (a short question, max_tokens 200, temperature 0) starts; once A
has streamed 10 content events, request B (a ~N-word prompt, max_tokens 1) is sent. Recorded:
A's inter-token gaps before B was sent (p50), the longest gap of A while B was being answered,
and B's time to its answer. With interleaved prefill A's longest gap is one decode step plus one
prefill chunk of B (--prefill-step-size tokens); served one after another, A would not stall but
B would wait for all of A.
"""

import argparse
import json
import statistics
import threading
import time
import urllib.request


def stream(base, messages, max_tokens, on_event):
    body = json.dumps({"model": "default_model", "messages": messages, "max_tokens": max_tokens,
                       "temperature": 0.0, "stream": True}).encode()
    req = urllib.request.Request(base + "/v1/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        for raw in resp:
            line = raw.decode().strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            ev = json.loads(data)
            choices = ev.get("choices") or []
            if choices and (choices[0].get("delta") or {}).get("content"):
                on_event(time.monotonic())


def one_run(base, words):
    a_times = []
    b_sent = {}
    b_done = {}
    started = threading.Event()

    def on_a(t):
        a_times.append(t)
        if len(a_times) == 10:
            started.set()

    a = threading.Thread(target=stream, args=(base, [{"role": "user", "content":
                         "Write a long story about a lighthouse keeper."}], 200, on_a))
    a.start()
    if not started.wait(300):
        raise RuntimeError("stream A did not start")
    long_text = " ".join(f"word{i % 97}" for i in range(words))
    b_sent["t"] = time.monotonic()
    stream(base, [{"role": "user", "content": "Summarize: " + long_text}], 1, lambda t: b_done.setdefault("t", t))
    b_done.setdefault("t", time.monotonic())
    a.join()
    before = [y - x for x, y in zip(a_times, a_times[1:]) if y <= b_sent["t"]]
    during = [y - x for x, y in zip(a_times, a_times[1:]) if y > b_sent["t"] and x < b_done["t"]]
    return {
        "a_gap_p50_ms": 1000 * statistics.median(before) if before else float("nan"),
        "a_gap_max_during_join_ms": 1000 * max(during) if during else float("nan"),
        "a_events_during_join": len(during),
        "b_answer_s": b_done["t"] - b_sent["t"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", action="append", required=True)
    ap.add_argument("--prompt-words", type=int, default=1200)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--out")
    args = ap.parse_args()
    lines = ["", f"### A long prompt joining a running stream ({args.prompt_words} words, {args.runs} runs per target)", "",
             "| target | run | A gap p50 before (ms) | A longest gap during the join (ms) | A tokens during the join | B answered after (s) |",
             "|---|---:|---:|---:|---:|---:|"]
    for run in range(args.runs):
        for spec in args.target:
            name, base = spec.split("=", 1)
            r = one_run(base, args.prompt_words)
            lines.append(f"| {name} | {run + 1} | {r['a_gap_p50_ms']:.0f} | {r['a_gap_max_during_join_ms']:.0f} | "
                         f"{r['a_events_during_join']} | {r['b_answer_s']:.1f} |")
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "a") as f:
            f.write(text)


if __name__ == "__main__":
    main()
