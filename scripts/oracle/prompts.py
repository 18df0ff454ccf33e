#!/usr/bin/env python3
"""Write deterministic random-token prompts for the greedy oracle.

Usage:
    prompts.py --vocab V --seed K --out FILE.json [--long L] [--lengths A,B,...]

Writes {"prompts": [[ids...], ...], "vocab": V, "seed": K, "lengths": [...]}
with token ids uniform in [0, V). Default lengths: 5, 23, L (L defaults to
70: with prefill_step_size 32, mlx-lm prefills 32 + 32 + 5 tokens and then
steps the last one, so the long prompt exercises chunked prefill with a tail).
--lengths replaces the default list entirely (--long is then ignored).
Same (V, K, lengths) -> same file, on any machine (Python's random.Random).
"""

import argparse
import json
import random
import sys


def make_prompts(vocab, seed, lengths):
    rng = random.Random(seed)
    return [[rng.randrange(vocab) for _ in range(n)] for n in lengths]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True, help="output file ('-' for stdout)")
    ap.add_argument("--long", type=int, default=70)
    ap.add_argument("--lengths", default=None, help="comma-separated prompt lengths")
    args = ap.parse_args(argv)
    if args.vocab < 1:
        ap.error("--vocab must be >= 1")

    lengths = [int(x) for x in args.lengths.split(",")] if args.lengths else [5, 23, args.long]
    if any(n < 1 for n in lengths):
        ap.error("prompt lengths must be >= 1")
    doc = {
        "vocab": args.vocab,
        "seed": args.seed,
        "lengths": lengths,
        "prompts": make_prompts(args.vocab, args.seed, lengths),
    }
    text = json.dumps(doc) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
