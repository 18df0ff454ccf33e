#!/usr/bin/env python3
"""Live mlx-lm prompt-cache oracle for a hybrid model (gated delta net + attention): requests
served from restored caches whose recurrent state was copied where mlx-ring checkpoints it.

Usage:
    hybrid_prompt_cache.py --model DIR --vocab V --seed S --base-length N --max-tokens M
                           --prefill-step-size P --checkpoint-tokens C [--out FILE.json]

A hybrid model's cache cannot be trimmed (mlx-lm's ArraysCache.is_trimmable() is False), so
mlx_lm.server's LRUPromptCache reuses such an entry only whole, as a prefix of the prompt. mlx-ring
also restores at checkpoints of the recurrent state taken during the prompt's prefill. This
oracle serves the requests with mlx-lm's own generate_step over copy.deepcopy'd caches:

  * each request runs generate_step(rest, model, prompt_cache=cache, max_tokens=M,
    prefill_step_size=P) (greedy), its prompt_progress_callback deep-copying the whole cache
    after a prefill chunk that ends at least C positions past the request's previous boundary
    (its restored prefix or its last copy): a checkpoint at that position;
  * after the request, its cache (holding prompt + generated) is an entry, restorable at its
    length and at its checkpoints;
  * a request restores the entry boundary b with the most positions such that b <= the prefix
    the entry shares with the prompt and b <= len(prompt) - 1 (b > 1; the oldest entry on a
    tie): the entry's own cache at its length, else the checkpoint's copy at b (its KV holds
    the same positions as the entry's KV trimmed to b); nothing to restore = a fresh cache.

The requests, from a seeded random base prompt A of N tokens (ids in [0, V)):
    0: A                                  nothing cached
    1: A + gen0 + 7 new tokens            the first entry, whole
    2: A[:N // 2 + 3] + 9 new tokens      the first entry's last checkpoint within the shared part
    3: (request 2 + gen2)[:-3]            request 2's entry has no boundary below; a checkpoint
    4: request 2 + gen2 + 5 new tokens    request 2's entry, whole (it was run from a checkpoint)

Output (to --out, or stdout): as prompt_cache.py's, with "checkpoint_tokens" and per request
"checkpoints": the positions copied during it.
"""

import argparse
import copy
import random
from pathlib import Path

import mlx.core as mx
from mlx_lm.generate import generate_step
from mlx_lm.models.cache import make_prompt_cache
from mlx_lm.utils import load_model

from common import greedy_steps, prompt_cache_requests, versions, write_json


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--base-length", type=int, default=40)
    ap.add_argument("--max-tokens", type=int, default=6)
    ap.add_argument("--prefill-step-size", type=int, default=8)
    ap.add_argument("--checkpoint-tokens", type=int, default=16)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    model = load_model(Path(args.model))[0]
    rng = random.Random(args.seed)

    def fresh(n):
        return [rng.randrange(args.vocab) for _ in range(n)]

    entries = []  # (tokens, cache at its length, {position: cache copy})
    results = []

    def shared(a, b):
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n

    def nearest(prompt):
        best, cache = 0, None
        for tokens, whole, checkpoints in entries:
            limit = min(shared(tokens, prompt), len(prompt) - 1)
            bounds = sorted([len(tokens)] + list(checkpoints))
            b = max([p for p in bounds if p <= limit], default=0)
            if b > 1 and b > best:
                best, cache = b, whole if b == len(tokens) else checkpoints[b]
        return best, (copy.deepcopy(cache) if cache is not None else None)

    def serve(prompt):
        cached, cache = nearest(prompt)
        if cache is None:
            cache = make_prompt_cache(model)
        checkpoints = {}
        last = [cached]

        def progress(processed, total):
            position = cached + processed
            if processed < total and args.checkpoint_tokens > 0 and position - last[0] >= args.checkpoint_tokens:
                checkpoints[position] = copy.deepcopy(cache)
                last[0] = position

        tokens, shas, dtype = greedy_steps(generate_step(
            mx.array(prompt[cached:]), model, prompt_cache=cache, max_tokens=args.max_tokens,
            prefill_step_size=args.prefill_step_size, prompt_progress_callback=progress))
        entries.append((list(prompt) + tokens, cache, checkpoints))
        results.append({"prompt": list(prompt), "cached_tokens": cached, "tokens": tokens,
                        "logprobs_dtype": dtype, "logprobs_sha256": shas,
                        "checkpoints": sorted(checkpoints)})
        return tokens

    p2, gen2 = prompt_cache_requests(serve, fresh, args.base_length)
    serve(p2 + gen2 + fresh(5))

    write_json({**versions(), "model": args.model, "max_tokens": args.max_tokens,
                "prefill_step_size": args.prefill_step_size, "checkpoint_tokens": args.checkpoint_tokens,
                "requests": results}, args.out)


if __name__ == "__main__":
    main()
