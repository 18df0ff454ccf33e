#!/usr/bin/env python3
"""Live mlx-lm prompt-cache oracle: mlx_lm.server's serial reuse path, request after request.

Usage:
    prompt_cache.py --model DIR --vocab V --seed S --base-length N --max-tokens M
                    --prefill-step-size P [--out FILE.json]
                    [--kv-bits B [--kv-group-size G] [--quantized-kv-start Q]] [--sharded]

With --sharded (run under `mlx.launch -n N`) the model is this rank's part, loaded by mlx-lm's
sharded_load (common.sharded_model); every rank serves the requests over its own cache (of its
slice of the KV state), rank 0 writes the document.

One mlx_lm.models.cache.LRUPromptCache (mlx_lm.server's default size 10) serves four requests
in order, exactly as ResponseGenerator._serve_single does:
    cache, rest = prompt_cache.fetch_nearest_cache(model_key, prompt)
    cache = cache or make_prompt_cache(model)
    for token, logprobs in generate_step(mx.array(rest), model, prompt_cache=cache,
                                         max_tokens=M, prefill_step_size=P, [kv_bits...]): ...
    prompt_cache.insert_cache(model_key, prompt + generated, cache)
(generate_step is the engine under stream_generate; greedy, no stop tokens.)

The requests, built from a seeded random base prompt A of N tokens (ids in [0, V)):
    0: A                                   nothing cached
    1: A + gen0 + 7 new tokens             a shorter cached prefix (the whole first entry)
    2: A[:N // 2 + 3] + 9 new tokens       a longer cached entry trimmed to the shared part
    3: (request 2 + gen2)[:-3]             the prompt is a prefix of a cached entry: len - 1 kept

Output (to --out, or stdout):
{"mlx_version", "mlx_lm_version", "model", "max_tokens", "prefill_step_size", "kv_bits",
 "kv_group_size", "quantized_kv_start",
 "requests": [{"prompt": [int], "cached_tokens": int, "tokens": [int],
               "logprobs_dtype": str,
               "logprobs_sha256": [hex per generated token, of the [V] logprobs' raw bytes],
               "cache_kind": "dense"|"quantized"   # layer 0 after the request (informative)
              }]}
"""

import argparse
import random
from pathlib import Path

import mlx.core as mx
from mlx_lm.generate import generate_step
from mlx_lm.models.cache import LRUPromptCache, make_prompt_cache
from mlx_lm.utils import load_model

from common import greedy_steps, prompt_cache_requests, sharded_model, versions, write_json, writes_output


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--base-length", type=int, default=40)
    ap.add_argument("--max-tokens", type=int, default=8)
    ap.add_argument("--prefill-step-size", type=int, default=2048)
    ap.add_argument("--kv-bits", type=int, default=None)
    ap.add_argument("--kv-group-size", type=int, default=64)
    ap.add_argument("--quantized-kv-start", type=int, default=5000)
    ap.add_argument("--out", default=None)
    ap.add_argument("--sharded", action="store_true")
    args = ap.parse_args(argv)

    kv = {}
    if args.kv_bits is not None:
        kv = {"kv_bits": args.kv_bits, "kv_group_size": args.kv_group_size,
              "quantized_kv_start": args.quantized_kv_start}

    model = sharded_model(args.model) if args.sharded else load_model(Path(args.model))[0]
    rng = random.Random(args.seed)

    def fresh(n):
        return [rng.randrange(args.vocab) for _ in range(n)]

    prompt_cache = LRUPromptCache(10)
    key = "model"
    results = []

    def serve(prompt):
        cache, rest = prompt_cache.fetch_nearest_cache(key, prompt)
        cached = len(prompt) - len(rest)
        if cache is None:
            cache = make_prompt_cache(model)
        tokens, shas, dtype = greedy_steps(generate_step(
            mx.array(rest), model, prompt_cache=cache, max_tokens=args.max_tokens,
            prefill_step_size=args.prefill_step_size, **kv))
        prompt_cache.insert_cache(key, prompt + tokens, cache)
        results.append({"prompt": list(prompt), "cached_tokens": cached, "tokens": tokens,
                        "logprobs_dtype": dtype, "logprobs_sha256": shas,
                        "cache_kind": "quantized" if hasattr(cache[0], "bits") else "dense"})
        return tokens

    prompt_cache_requests(serve, fresh, args.base_length)

    if not writes_output(args.sharded):
        return
    write_json({**versions(), "model": args.model, "max_tokens": args.max_tokens,
                "prefill_step_size": args.prefill_step_size, "kv_bits": args.kv_bits,
                "kv_group_size": args.kv_group_size if kv else None,
                "quantized_kv_start": args.quantized_kv_start if kv else None,
                "requests": results}, args.out)


if __name__ == "__main__":
    main()
