#!/usr/bin/env python3
"""Sampling overhead per token in mlx-lm (the Python side of SamplingOverheadBenchmark).

Usage:
    sampling_overhead.py --vocab V --dtype float32|bfloat16 --iterations N --reps R
                         --warmup W [--out FILE.json]

Times, for each configuration below, the per-token work generate_step does
after the model's forward pass: the logits processors (with the token history
generate_step keeps: 64 prompt tokens, then every sampled token appended), the
logsumexp normalisation, the sampler, and mx.eval of the sampled token, on one
fixed [1, V] logits vector. Logits: 3 sin(0.7 i) + ((i * 2654435761) mod 1000)
/ 1000 in float64, cast to float32 (then to --dtype): the same vector
SamplingOverheadBenchmark.java builds. Prompt history ids: (37 i) mod V.

Output: {"mlx_version", "mlx_lm_version", "vocab", "dtype",
         "configs": {name: {"ns_per_token": [per rep], "median_ns": float,
                            "build_ns_per_token": [per rep], "median_build_ns": float}}}
ns_per_token is the whole step (graph building + evaluation); build_ns_per_token
only the graph building (the host-side overhead, Python here).
"""

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import mlx.core as mx
from mlx_lm.sample_utils import make_logits_processors, make_sampler

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "oracle"))
from common import versions, write_json  # noqa: E402  (scripts/oracle/common.py)

# The whole sampler chain and the whole logits-processor chain (every argument set).
SAMPLER_CHAIN = dict(
    temp=0.7, top_p=0.9, min_p=0.05, top_k=40, xtc_probability=0.5, xtc_threshold=0.1, xtc_special_tokens=[198, 2]
)
PROCESSOR_CHAIN = dict(
    logit_bias={9906: 2.0, 28: -100.0, 314: 1.5},
    repetition_penalty=1.1, repetition_context_size=20,
    presence_penalty=0.2, presence_context_size=20,
    frequency_penalty=0.1, frequency_context_size=20,
)
CONFIGS = {
    "greedy": dict(sampler={}, processors={}),
    "temp": dict(sampler=dict(temp=0.7), processors={}),
    "temp_top_p": dict(sampler=dict(temp=0.7, top_p=0.9), processors={}),
    "sampler_chain": dict(sampler=SAMPLER_CHAIN, processors={}),
    "processors": dict(sampler={}, processors=PROCESSOR_CHAIN),
    "full_chain": dict(sampler=SAMPLER_CHAIN, processors=PROCESSOR_CHAIN),
}


def make_logits(vocab, dtype):
    vals = [3.0 * math.sin(0.7 * i) + ((i * 2654435761) % 1000) / 1000.0 for i in range(vocab)]
    x = mx.array(vals, dtype=mx.float32)
    return x.astype(dtype)[None]


def run(config, logits, vocab, iterations):
    sampler = make_sampler(**config["sampler"])
    processors = make_logits_processors(**config["processors"])
    tokens = mx.array([(37 * i) % vocab for i in range(64)])
    y = mx.array([0], dtype=mx.uint32)
    mx.eval(tokens, y)
    build = 0
    t0 = time.perf_counter_ns()
    for _ in range(iterations):
        b0 = time.perf_counter_ns()
        x = logits
        if processors:
            tokens = mx.concat([tokens, y])
            for p in processors:
                x = p(tokens, x)
        logprobs = x - mx.logsumexp(x, keepdims=True)
        y = sampler(logprobs)
        build += time.perf_counter_ns() - b0
        mx.eval(y)
    return (time.perf_counter_ns() - t0) / iterations, build / iterations


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", type=int, default=49152)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    dtype = getattr(mx, args.dtype)
    logits = make_logits(args.vocab, dtype)
    mx.eval(logits)
    mx.random.seed(0)
    out = {}
    for name, config in CONFIGS.items():
        run(config, logits, args.vocab, args.warmup)
        reps = [run(config, logits, args.vocab, args.iterations) for _ in range(args.reps)]
        per_rep = [r[0] for r in reps]
        build = [r[1] for r in reps]
        out[name] = {
            "ns_per_token": per_rep,
            "median_ns": statistics.median(per_rep),
            "build_ns_per_token": build,
            "median_build_ns": statistics.median(build),
        }
    write_json({**versions(), "vocab": args.vocab, "dtype": args.dtype, "configs": out}, args.out, atomic=False)


if __name__ == "__main__":
    main()
