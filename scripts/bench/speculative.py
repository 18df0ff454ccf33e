#!/usr/bin/env python3
"""Speculative decoding's decode speed against none, through the real server, at B=1 or N streams.

Usage: speculative.py [--model DIR] [--port 18193] [--rounds 3] [--max-tokens 300]
                      [--ks 1,2,3] [--numerics exact,fast] [--streams 1] [--out FILE.md]
                      [--json FILE.json]

--json writes every round's figure and the acceptance counts, which plot_speculative.py draws.

With --streams N > 1, each (configuration, workload) sends N identical streaming requests at once
(one continuous batch, speculating rows inside it) and reports the aggregate decode tok/s: all
streams' content tokens over the time from the first stream's first token to the last stream's
last token.

Two workloads, greedy (temperature 0), one streaming chat request at a time:
  edit  - an agent-style edit: the prompt holds a ~400-token Python file (data/edit_source.py) and
          asks for the whole file back with one function renamed, so most of the answer is text the
          prompt already holds;
  story - free writing ("Write a long story about a lighthouse."), whose answer the prompt does not hold.
Per --numerics, one `serve --speculative ngram --prompt-cache-size 0` runs every configuration
through the request's "speculative" field: {"method": "off"} and {"method": "ngram",
"num_tokens": K} for each K of --ks. Each round sends every (configuration, workload) once, the
configurations' order reversed every other round, so a load drift on a shared machine falls on
both sides. Decode tok/s of a request: (content tokens - 1) / (last token time - first token
time). Reported per (numerics, workload, configuration): the median over rounds and the spread
(min..max), the speed-up against `off` of the same numerics (ratio of medians), whether every
answer of the configuration, over rounds and streams, is the one answer `off` gave, and for ngram the
acceptance rate (accepted / proposed tokens, from usage.speculative, summed over rounds). Greedy
requests stop proposing when their acceptance stays low (the server's adaptive stop), so `story`
shows the adaptive switch at work.
"""

import argparse
import json
import statistics
import threading
import time
import urllib.request
from pathlib import Path

from serve_client import ROOT, served

HERE = Path(__file__).resolve().parent
SYSTEM = "You are a coding assistant. You reply with code only."


def workloads():
    source = (HERE / "data" / "edit_source.py").read_text()
    edit = ("```python\n" + source + "```\n\nRename the function total_value to compute_total in the file above. "
            "Reply with the complete updated file in a python code block.")
    return {
        "edit": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": edit}],
        "story": [{"role": "user", "content": "Write a long story about a lighthouse."}],
    }


def decode_tps(times):
    if len(times) < 2 or times[-1] == times[0]:
        return 0.0
    return (len(times) - 1) / (times[-1] - times[0])


def stream_chat(base, body):
    """POST a streaming chat with include_usage: (content-token arrival times, usage, text)."""
    body = dict(body, model="default_model", stream=True, stream_options={"include_usage": True})
    req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    times, usage, text = [], None, []
    with urllib.request.urlopen(req, timeout=1800) as resp:
        for raw in resp:
            line = raw.decode().strip()
            if not line.startswith("data:") or line[5:].strip() == "[DONE]":
                continue
            chunk = json.loads(line[5:])
            choices = chunk.get("choices") or []
            if choices and (choices[0].get("delta") or {}).get("content"):
                times.append(time.monotonic())
                text.append(choices[0]["delta"]["content"])
            if chunk.get("usage"):
                usage = chunk["usage"]
    return times, usage, "".join(text)


