#!/usr/bin/env python3
"""Create the random-weight ~1.24 B-parameter llama models of the GPU benchmark.

Usage:
    make_gpu_bench_models.py --out DIR [--only NAME,...] [--force]

Llama-3.2-1B's shapes (hidden 2048, 16 layers, MLP 8192, 32 q / 8 kv heads, head_dim 64,
vocab 128256, tied embeddings), built with mlx-lm's own classes
(mlx_lm.models.llama.Model(ModelArgs.from_dict(config))) through scripts/oracle/common.py's
recipe (re-initialised from a fixed seed, cast to bfloat16 like `mlx_lm.convert --dtype
bfloat16`, the 4-bit one quantized like `mlx_lm.convert -q`: affine, group 64, embeddings
included) and written in the layout mlx_lm.utils.load_model (and our Models.load) reads:

    DIR/llama-1b-bf16   bfloat16 (~2.5 GB)
    DIR/llama-1b-q4     4-bit, group 64, quantized from bfloat16 (~0.7 GB)

Made where they run (the lent GPU), so that gigabytes need not travel. No tokenizer: the
benchmarks feed token ids. Idempotent like scripts/bench/make_bench_models.py.
"""

import sys
import time
from pathlib import Path

import mlx.core as mx
from mlx.utils import tree_flatten

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "oracle"))
from common import build_model_dir, model_args, models_to_build, seed_for, write_marker  # noqa: E402

RECIPE_VERSION = 1

LLAMA_1B = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 2048,
    "num_hidden_layers": 16,
    "intermediate_size": 8192,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "rms_norm_eps": 1e-5,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
}

MODELS = {
    "llama-1b-bf16": (LLAMA_1B, None),
    "llama-1b-q4": (LLAMA_1B, {"bits": 4, "group_size": 64}),
}


def main(argv=None):
    ap = model_args(__doc__)
    args = ap.parse_args(argv)
    for name, d in models_to_build(ap, args, MODELS, RECIPE_VERSION):
        t0 = time.perf_counter()
        config, quant = MODELS[name]
        seed = seed_for(name)
        model = build_model_dir(d, "llama", config, seed, mx.bfloat16, quant)
        n = sum(v.size for _, v in tree_flatten(model.parameters()))
        write_marker(d, RECIPE_VERSION, name, seed=seed, stored_elements=int(n), quantization=quant)
        print(f"[built] {name} ({n} stored elements) in {time.perf_counter() - t0:.2f}s -> {d}", file=sys.stderr)


if __name__ == "__main__":
    main()
