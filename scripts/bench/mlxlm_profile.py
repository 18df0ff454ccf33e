#!/usr/bin/env python3
"""Where a decode token's time goes in mlx-lm (mirror of dev.mlxring.perf.DecodeProfile).

Usage:
    mlxlm_profile.py --model DIR [--prompt-tokens 128] [--gen-tokens 64] [--runs 3] [--seed 42]
                     [--build-loop-s S]

Replays mlx_lm.generate.generate_step's decode loop (its _step: model call,
logits[:, -1, :], logits - logsumexp, argmax; async_eval pipelining on
generation_stream; clear_cache every 256 tokens) on the model loaded with
mlx_lm.utils.load_model, and times per token:
  build  - building one step's graph in Python (the per-token host overhead)
  async  - the mx.async_eval call
  wait   - blocking in .item() for the previous token
  sync mode: the same step built and then evaluated synchronously (compute = eval time)
Plus the bare per-op cost: mx.add of two 1-element arrays, graph only.
"""

import argparse
import time
from pathlib import Path

import mlx.core as mx
from mlx_lm.generate import generation_stream
from mlx_lm.models.cache import make_prompt_cache
from mlx_lm.utils import load_model

from mlxlm_bench import splitmix64_prompt


def make_step(model, cache):
    def _step(y):
        with mx.stream(generation_stream):
            logits = model(y[None], cache=cache)
            logits = logits[:, -1, :]
            logprobs = logits - mx.logsumexp(logits, keepdims=True)
            sampled = mx.argmax(logprobs, axis=-1)
            return sampled, logprobs.squeeze(0)

    return _step


def prefill(model, prompt):
    cache = make_prompt_cache(model)
    with mx.stream(generation_stream):
        if len(prompt) > 1:
            model(mx.array(prompt[:-1])[None], cache=cache)
            mx.eval([c.state for c in cache])
            mx.clear_cache()
    return cache


def pipelined(model, prompt, max_tokens):
    cache = prefill(model, prompt)
    _step = make_step(model, cache)
    build = asyn = wait = 0.0
    y, lp = _step(mx.array(prompt[-1:]))
    mx.async_eval(y, lp)
    first = last = 0.0
    tokens = []
    n = 0
    while True:
        if n != max_tokens:
            t0 = time.perf_counter()
            ny, nlp = _step(y)
            t1 = time.perf_counter()
            mx.async_eval(ny, nlp)
            t2 = time.perf_counter()
            if n > 0:
                build += t1 - t0
                asyn += t2 - t1
        if n == 0:
            mx.eval(y)
        if n == max_tokens:
            break
        t3 = time.perf_counter()
        tok = y.item()
        t4 = time.perf_counter()
        if n == 0:
            first = t4
        else:
            wait += t4 - t3
        tokens.append(tok)
        last = t4
        if n % 256 == 0:
            mx.clear_cache()
        y, lp = ny, nlp
        n += 1
    mx.synchronize()
    k = max_tokens - 1
    return [build / k, asyn / k, wait / k, (last - first) / k], tokens


def synchronous(model, prompt, max_tokens):
    cache = prefill(model, prompt)
    _step = make_step(model, cache)
    y, lp = _step(mx.array(prompt[-1:]))
    mx.eval(y, lp)
    build = compute = 0.0
    for _ in range(1, max_tokens):
        t0 = time.perf_counter()
        ny, nlp = _step(y)
        t1 = time.perf_counter()
        mx.eval(ny, nlp)
        ny.item()
        t2 = time.perf_counter()
        build += t1 - t0
        compute += t2 - t1
        y, lp = ny, nlp
    k = max_tokens - 1
    return [build / k, compute / k]


def build_loop(model, seconds):
    """ms per decode-step graph built with a fresh cache and thrown away, never evaluated."""
    t0 = time.perf_counter()
    end = t0 + seconds
    n = 0
    while True:
        cache = make_prompt_cache(model)
        y, lp = make_step(model, cache)(mx.array([1]))
        del y, lp, cache
        n += 1
        if time.perf_counter() >= end:
            break
    return (time.perf_counter() - t0) / n * 1e3


def op_overhead(n):
    a = mx.array([1])
    b = mx.array([2])
    t0 = time.perf_counter()
    for _ in range(n):
        mx.add(a, b)
    return (time.perf_counter() - t0) / n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--build-loop-s", type=float, default=0,
                    help="only time (for S seconds) building decode-step graphs that are never evaluated")
    args = ap.parse_args(argv)
    if args.build_loop_s > 0:
        model, _ = load_model(Path(args.model))
        build_loop(model, min(2.0, args.build_loop_s))
        print(f"graph build only (fresh cache, never evaluated): {build_loop(model, args.build_loop_s):.3f} ms/step")
        return

    op_overhead(200_000)
    print(f"op overhead (add, graph only): {op_overhead(1_000_000) * 1e9:.0f} ns/op")
    y = mx.argmax(mx.array([3, 1, 2]), axis=-1)
    mx.eval(y)
    n = 200_000
    t0 = time.perf_counter()
    for _ in range(n):
        y.item()
    print(f"item overhead (.item() of an evaluated array): {(time.perf_counter() - t0) / n * 1e9:.0f} ns")
    model, config = load_model(Path(args.model))
    prompt = splitmix64_prompt(args.seed, args.prompt_tokens, int(config["vocab_size"]))
    pipelined(model, prompt, args.gen_tokens)
    synchronous(model, prompt, args.gen_tokens)
    name = Path(args.model).name
    for r in range(args.runs):
        p, tokens = pipelined(model, prompt, args.gen_tokens)
        s = synchronous(model, prompt, args.gen_tokens)
        print(
            f"{name} run {r + 1}: pipelined per token: build {p[0] * 1e3:.2f} ms, async_eval {p[1] * 1e3:.2f} ms, "
            f"wait {p[2] * 1e3:.2f} ms, total {p[3] * 1e3:.2f} ms ({1 / p[3]:.2f} tok/s) | "
            f"sync per token: build {s[0] * 1e3:.2f} ms, compute {s[1] * 1e3:.2f} ms"
        )
    for _ in range(2):
        mx.synchronize()
        mx.clear_cache()
        active = mx.get_active_memory()
        mx.reset_peak_memory()
        t0 = time.perf_counter()
        cache = prefill(model, prompt)
        dt = time.perf_counter() - t0
        print(f"prefill {len(prompt) - 1} tokens: {dt:.3f} s, peak {mx.get_peak_memory() / 1e6:.1f} MB "
              f"(active before: {active / 1e6:.1f} MB)")
        del cache
    print("tokens", tokens[:8])


if __name__ == "__main__":
    main()
