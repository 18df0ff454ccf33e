#!/usr/bin/env python3
"""Live mlx-lm oracle for tensor-parallel greedy decoding: run under `mlx.launch -n N`.

Usage:
    mlx.launch -n 2 -- python sharded_greedy.py --cell NAME=DIR [--cell NAME=DIR ...]
        --prompts FILE.json --max-tokens N --prefill-step-size S [--out FILE.json]

Every rank loads each model with mlx-lm's own sharded_load (common.sharded_model:
load_model(lazy=True), model.shard(group) over mx.distributed.init(), eval, the closing
all_sum) and runs greedy.py's run_prompt over it: mlx_lm.generate.generate_step with its
greedy sampler, prefill_step_size S, max_tokens N. Rank 0 writes

{"mlx_version", "mlx_lm_version", "ranks": N, "max_tokens", "prefill_step_size",
 "cells": {NAME: [one greedy.py result per prompt: "prompt", "tokens", "logits0",
                  "logprobs0", ...]}}

(logits0 / logprobs0 as greedy.py encodes them: the raw bytes of the first step's logits and
logprobs, which every rank holds whole: the head is not sharded).
"""

import argparse

import mlx.core as mx
from mlx_lm.generate import generation_stream

from common import read_prompts, sharded_model, versions, write_json
from greedy import run_prompt


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cell", action="append", required=True, metavar="NAME=DIR")
    ap.add_argument("--prompts", required=True)
    ap.add_argument("--max-tokens", type=int, required=True)
    ap.add_argument("--prefill-step-size", type=int, required=True)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    prompts = read_prompts(args.prompts)
    cells = {}
    for spec in args.cell:
        name, _, path = spec.partition("=")
        model = sharded_model(path)
        cells[name] = [run_prompt(model, p, args.max_tokens, args.prefill_step_size, {}, {}) for p in prompts]
        del model
    # generate_step leaves the step it evaluated ahead of the last token queued, collectives
    # and all; MLX's stream threads outlive exit(), so the process finishes it first.
    mx.synchronize(generation_stream)
    group = mx.distributed.init()
    if group.rank() == 0:
        write_json({**versions(), "ranks": group.size(), "max_tokens": args.max_tokens,
                    "prefill_step_size": args.prefill_step_size, "cells": cells}, args.out)


if __name__ == "__main__":
    main()
