#!/usr/bin/env python3
"""Live mlx-lm sampling oracle (the sampling twin of greedy.py).

Usage:
    sample.py --model DIR --prompts FILE.json --max-tokens N \
              --prefill-step-size S [sampler / processor flags] \
              [--seed K] [--seed-mode per-prompt|once] [--top-logprobs T] \
              [--out FILE.json]

FILE.json: {"prompts": [[token ids...], ...]}

For every prompt this runs mlx-lm's own
    sampler = mlx_lm.sample_utils.make_sampler(temp, top_p, min_p,
                  min_tokens_to_keep, top_k=..., xtc_probability=...,
                  xtc_threshold=..., xtc_special_tokens=[...])
    logits_processors = mlx_lm.sample_utils.make_logits_processors(
                  logit_bias, repetition_penalty, repetition_context_size,
                  presence_penalty, presence_context_size,
                  frequency_penalty, frequency_context_size)
    mlx_lm.generate.generate_step(mx.array(prompt), model, max_tokens=N,
                  sampler=sampler, logits_processors=logits_processors,
                  prefill_step_size=S)
on the model loaded with mlx_lm.utils.load_model(Path(DIR)).

Seeding: --seed-mode per-prompt (default) calls mx.random.seed(K) before each
prompt (a request with seed K); --seed-mode once calls it once before the first
prompt and runs the prompts one after another on the continuing global state
(unseeded requests on an engine generator seeded with K).

Flags mirror the make_sampler / make_logits_processors arguments:
  --temp --top-p --min-p --min-tokens-to-keep --top-k --xtc-probability
  --xtc-threshold --xtc-special-tokens 1,2 --logit-bias '{"5": 2.5}'
  --repetition-penalty --repetition-context-size --presence-penalty
  --presence-context-size --frequency-penalty --frequency-context-size
Penalties default to None (off), context sizes to 20, as mlx-lm.
  --mask '{"modulus": M, ...}' appends a scripted token constraint (scripted_mask.py, a fresh
  one per prompt) after mlx-lm's processors: logits = mx.where(mask, logits, -inf). A prompt
  whose constraint runs dry stops at that step without its token, with "error": true.
  --llguidance FILE.json appends llguidance's own matcher instead (llg_processor.py: a spec
  object for every prompt, or a list of one spec or null per prompt; a fresh matcher per
  prompt); such a prompt stops at its EOS token, which is not reported (mlx_lm.server's stop
  on an EOS id), with "stopped": true.

Output (to --out, or stdout):
{
  "mlx_version", "mlx_lm_version", "model", "max_tokens", "prefill_step_size",
  "settings": {...the flags...},
  "load_model_random_draws": int,   # keys load_model draws from mx.random.state
  "results": [
    {"prompt": [int], "tokens": [int],
     "logprobs0": {"dtype", "shape": [V], "b64"},   # first step, full vector
     "logprobs_sha256": [hex],   # sha256 of every yielded logprobs vector's raw bytes
     "chosen_logprob": [float],  # logprobs[token].item() per token (mlx_lm.server)
     "top_logprobs": [[[id, logprob], ...], ...],   # _format_top_logprobs order, if T > 0
     "final_key": [k0, k1],      # mx.random.state[0] after the prompt (uint32 words)
     "error": bool,              # the scripted constraint ran dry (only with --mask)
     "stopped": bool}            # ended on its EOS (only with --llguidance)
  ]
}
Raw bytes are the array's little-endian bytes exactly as MLX holds them (bf16 and
f16 through a uint16 view, f32 through a uint32 view).
"""

import hashlib
import json
from pathlib import Path

import mlx.core as mx
from mlx_lm.generate import generate_step
from mlx_lm.sample_utils import make_logits_processors, make_sampler
from mlx_lm.utils import load_model

from common import apply_adapter, encode_array, oracle_args, raw_bytes, read_prompts, versions, write_json
from llg_processor import LlgProcessor, read_specs
from scripted_mask import ScriptedMask


def format_top_logprobs(logprobs, top_n):
    """mlx_lm.server._format_top_logprobs without the token strings."""
    if top_n <= 0:
        return []
    sorted_indices = mx.argpartition(-logprobs, kth=top_n - 1)
    top_indices = sorted_indices[:top_n].tolist()
    top_probs = logprobs[top_indices].tolist()
    return [[int(i), float(g)] for i, g in zip(top_indices, top_probs)]


def count_draws(seed, state, limit=100000):
    """How many `state = split(state)[0]` steps lead from key(seed) to `state`."""
    target = state.tolist()
    k = mx.random.key(seed)
    for i in range(limit):
        if k.tolist() == target:
            return i
        k = mx.random.split(k)[0]
    raise RuntimeError(f"the random state is not within {limit} draws of key({seed})")