def run_streams(base, body, n):
    """n copies of the request at once: (aggregate decode tok/s, [usage per stream])."""
    results = [None] * n

    def one(i):
        results[i] = stream_chat(base, body)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    firsts = [times[0] for times, _, _ in results if times]
    lasts = [times[-1] for times, _, _ in results if times]
    tokens = sum(len(times) for times, _, _ in results)
    span = max(lasts) - min(firsts) if firsts else 0
    return (tokens / span if span > 0 else 0.0), [usage for _, usage, _ in results], [t for _, _, t in results]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=str(ROOT / "models" / "smollm2-135m-instruct"))
    ap.add_argument("--port", type=int, default=18193)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=300)
    ap.add_argument("--ks", default="1,2,3")
    ap.add_argument("--numerics", default="exact,fast")
    ap.add_argument("--streams", type=int, default=1)
    ap.add_argument("--out")
    ap.add_argument("--json")
    a = ap.parse_args()
    ks = [int(k) for k in a.ks.split(",")]
    work = workloads()
    configs = [0] + ks
    tps = {}  # (numerics, k, workload) -> [tok/s per round]
    spec = {}  # (numerics, k, workload) -> [proposed, accepted] summed over rounds
    texts = {}  # (numerics, k, workload) -> the distinct answers over rounds and streams
    for numerics in a.numerics.split(","):
        flags = ["--numerics", numerics, "--speculative", "ngram", "--prompt-cache-size", "0"]
        with served(a.model, a.port, flags) as base:
            for r in range(a.rounds):
                for k in (configs if r % 2 == 0 else list(reversed(configs))):
                    for name, messages in work.items():
                        body = {"messages": messages, "max_tokens": a.max_tokens, "temperature": 0,
                                "speculative": {"method": "ngram", "num_tokens": k} if k else {"method": "off"}}
                        if a.streams > 1:
                            rate, usages, outs = run_streams(base, body, a.streams)
                        else:
                            times, usage, text = stream_chat(base, body)
                            rate, usages, outs = decode_tps(times), [usage], [text]
                        tps.setdefault((numerics, k, name), []).append(rate)
                        texts.setdefault((numerics, k, name), set()).update(outs)
                        for usage in usages:
                            s = (usage or {}).get("speculative")
                            if k and s:
                                acc = spec.setdefault((numerics, k, name), [0, 0])
                                acc[0] += s["proposed"]
                                acc[1] += s["accepted"]
                    print("round %d %s k=%d: %s" % (r + 1, numerics, k,
                          {w: round(tps[(numerics, k, w)][-1], 1) for w in work}), flush=True)
    what = "aggregate decode tok/s over %d streams" % a.streams if a.streams > 1 else "decode tok/s"
    lines = ["| numerics | workload | speculation | %s median (min..max) | vs off | acceptance |"
             " answer = off's |" % what,
             "|---|---|---|---|---|---|---|"]
    for numerics in a.numerics.split(","):
        for name in work:
            base_med = statistics.median(tps[(numerics, 0, name)])
            for k in configs:
                v = tps[(numerics, k, name)]
                med = statistics.median(v)
                acc = ""
                if k:
                    p, n = spec.get((numerics, k, name), (0, 0))
                    acc = "%d/%d = %.0f%%" % (n, p, 100.0 * n / p) if p else "0/0"
                same = texts[(numerics, k, name)] == texts[(numerics, 0, name)] and len(texts[(numerics, 0, name)]) == 1
                lines.append("| %s | %s | %s | %.1f (%.1f..%.1f) | %.2fx | %s | %s |" % (
                    numerics, name, "ngram k=%d" % k if k else "off", med, min(v), max(v), med / base_med, acc,
                    "" if not k else ("yes" if same else "no")))
    table = "\n".join(lines)
    print(table)
    if a.out:
        Path(a.out).write_text(table + "\n")
    if a.json:
        cells = [{"numerics": n, "k": k, "workload": w, "tok_s": v,
                  "proposed": spec.get((n, k, w), (0, 0))[0], "accepted": spec.get((n, k, w), (0, 0))[1]}
                 for (n, k, w), v in tps.items()]
        Path(a.json).write_text(json.dumps({"streams": a.streams, "rounds": a.rounds,
                                            "max_tokens": a.max_tokens, "cells": cells}, indent=1) + "\n")


if __name__ == "__main__":
    main()
