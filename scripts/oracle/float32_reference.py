#!/usr/bin/env python3
"""The fast numerics tier's oracle: a float32 (or float64) rendering of a quantized model, run by mlx-lm.

Usage:
    float32_reference.py --model DIR (--prompts FILE.json | --texts FILE.json) --out-dir DIR
                         [--dtype float32|float64]

--prompts: {"prompts": [[token ids...], ...]}; --texts: {"texts": ["...", ...]}, each encoded by
the model's own tokenizer (mlx_lm.utils.load_tokenizer, tokenizer.encode: the model's BOS rules).

The model is loaded with mlx_lm.utils.load_model(Path(DIR)); then every nn.QuantizedLinear and
nn.QuantizedEmbedding is replaced, as mlx_lm.utils.dequantize_model replaces them, by an
nn.Linear / nn.Embedding whose weight is

    mx.dequantize(w, scales.astype(dtype), biases.astype(dtype), group_size, bits, mode)

(the group parameters widened first, so each weight is scale * q + bias in `dtype`, not rounded
again to the checkpoint's float16/bfloat16 as dequantize_model's output would be), and every
other floating parameter is cast to `dtype` (--dtype, default float32). A quantized embedding's
lookup alone keeps the stored module's output (see LookupAsStored). That is the quantized
checkpoint's own model with no activation, accumulation or parameter rounding below `dtype`.

On the CPU, MLX's float32 matmul over the dequantized weights rounds as its quantized_matmul
does (scale * q + bias, then x * w, then the running sum, in order over K): for a model whose
activations are float32, the float32 rendering reproduces the exact tier's logits (bit for bit
on small models), so it cannot tell whether another float32 scheme is closer to the model.
--dtype float64 renders the same model in float64 (on the CPU stream: float64 runs only there),
a reference both float32 tiers can be measured against.

For each prompt one teacher-forced forward pass model(prompt[None], cache=make_prompt_cache(model))
gives the logits of every position, [L, vocab] in `dtype`, written raw little-endian to
out-dir/logits-<i>.bin; out-dir/reference.json lists them:
{"mlx_version": .., "mlx_lm_version": .., "model": DIR, "dtype": "float32"|"float64",
 "dequantized_modules": int, "results": [{"prompt": [int], "logits": "logits-0.bin", "shape": [L, V]}]}
"""

import argparse
import json
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
import numpy as np
from mlx.utils import tree_map, tree_unflatten
from mlx_lm.models.cache import make_prompt_cache
from mlx_lm.utils import load_model, load_tokenizer

from common import read_prompts, versions, write_json


class LookupAsStored(nn.Module):
    """A dequantized nn.QuantizedEmbedding whose lookup still returns what the checkpoint's does.

    A quantized embedding's lookup is mx.dequantize of the selected rows in the group parameters'
    dtype (float16 in SmolLM2): one rounding of the rows, no arithmetic a numeric tier changes
    (neither tier touches the lookup). Rendered in `dtype` it would differ from both tiers by that
    rounding, an error they share that then dominates the comparison (SmolLM2: logit RMS 0.003,
    while the tiers differ by a thousandth of it). So the lookup stays the stored module's, cast
    to `dtype` after; as_linear (a tied LM head, a matmul) uses the dequantized weight. The stored
    module is held by a closure, not as a child, so the cast of the parameters leaves it alone.
    """

    def __init__(self, stored, weight):
        super().__init__()
        self.weight = weight
        self._lookup = lambda x: stored(x)

    def __call__(self, x):
        return self._lookup(x).astype(self.weight.dtype)

    def as_linear(self, x):
        return x @ self.weight.T


def dequantize_to(model, dtype):
    """mlx_lm.utils.dequantize_model with the group parameters widened to `dtype` first (and the
    embeddings' lookups as stored: LookupAsStored)."""
    layers = []
    for name, m in model.named_modules():
        if isinstance(m, nn.QuantizedLinear):
            make = lambda w, m=m: nn.Linear(w.shape[1], w.shape[0], bias="bias" in m)
        elif isinstance(m, nn.QuantizedEmbedding):
            make = lambda w, m=m: LookupAsStored(m, w)
        else:
            continue
        w = mx.dequantize(m.weight, m.scales.astype(dtype), m.biases.astype(dtype),
                          m.group_size, m.bits, m.mode)
        d = make(w)
        d.weight = w
        if "bias" in m:
            d.bias = m.bias
        layers.append((name, d))
    if layers:
        model.update_modules(tree_unflatten(layers))
    return len(layers)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--prompts")
    src.add_argument("--texts")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    args = ap.parse_args()

    if args.prompts:
        prompts = read_prompts(args.prompts)
    else:
        tokenizer = load_tokenizer(Path(args.model))
        with open(args.texts) as f:
            prompts = [tokenizer.encode(t) for t in json.load(f)["texts"]]
    dtype = getattr(mx, args.dtype)
    mx.set_default_device(mx.cpu)
    model, _ = load_model(Path(args.model))
    n = dequantize_to(model, dtype)
    model.update(tree_map(lambda p: p.astype(dtype) if mx.issubdtype(p.dtype, mx.floating) else p,
                          model.parameters()))
    mx.eval(model.parameters())
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for i, prompt in enumerate(prompts):
        logits = model(mx.array(prompt)[None], cache=make_prompt_cache(model))[0]
        assert logits.dtype == dtype, logits.dtype
        mx.eval(logits)
        name = f"logits-{i}.bin"
        little = "<f8" if dtype == mx.float64 else "<f4"
        (out / name).write_bytes(np.array(logits).astype(little, copy=False).tobytes())
        results.append({"prompt": list(prompt), "logits": name, "shape": list(logits.shape)})
    write_json({**versions(), "model": args.model, "dtype": args.dtype, "dequantized_modules": n, "results": results},
               str(out / "reference.json"))


if __name__ == "__main__":
    main()
