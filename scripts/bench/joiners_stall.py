#!/usr/bin/env python3
"""The worst stall a running stream sees while 1, 4 or 16 long prompts join at once, over HTTP.

(join_stall.py measures one joiner against the prompt-words knob of load.sh; this one joins
several prompts of mixed lengths together and reports their first-token times too.)

Per case: one streaming chat request that writes a long answer (the running stream) starts; once
it has produced --warm-tokens tokens, J joiners start at once, each a distinct prompt of about the
given length in words (one token each on the usual BPE vocabularies; the usage reports the
exact count), max_tokens 1. Reports the running stream's longest gap between two content events
from the joiners' start until the last joiner's first token (its worst stall), its median gap
before they joined, the joiners' time to first token, and whether the running stream was still
running when the last joiner got its token (if not, the stall covers only the overlap).

    scripts/bench/joiners_stall.py --target ours=http://127.0.0.1:8080 --case 4000 --case 500,1500,2500,4000 \\
        --case 16x500 [--rounds 2]

A case is a comma list of prompt lengths, or JxN for J joiners of N words. Servers are started by
the caller (any OpenAI-compatible server: ours, llama-server); --target NAME=URL repeats for
several, run alternately case by case (ABBA over rounds).
"""

import argparse
import json
import statistics
import threading
import time
import urllib.request

WORDS = ("the a of to and in is it you that he was for on are as with his they at be this from "
         "have or by one had not but what all were when we there can an your which their said if do "
         "will each about how up out them then she many some so these would other into has more her "
         "two like him see time could no make than first been its who now people my made over did "
         "down only way find use may water long little very after words called just where most know").split()

RUNNING = ("Write a very long story about a lighthouse keeper and the ships she watches over the years. "
           "Describe every ship, every storm and every visitor in detail.")


def post(url, body):
    body = dict(body, stream=True, temperature=0, stream_options={"include_usage": True})
    body.setdefault("model", "default_model")
    return urllib.request.urlopen(
        urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(),
                               {"Content-Type": "application/json"}), timeout=3600)


def events(resp):
    """Yields (kind, value, time): ('content', text, t) per content delta, ('usage', dict, t)."""
    for raw in resp:
        line = raw.decode().strip()
        if not line.startswith("data:") or line[5:].strip() == "[DONE]":
            continue
        chunk = json.loads(line[5:])
        now = time.monotonic()
        if chunk.get("usage"):
            yield "usage", chunk["usage"], now
        for c in chunk.get("choices") or []:
            if (c.get("delta") or {}).get("content"):
                yield "content", c["delta"]["content"], now


def prompt(words, tag):
    return "Request %s: " % tag + " ".join(WORDS[(i * 7 + len(tag)) % len(WORDS)] for i in range(words)) + \
        "\nSummarise the text above in one sentence."


def case(url, lengths, warm_tokens, max_running, tag):
    running_times = []
    joined = threading.Event()
    warm = threading.Event()

    def run():
        with post(url, {"messages": [{"role": "user", "content": RUNNING}], "max_tokens": max_running}) as r:
            for kind, _, t in events(r):
                if kind == "content":
                    running_times.append(t)
                    if len(running_times) >= warm_tokens:
                        warm.set()
        warm.set()

    ttft = [None] * len(lengths)
    prompt_tokens = [0] * len(lengths)

    def join(i, n):
        start = time.monotonic()
        with post(url, {"messages": [{"role": "user", "content": prompt(n, "%s-%d" % (tag, i))}],
                        "max_tokens": 1}) as r:
            for kind, value, t in events(r):
                if kind == "content" and ttft[i] is None:
                    ttft[i] = t - start
                if kind == "usage":
                    prompt_tokens[i] = value.get("prompt_tokens", 0)

    runner = threading.Thread(target=run)
    runner.start()
    warm.wait()
    start = time.monotonic()
    joiners = [threading.Thread(target=join, args=(i, n)) for i, n in enumerate(lengths)]
    for j in joiners:
        j.start()
    for j in joiners:
        j.join()
    end = start + max(x or 0 for x in ttft)
    joined.set()
    runner.join()
    before = [b - a for a, b in zip(running_times, running_times[1:]) if b <= start]
    # Gaps that end after the joiners started and begin before the last one's first token.
    during = [b - a for a, b in zip(running_times, running_times[1:]) if b > start and a < end]
    covered = bool(running_times) and running_times[-1] >= end
    if running_times and running_times[-1] < end:
        during.append(end - running_times[-1])  # the stream ended first: its last gap is open
    return {
        "joiners": lengths,
        "prompt_tokens": prompt_tokens,
        "gap_before_ms": 1000 * statistics.median(before[-20:]) if before else None,
        "worst_stall_ms": 1000 * max(during) if during else None,
        "ttft_ms": [round(1000 * x) if x is not None else None for x in ttft],
        "running_covered": covered,
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", action="append", required=True, help="NAME=URL")
    p.add_argument("--case", action="append", required=True)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--warm-tokens", type=int, default=8)
    p.add_argument("--running-tokens", type=int, default=4000)
    a = p.parse_args(argv)
    targets = [t.split("=", 1) for t in a.target]
    cases = []
    for c in a.case:
        if "x" in c:
            j, n = c.split("x")
            cases.append([int(n)] * int(j))
        else:
            cases.append([int(x) for x in c.split(",")])
    k = 0
    for rnd in range(a.rounds):
        for ci, lengths in enumerate(cases):
            order = targets if k % 2 == 0 else list(reversed(targets))
            k += 1
            for name, url in order:
                r = case(url, lengths, a.warm_tokens, a.running_tokens, "r%dc%d%s" % (rnd, ci, name))
                r.update(target=name, round=rnd + 1, at=time.strftime("%H:%M:%S", time.gmtime()),
                         load=open("/proc/loadavg").read().split()[0])
                print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
