#!/usr/bin/env python3
"""Live mlx-lm greedy-decoding oracle.

Usage:
    greedy.py --model DIR --prompts FILE.json --max-tokens N \
              --prefill-step-size S [--out FILE.json]
              [--kv-bits B [--kv-group-size G] [--quantized-kv-start Q]]
              [--max-kv-size M]

FILE.json: {"prompts": [[token ids...], ...]}

For every prompt this runs mlx-lm's own
    mlx_lm.generate.generate_step(mx.array(prompt), model,
                                  max_tokens=N, prefill_step_size=S)
with its default greedy sampler, its own generation_stream and a fresh prompt
cache (generate_step builds one), on the model loaded with
mlx_lm.utils.load_model(Path(DIR)).

With --max-kv-size the call also gets max_kv_size=M: make_prompt_cache then gives a model
without its own make_cache a RotatingKVCache(max_size=M, keep=4) per layer (a model with
make_cache, gemma3_text for one, ignores it).

With --kv-bits the call also gets kv_bits=B, kv_group_size=G (default 64) and
quantized_kv_start=Q (default 5000, mlx-lm's defaults and mlx_lm.server's): generate_step
then replaces each layer's KVCache by cache.to_quantized(G, B) after the first model call
that leaves it holding >= Q tokens (maybe_quantize_kv_cache). Without --kv-bits nothing
is passed and the output is exactly as before.

Output (to --out, or stdout):
{
  "mlx_version": str, "mlx_lm_version": str, "model": DIR,
  "max_tokens": N, "prefill_step_size": S,
  "results": [
    {"prompt": [int], "tokens": [int],
     "logits0":   {"dtype": "bfloat16"|"float32"|"float16", "shape": [V], "b64": str},
     "logprobs0": {"dtype": ..., "shape": [V], "b64": str},
     # informative:
     "prefill_chunks": [int],        # sizes of the prefill-only model calls
     "logits0_call_index": int,      # index of the model call logits0 comes from
     "logits0_call_input_len": int,  # tokens fed to that call (the final chunk)
     "prefill_s": float, "decode_s": float,
     "prefill_tok_per_s": float, "decode_tok_per_s": float,
     # only with --kv-bits (informative):
     "kv_quantized_from_call": int|null,  # first model call that attended over a
                                          # QuantizedKVCache (null: never converted)
     "kv_quantized_from_offset": int|null}  # the cache offset before that call
  ]
}
With --kv-bits the document also has "kv_bits", "kv_group_size", "quantized_kv_start".
b64 is base64 of the array's raw little-endian bytes exactly as MLX holds them
(bf16/f16 read through a uint16 view, f32 through a uint32 view).

logits0 is the model's raw forward output [0, -1, :] of the first `_step` call
of generate_step, i.e. the call that processes the final prompt chunk (in
mlx-lm 0.32.x that chunk is the last prompt token: the prefill loop feeds
min(S, remaining - 1) tokens per call while more than one token remains).
logprobs0 is the logprobs vector generate_step yields with the first token
(logits0 - logsumexp(logits0)).
"""

import inspect
import time
from pathlib import Path

import mlx.core as mx
from mlx_lm.generate import generate_step
from mlx_lm.utils import load_model

from common import apply_adapter, encode_array, oracle_args, read_prompts, versions, write_json


class RecordingModel:
    """Transparent wrapper: forwards calls/attributes, keeps one output.

    It keeps a reference to the (lazy) output of model call number
    `capture_index` and records the input length of every call. It neither
    evaluates nor casts anything, so the computation is unchanged.
    """

    def __init__(self, model, capture_index):
        object.__setattr__(self, "_model", model)
        object.__setattr__(self, "_capture_index", capture_index)
        object.__setattr__(self, "call_input_lens", [])
        object.__setattr__(self, "captured", None)
        # (offset before the call, quantized?) of layer 0's cache per call, read without
        # evaluating anything.
        object.__setattr__(self, "cache_states", [])

    def __call__(self, *args, **kwargs):
        cache = kwargs.get("cache")
        if cache:
            # the first cache with an offset (a hybrid model's layer 0 may hold an ArraysCache)
            kv = next((c for c in cache if hasattr(c, "offset")), None)
            if kv is not None:
                self.cache_states.append((kv.offset, hasattr(kv, "bits")))
        out = self._model(*args, **kwargs)
        idx = len(self.call_input_lens)
        inputs = args[0] if args else kwargs.get("inputs", kwargs.get("input_tokens"))
        self.call_input_lens.append(int(inputs.shape[-1]) if inputs is not None else -1)
        if idx == self._capture_index:
            object.__setattr__(self, "captured", out)
        return out

    def __getattr__(self, name):
        # Only reached for attributes not on the wrapper itself (layers,
        # make_cache if the model has one, args, ...). Missing attributes raise
        # AttributeError exactly as on the wrapped model.
        return getattr(self._model, name)


