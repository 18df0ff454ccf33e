#!/usr/bin/env python3
"""Batch invariance, measured: does a greedy answer change when its request runs among others?

Starts `mlx-ring serve` on MODEL, asks each prompt of a fixed corpus alone (one request at a time:
a batch of one row, the serial graph), then all of them at once (STREAMS concurrent rows of one
batch), greedy, and compares each answer's token sequence and its per-token logprobs with the
solo run. Exact equality of logprobs means the row's arithmetic did not depend on its batch;
equal tokens with different logprobs means it did, but not enough to flip an argmax.

    scripts/bench/batch_invariance.py [--model models/smollm2-135m-instruct] [--streams 16]
        [--max-tokens 64] [--rounds 2] [--port 8391]

Prints one line per prompt and a summary; --json FILE writes the raw comparison.
"""

import argparse
import json
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_client import served, chat  # noqa: E402

CORPUS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Explain what a hash table is in two sentences.",
    "List three prime numbers greater than 50.",
    "Translate 'good morning' into Spanish and German.",
    "Why is the sky blue?",
    "Give me a short recipe for pancakes.",
    "What does HTTP stand for?",
    "Summarize the plot of Romeo and Juliet in one paragraph.",
    "Write a Python function that reverses a string.",
    "Name four planets of the solar system.",
    "What is the difference between a virus and a bacterium?",
    "Suggest a name for a friendly robot.",
    "How many minutes are there in a day? Show the arithmetic.",
    "Describe the color green to someone who cannot see.",
    "Tell me a fun fact about octopuses.",
]


def ask(base, question, max_tokens):
    body = {"messages": [{"role": "user", "content": question}], "max_tokens": max_tokens,
            "temperature": 0, "logprobs": True}
    r = chat(base, body, stream=False)
    content = r["choices"][0]["logprobs"]["content"]
    return [c["token"] for c in content], [c["logprob"] for c in content]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="models/smollm2-135m-instruct")
    p.add_argument("--streams", type=int, default=16, help="prompts asked at once (the corpus has 16)")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--rounds", type=int, default=2, help="concurrent rounds (the solo run is asked once)")
    p.add_argument("--port", type=int, default=8391)
    p.add_argument("--json", help="write the raw comparison here")
    a = p.parse_args(argv)
    if not 1 <= a.streams <= len(CORPUS):
        p.error("--streams must be 1..%d" % len(CORPUS))
    prompts = CORPUS[:a.streams]
    flags = ["--decode-concurrency", str(max(a.streams, 2)), "--temp", "0"]
    report = {"model": a.model, "streams": a.streams, "max_tokens": a.max_tokens, "rounds": []}
    with served(a.model, a.port, flags) as base:
        solo = [ask(base, q, a.max_tokens) for q in prompts]
        for rnd in range(a.rounds):
            together = [None] * len(prompts)

            def run(i):
                together[i] = ask(base, prompts[i], a.max_tokens)

            threads = [threading.Thread(target=run, args=(i,)) for i in range(len(prompts))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            rows = []
            for i, q in enumerate(prompts):
                (st, sl), (bt, bl) = solo[i], together[i]
                first_diff = next((k for k in range(min(len(st), len(bt))) if st[k] != bt[k]),
                                  None if len(st) == len(bt) else min(len(st), len(bt)))
                same_len = min(len(sl), len(bl)) if first_diff is None else first_diff
                rows.append({"prompt": q, "tokens_equal": first_diff is None, "first_token_diff": first_diff,
                             "logprobs_equal": first_diff is None and sl == bl,
                             "max_abs_logprob_diff": max((abs(x - y) for x, y in zip(sl[:same_len], bl[:same_len])),
                                                         default=0.0)})
            tok = sum(r["tokens_equal"] for r in rows)
            lp = sum(r["logprobs_equal"] for r in rows)
            print("round %d: tokens equal to the solo run %d/%d, logprobs bit-equal %d/%d"
                  % (rnd + 1, tok, len(rows), lp, len(rows)))
            for r in rows:
                print("  %-60s tokens %s%s, max |Δlogprob| %.3g" % (
                    r["prompt"][:60], "equal" if r["tokens_equal"] else "differ",
                    "" if r["tokens_equal"] else " from token %d" % r["first_token_diff"],
                    r["max_abs_logprob_diff"]))
            report["rounds"].append(rows)
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
