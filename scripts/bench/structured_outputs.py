#!/usr/bin/env python3
"""Structured outputs' cost on decode speed: the same requests with and without a JSON schema.

Usage: structured_outputs.py [--model DIR] [--port 18192] [--rounds 3] [--max-tokens 128]
                             [--requests 4] [--rows 8] [--schema story|words] [--out FILE.md]

Starts `mlx-ring serve` (defaults) once, then per round and phase (the order reversed every other
round): B=1 - `--requests` streaming requests one after another, free text and then, in the
other phase, with response_format json_schema (--schema story: {"story": string}, which a row may close
early; words: an array of at least 400 short strings, which no row can finish within max_tokens, so
both phases read the same number of tokens); rows - `--rows` concurrent streaming
requests, free against every row constrained. Prompt "Write a long story about <topic>." with a
different topic per request (no prefix reuse across phases beyond the template), temperature 0,
max_tokens --max-tokens. Decode tok/s of a B=1 request: (content tokens - 1) / (last token time -
first token time); of a rows phase: all its content tokens / its wall time (aggregate), and the
median of its rows' own decode rates (per row: free of how early rows end). Reported: medians per
phase and the constrained/free ratios. Nothing else should run on the machine.
"""

import argparse
import concurrent.futures
import json
import statistics
import time
from pathlib import Path

from serve_client import chat, served

SCHEMAS = {
    # an object that may close early: constrained rows end sooner than free ones
    "story": {"type": "object", "properties": {"story": {"type": "string"}}, "required": ["story"],
              "additionalProperties": False},
    # at least 400 words in an array: no row can end before max_tokens, so every phase reads as many tokens
    "words": {"type": "array", "items": {"type": "string", "maxLength": 12}, "minItems": 400},
}
SCHEMA = SCHEMAS["story"]
TOPICS = ["a lighthouse", "a dragon", "a river", "a clockmaker", "a comet", "an old library", "a fox", "a storm",
          "a violin", "a desert town", "a robot", "a glacier"]


def stream(base, topic, constrained, max_tokens):
    body = {"messages": [{"role": "user", "content": f"Write a long story about {topic}."}],
            "max_tokens": max_tokens, "temperature": 0.0}
    if constrained:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "story", "schema": SCHEMA}}
    return chat(base, body, True)


def b1(base, constrained, args, r):
    rates = []
    for i in range(args.requests):
        t = stream(base, TOPICS[(r * args.requests + i) % len(TOPICS)], constrained, args.max_tokens)
        if len(t) > 2:
            rates.append((len(t) - 1) / (t[-1] - t[0]))
    return statistics.median(rates)


def rows(base, constrained, args, r):
    """(aggregate tok/s over the phase's wall time, median per-row decode tok/s)."""
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.rows) as pool:
        outs = list(pool.map(lambda i: stream(base, TOPICS[(r + i) % len(TOPICS)], constrained, args.max_tokens),
                             range(args.rows)))
    wall = time.monotonic() - t0
    per_row = [(len(t) - 1) / (t[-1] - t[0]) for t in outs if len(t) > 2]
    return sum(len(t) for t in outs) / wall, statistics.median(per_row), statistics.mean(len(t) for t in outs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="models/smollm2-135m-instruct")
    ap.add_argument("--port", type=int, default=18192)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--schema", choices=sorted(SCHEMAS), default="story")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    global SCHEMA
    SCHEMA = SCHEMAS[args.schema]
    res = {k: [] for k in ("b1_free", "b1_schema", "rows_free", "rows_schema", "rows_free_per_row",
                           "rows_schema_per_row", "rows_free_tokens", "rows_schema_tokens")}
    with served(args.model, args.port) as base:
        stream(base, "warm-up", True, 16)
        stream(base, "warm-up", False, 16)
        for r in range(args.rounds):
            order = [False, True] if r % 2 == 0 else [True, False]
            for constrained in order:
                res["b1_schema" if constrained else "b1_free"].append(b1(base, constrained, args, r))
            for constrained in order:
                agg, row, n = rows(base, constrained, args, r)
                key = "rows_schema" if constrained else "rows_free"
                res[key].append(agg)
                res[key + "_per_row"].append(row)
                res[key + "_tokens"].append(n)
            print("round %d: " % r + ", ".join("%s %.1f" % (k, v[-1]) for k, v in res.items()), flush=True)
    med = {k: statistics.median(v) for k, v in res.items()}
    lines = ["| phase | free tok/s | JSON schema tok/s | schema / free |", "|---|---:|---:|---:|",
             "| B=1 decode | %.1f | %.1f | %.3f |" % (med["b1_free"], med["b1_schema"], med["b1_schema"] / med["b1_free"]),
             "| %d rows, aggregate | %.1f | %.1f | %.3f |" % (args.rows, med["rows_free"], med["rows_schema"],
                                                             med["rows_schema"] / med["rows_free"]),
             "| %d rows, per row | %.1f | %.1f | %.3f |" % (args.rows, med["rows_free_per_row"],
                                                           med["rows_schema_per_row"],
                                                           med["rows_schema_per_row"] / med["rows_free_per_row"]),
             "| %d rows, mean tokens per row | %.0f | %.0f | |" % (args.rows, med["rows_free_tokens"],
                                                                 med["rows_schema_tokens"])]
    report = "\n".join(lines) + "\n\nrounds: %d, per-round values: %s\n" % (args.rounds, json.dumps(res))
    print(report)
    if args.out:
        Path(args.out).write_text(report)


if __name__ == "__main__":
    main()