def prefill_chunks(n_prompt, step):
    """Sizes of the prefill-only calls generate_step makes (mirrors its loop)."""
    chunks = []
    remaining = n_prompt
    while remaining > 1:
        n = min(step, remaining - 1)
        chunks.append(n)
        remaining -= n
    return chunks, remaining


def run_prompt(model, prompt, max_tokens, step, kv_kwargs, cache_kwargs):
    chunks, last_len = prefill_chunks(len(prompt), step)
    rec = RecordingModel(model, capture_index=len(chunks))

    tokens = []
    logprobs0 = None
    t0 = time.perf_counter()
    t_first = None
    for tok, logprobs in generate_step(
        mx.array(prompt), rec, max_tokens=max_tokens, prefill_step_size=step, **kv_kwargs, **cache_kwargs
    ):
        if t_first is None:
            t_first = time.perf_counter()
            logprobs0 = logprobs
        tokens.append(tok)
    t_end = time.perf_counter()
    if t_first is None:
        t_first = t_end

    if rec.captured is None:
        raise RuntimeError("logits0 call was not observed")
    if rec.call_input_lens[: len(chunks)] != chunks or rec.call_input_lens[len(chunks)] != last_len:
        raise RuntimeError(
            f"unexpected call pattern {rec.call_input_lens[:len(chunks) + 1]}, "
            f"expected {chunks} + [{last_len}]"
        )
    logits0 = rec.captured[0, -1, :]

    prefill_s = t_first - t0
    decode_s = t_end - t_first
    n_dec = max(len(tokens) - 1, 0)
    extra = {}
    if kv_kwargs:
        first = next((i for i, (_, q) in enumerate(rec.cache_states) if q), None)
        extra = {
            "kv_quantized_from_call": first,
            "kv_quantized_from_offset": rec.cache_states[first][0] if first is not None else None,
        }
    return {
        "prompt": list(prompt),
        "tokens": [int(t) for t in tokens],
        "logits0": encode_array(logits0),
        "logprobs0": encode_array(logprobs0),
        "prefill_chunks": chunks,
        "logits0_call_index": len(chunks),
        "logits0_call_input_len": last_len,
        "prefill_s": prefill_s,
        "decode_s": decode_s,
        "prefill_tok_per_s": len(prompt) / prefill_s if prefill_s > 0 else None,
        "decode_tok_per_s": n_dec / decode_s if decode_s > 0 else None,
        **extra,
    }


def kv_settings(kv_kwargs):
    """The effective kv_bits / kv_group_size / quantized_kv_start (generate_step's defaults
    where not given); empty without --kv-bits."""
    if not kv_kwargs:
        return {}
    params = inspect.signature(generate_step).parameters
    return {k: kv_kwargs.get(k, params[k].default) for k in ("kv_bits", "kv_group_size", "quantized_kv_start")}


def main(argv=None):
    ap = oracle_args(__doc__)
    ap.add_argument("--out", default=None)
    ap.add_argument("--kv-bits", type=int, default=None)
    ap.add_argument("--kv-group-size", type=int, default=None)
    ap.add_argument("--quantized-kv-start", type=int, default=None)
    ap.add_argument("--max-kv-size", type=int, default=None)
    ap.add_argument("--adapter", default=None, help="an adapter folder, applied as mlx_lm.utils.load applies adapter_path")
    args = ap.parse_args(argv)
    kv_kwargs = {}
    if args.kv_bits is not None:
        kv_kwargs["kv_bits"] = args.kv_bits
        if args.kv_group_size is not None:
            kv_kwargs["kv_group_size"] = args.kv_group_size
        if args.quantized_kv_start is not None:
            kv_kwargs["quantized_kv_start"] = args.quantized_kv_start
    elif args.kv_group_size is not None or args.quantized_kv_start is not None:
        ap.error("--kv-group-size and --quantized-kv-start need --kv-bits")
    cache_kwargs = {} if args.max_kv_size is None else {"max_kv_size": args.max_kv_size}

    prompts = read_prompts(args.prompts)
    model, _config = load_model(Path(args.model))
    apply_adapter(model, args.adapter)

    results = [run_prompt(model, p, args.max_tokens, args.prefill_step_size, kv_kwargs, cache_kwargs)
               for p in prompts]
    write_json({
        **versions(),
        "model": args.model,
        "max_tokens": args.max_tokens,
        "prefill_step_size": args.prefill_step_size,
        **kv_settings(kv_kwargs),
        **cache_kwargs,
        "results": results,
    }, args.out)


if __name__ == "__main__":
    main()
