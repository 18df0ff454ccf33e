#!/usr/bin/env python3
"""mlx-lm's side of BatchDecodeBenchmark's aggregate measurement (dev.mlxring.perf.BatchDecodeBenchmark).

Usage:
    mlxlm_batch_bench.py --model DIR [--rows 8,32] [--prompt-tokens 64] [--gen-tokens 48]
                         [--runs 3] [--prefill-step-size 128] [--seed 42]

For each N in --rows: N distinct prompts (splitmix64 ids from seed + 1 + i, as the Java side draws
them) inserted at once into mlx_lm.generate.BatchGenerator(model, prefill_step_size=S,
prefill_batch_size=N, completion_batch_size=N) with its greedy sampler; decode tok/s over the
span in which all N rows generate (tokens in it / its wall time) and the median step time, the
same definitions as the Java side. One warm-up pass, then --runs measured ones (median printed).
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import mlx.core as mx
from mlx_lm.generate import BatchGenerator
from mlx_lm.utils import load_model

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from mlxlm_bench import splitmix64_prompt  # noqa: E402


def aggregate(model, n, vocab, args):
    gen = BatchGenerator(model, prefill_step_size=args.prefill_step_size, prefill_batch_size=n,
                         completion_batch_size=n)
    gen.insert([splitmix64_prompt(args.seed + 1 + i, args.prompt_tokens, vocab) for i in range(n)],
               max_tokens=[args.gen_tokens] * n)
    start = end = prev = None
    steps = []
    tokens = 0
    done = 0
    while done < n:
        _, responses = gen.next()
        now = time.perf_counter()
        if len(responses) == n:
            if start is None:
                start = now
            else:
                steps.append(now - prev)
                tokens += n
            end = now
        prev = now
        done += sum(1 for r in responses if r.finish_reason is not None)
    gen.close()
    return tokens / (end - start), statistics.median(steps) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--rows", default="8,32")
    ap.add_argument("--prompt-tokens", type=int, default=64)
    ap.add_argument("--gen-tokens", type=int, default=48)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--prefill-step-size", type=int, default=128)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    model, _ = load_model(Path(args.model))
    vocab = model.args.vocab_size
    print(f"mlx {mx.__version__}, default device {mx.default_device()}, model {args.model}", flush=True)
    for n in [int(s) for s in args.rows.split(",")]:
        aggregate(model, n, vocab, args)  # warm-up
        agg, step = [], []
        for _ in range(args.runs):
            mx.reset_peak_memory()
            a, s = aggregate(model, n, vocab, args)
            agg.append(a)
            step.append(s)
        print(f"rows {n}: aggregate decode tok/s {[round(a, 2) for a in agg]} median {statistics.median(agg):.2f}"
              f" | step ms median {statistics.median(step):.1f} | peak {mx.get_peak_memory() / 1e6:.1f} MB",
              flush=True)


if __name__ == "__main__":
    main()
