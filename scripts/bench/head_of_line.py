#!/usr/bin/env python3
"""Head-of-line blocking: a short request's TTFT behind a long prompt, per prefill schedule.

Usage: head_of_line.py [--model DIR] [--long-words 5400] [--rounds 2] [--port 18191]
                       [--schedule NAME=FLAGS ...] [--out FILE.md]

Per round and schedule (schedules alternate, order reversed every other round): `mlx-ring serve`
is started with the schedule's flags (default schedules: "mlx-lm" = --prefill-share 1
--short-prompts-first off, the unit of mlx-lm's BatchGenerator, which mlx-ring ran before these
flags existed; "default" = no flags), then request L (a chat prompt of --long-words common words,
one token each, max_tokens 1, in another order every round so no prefix is cached) is sent and, 2 s
later, request S ("What is the capital of France?", max_tokens 32, streaming). Recorded: S's time
to its first content token (TTFT), S's total time, L's total time. The server is stopped between
runs. Nothing else should run on the machine.
"""

import argparse
import statistics
import threading
import time
from pathlib import Path

from serve_client import chat, served

# One token each for SmolLM2's tokenizer (with the leading space): N words are about N prompt tokens.
WORDS = ("the of and to in is it that was for on are with as his they be at one have this from or had by word but what"
         " some we can out other were all there when up use your how said an each she which do their time if will way"
         " about many then them write would like so these her long make thing see him two has look more day could go"
         " come did number sound no most people my over know water than call first who may down side been now find").split()


def one_run(args, flags, round_no):
    with served(args.model, args.port, flags.split()) as base:
        words = " ".join(WORDS[(i * 7919 + round_no * 13) % len(WORDS)] for i in range(args.long_words))
        long_done = {}

        def long_request():
            t0 = time.monotonic()
            r = chat(base, {"messages": [{"role": "user", "content": "Summarize: " + words}], "max_tokens": 1,
                            "temperature": 0.0}, False)
            long_done["s"] = time.monotonic() - t0
            long_done["prompt_tokens"] = r["usage"]["prompt_tokens"]

        t = threading.Thread(target=long_request)
        t.start()
        time.sleep(2.0)
        s0 = time.monotonic()
        first = chat(base, {"messages": [{"role": "user", "content": "What is the capital of France?"}],
                            "max_tokens": 32, "temperature": 0.0}, True)
        short_total = time.monotonic() - s0
        t.join()
        return {"ttft": first[0] - s0 if first else float("nan"), "short_total": short_total,
                "long_total": long_done["s"], "prompt_tokens": long_done["prompt_tokens"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="models/smollm2-135m-instruct")
    ap.add_argument("--long-words", type=int, default=5400)
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
