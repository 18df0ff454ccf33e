#!/usr/bin/env python3
"""Create the random-weight qwen3 models of the side-by-side benchmark.

Usage:
    make_bench_models.py --out DIR [--only NAME,...] [--force]

Six models, built with mlx-lm's own classes
(mlx_lm.models.qwen3.Model(ModelArgs.from_dict(config))), re-initialised from a
fixed seed, cast to bfloat16 the way `mlx_lm.convert --dtype bfloat16` casts,
quantized (all but the two bf16 ones) with `mlx_lm.utils.quantize_model` (affine, group 64,
embeddings included: its default predicate, like `mlx_lm.convert -q`), and
written with `mlx_lm.utils.save_model` + `mlx_lm.utils.save_config`, i.e. the
layout `mlx_lm.utils.load_model` (and our `Models.load`) reads back:

    DIR/qwen3-bench-bf16   hidden 768, 6 layers, MLP 2304, 12 q / 4 kv heads,
                           head_dim 64, vocab 16384, tied embeddings (~52 M params)
    DIR/qwen3-bench-q4     hidden 256, 4 layers, MLP 768, 4 q / 2 kv heads,
                           head_dim 64, vocab 8192, tied embeddings (~5 M params),
                           4-bit, group 64, quantized from bfloat16
    DIR/qwen3-bench-q4-135m  SmolLM2-135M's shape (hidden 576, 30 layers, MLP 1536,
                           9 q / 3 kv heads, head_dim 64, vocab 49152, tied) as qwen3,
                           4-bit, group 64, quantized from bfloat16: bfloat16 scales
                           and norms, so bfloat16 activations, the layout of most
                           mlx-community 4-bit checkpoints (~135 M params; MLX's
                           CPU kernel takes about a second per token on it)
    DIR/qwen3-bench-q3-135m, DIR/qwen3-bench-q6-135m
                           the same shape at 3 and 6 bits, group 64 (values that
                           straddle 32-bit words; mlx-community ships both widths)
    DIR/qwen3-bench-bf16-135m  the same shape unquantized, bfloat16 (~135 M params):
                           the dense matmuls of an unquantized SmolLM2-sized model

They are sized so that one run of the benchmark (128-token prompt + 64 greedy
decode tokens) takes a few seconds on a 2-core x86 CPU with MLX's CPU backend,
whose quantized matmuls with bfloat16 scales are much slower than its dense
bfloat16 ones (hence the much smaller 4-bit model).

Idempotent: a model directory is complete when its marker `.complete` (written
last) names the current recipe version; complete models are skipped,
incomplete ones are wiped and rebuilt. No tokenizer is written: the benchmark
feeds token ids.
"""

import sys
import time
from pathlib import Path

import mlx.core as mx
from mlx.utils import tree_flatten

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "oracle"))
from common import build_model_dir, model_args, models_to_build, seed_for, write_marker  # noqa: E402

# Bump when anything below, or the recipe in scripts/oracle/common.py, changes so that
# stale directories get rebuilt.
RECIPE_VERSION = 1


def _qwen3(hidden, layers, inter, heads, kv_heads, head_dim, vocab):
    return {
        "model_type": "qwen3",
        "architectures": ["Qwen3ForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "intermediate_size": inter,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "rms_norm_eps": 1e-6,
        "vocab_size": vocab,
        "max_position_embeddings": 40960,
        "rope_theta": 1000000.0,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
    }


# name -> (config, quant or None)
MODELS = {
    "qwen3-bench-bf16": (_qwen3(768, 6, 2304, 12, 4, 64, 16384), None),
    "qwen3-bench-q4": (_qwen3(256, 4, 768, 4, 2, 64, 8192), {"bits": 4, "group_size": 64}),
    "qwen3-bench-q4-135m": (_qwen3(576, 30, 1536, 9, 3, 64, 49152), {"bits": 4, "group_size": 64}),
    "qwen3-bench-q3-135m": (_qwen3(576, 30, 1536, 9, 3, 64, 49152), {"bits": 3, "group_size": 64}),
    "qwen3-bench-q6-135m": (_qwen3(576, 30, 1536, 9, 3, 64, 49152), {"bits": 6, "group_size": 64}),
    "qwen3-bench-bf16-135m": (_qwen3(576, 30, 1536, 9, 3, 64, 49152), None),
}


def build(name, out_dir: Path):
    config, quant = MODELS[name]
    seed = seed_for(name)
    model = build_model_dir(out_dir, "qwen3", config, seed, mx.bfloat16, quant)
    return seed, sum(v.size for _, v in tree_flatten(model.parameters()))


def main(argv=None):
    ap = model_args(__doc__)
    args = ap.parse_args(argv)

    for name, d in models_to_build(ap, args, MODELS, RECIPE_VERSION):
        t0 = time.perf_counter()
        seed, n_stored = build(name, d)
        write_marker(d, RECIPE_VERSION, name, seed=seed, stored_elements=int(n_stored), quantization=MODELS[name][1])
        print(f"[built] {name} in {time.perf_counter() - t0:.2f}s -> {d}", file=sys.stderr)


if __name__ == "__main__":
    main()