def run_prompt(model, prompt, args, sampler, processors, llg_spec=None):
    tokens, digests, chosen, tops = [], [], [], []
    logprobs0 = None
    mask = ScriptedMask(json.loads(args.mask)) if args.mask else None
    if mask is not None:
        processors = list(processors) + [mask]
    stop = set()
    if llg_spec is not None:
        processors = list(processors) + [LlgProcessor(llg_spec)]
        stop = {int(t) for t in llg_spec["eos"]}
    error = False
    stopped = False
    for tok, logprobs in generate_step(
        mx.array(prompt),
        model,
        max_tokens=args.max_tokens,
        sampler=sampler,
        logits_processors=processors,
        prefill_step_size=args.prefill_step_size,
    ):
        if mask is not None and mask.failed_at(len(tokens)):
            error = True
            break
        if int(tok) in stop:
            stopped = True
            break
        if logprobs0 is None:
            logprobs0 = logprobs
        tokens.append(int(tok))
        digests.append(hashlib.sha256(raw_bytes(logprobs)).hexdigest())
        chosen.append(logprobs[tok].item())
        tops.append(format_top_logprobs(logprobs, args.top_logprobs))
    key = mx.random.state[0]
    mx.eval(key)
    return {
        "prompt": list(prompt),
        "tokens": tokens,
        "logprobs0": encode_array(logprobs0) if logprobs0 is not None else None,
        "logprobs_sha256": digests,
        "chosen_logprob": chosen,
        "top_logprobs": tops,
        "final_key": [int(v) for v in key.tolist()],
        "error": error,
        "stopped": stopped,
    }


def main(argv=None):
    ap = oracle_args(__doc__)
    ap.add_argument("--temp", type=float, default=0.0)
    ap.add_argument("--top-p", type=float, default=1.0)
    ap.add_argument("--min-p", type=float, default=0.0)
    ap.add_argument("--min-tokens-to-keep", type=int, default=1)
    ap.add_argument("--top-k", type=int, default=0)
    ap.add_argument("--xtc-probability", type=float, default=0.0)
    ap.add_argument("--xtc-threshold", type=float, default=0.1)
    ap.add_argument("--xtc-special-tokens", default="")
    ap.add_argument("--logit-bias", default=None, help="JSON object: token id -> bias")
    ap.add_argument("--repetition-penalty", type=float, default=None)
    ap.add_argument("--repetition-context-size", type=int, default=20)
    ap.add_argument("--presence-penalty", type=float, default=None)
    ap.add_argument("--presence-context-size", type=int, default=20)
    ap.add_argument("--frequency-penalty", type=float, default=None)
    ap.add_argument("--frequency-context-size", type=int, default=20)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--seed-mode", choices=["per-prompt", "once"], default="per-prompt")
    ap.add_argument("--top-logprobs", type=int, default=0)
    ap.add_argument("--mask", default=None, help="JSON object: a scripted token constraint (scripted_mask.py)")
    ap.add_argument("--llguidance", default=None, help="JSON file: llguidance constraint spec(s) (llg_processor.py)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--adapter", default=None, help="an adapter folder, applied as mlx_lm.utils.load applies adapter_path")
    args = ap.parse_args(argv)
    if args.mask and args.llguidance:
        ap.error("--mask and --llguidance are exclusive")

    prompts = read_prompts(args.prompts)
    llg_specs = read_specs(args.llguidance, len(prompts)) if args.llguidance else [None] * len(prompts)
    # Building the model draws random initial weights from the global key; count the draws
    # (mlx_lm.generate seeds before loading, so its sampling starts that many splits later).
    mx.random.seed(0)
    model, _config = load_model(Path(args.model))
    apply_adapter(model, args.adapter)
    load_draws = count_draws(0, mx.random.state[0])

    special = [int(t) for t in args.xtc_special_tokens.split(",") if t.strip()]
    logit_bias = None
    if args.logit_bias:
        logit_bias = {int(k): float(v) for k, v in json.loads(args.logit_bias).items()}
    sampler = make_sampler(
        args.temp,
        args.top_p,
        args.min_p,
        args.min_tokens_to_keep,
        top_k=args.top_k,
        xtc_probability=args.xtc_probability,
        xtc_threshold=args.xtc_threshold,
        xtc_special_tokens=special,
    )
    processors = make_logits_processors(
        logit_bias,
        args.repetition_penalty,
        args.repetition_context_size,
        args.presence_penalty,
        args.presence_context_size,
        args.frequency_penalty,
        args.frequency_context_size,
    )

    results = []
    if args.seed is not None and args.seed_mode == "once":
        mx.random.seed(args.seed)
    for p, llg_spec in zip(prompts, llg_specs):
        if args.seed is not None and args.seed_mode == "per-prompt":
            mx.random.seed(args.seed)
        results.append(run_prompt(model, p, args, sampler, processors, llg_spec))

    settings = {k: v for k, v in vars(args).items() if k not in ("model", "prompts", "out")}
    write_json({
        **versions(),
        "model": args.model,
        "max_tokens": args.max_tokens,
        "prefill_step_size": args.prefill_step_size,
        "settings": settings,
        "load_model_random_draws": load_draws,
        "results": results,
    }, args.out)


if __name__ == "__main__":
    main()
