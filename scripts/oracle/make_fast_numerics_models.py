#!/usr/bin/env python3
"""Tiny random-weight quantized models for the fast numerics tier's oracle test
(FastNumericsOracleTest).

Usage:
    make_fast_numerics_models.py --out DIR [--only NAME,...] [--force]

Built as make_tiny_models.py builds its cells (mlx-lm's own model classes, common.build_model_dir:
re-initialised from a per-name seed, cast like mlx_lm.convert, quantized by
mlx_lm.utils.quantize_model, written by save_model + save_config), but quantized FROM float32 as
well as from bfloat16: the default model runs its matmuls on float32 activations, which
make_tiny_models.py's quantized cells (all from bfloat16) do not cover. Complete directories are
skipped (marker file), as there.
"""

from pathlib import Path

import mlx.core as mx

from common import build_model_dir, model_args, models_to_build, seed_for, write_marker
from make_tiny_models import LLAMA3_SCALING, _llama, _qwen2, _qwen3

RECIPE_VERSION = 1

# name -> (family, source dtype, config, quant)
CELLS = {
    # float32 activations, 4-bit groups of 32 (the default model's linear layers) and a tied,
    # 4-bit quantized embedding as the LM head.
    "llama-f32-q4g32": ("llama", mx.float32, _llama(128, 256, 512, tie=True), {"bits": 4, "group_size": 32}),
    # float32 activations, 8-bit groups of 64, an untied quantized LM head.
    "qwen3-f32-q8g64": ("qwen3", mx.float32, _qwen3(128, 256, 512, tie=False, head_dim=32),
                        {"bits": 8, "group_size": 64}),
    # bfloat16 activations (mlx-community's usual checkpoint), 4-bit groups of 128.
    "llama-bf16-q4g128": ("llama", mx.bfloat16, _llama(128, 256, 512, tie=False), {"bits": 4, "group_size": 128}),
    # float32 activations, q/k/v biases (qwen2), 4-bit groups of 64.
    "qwen2-f32-q4g64": ("qwen2", mx.float32, _qwen2(128, 256, 512, tie=True), {"bits": 4, "group_size": 64}),
    # The head sizes the fused block's attention has kernels for (64, 128; the cells above: 32),
    # with float16 and bfloat16 activations (FusedBlockTest).
    "llama-f16-q4g32-hd64": ("llama", mx.float16, _llama(256, 512, 512, tie=True), {"bits": 4, "group_size": 32}),
    "qwen3-bf16-q8g64-hd128": ("qwen3", mx.bfloat16, _qwen3(128, 256, 512, tie=False, head_dim=128),
                               {"bits": 8, "group_size": 64}),
    # float32 activations with llama3's rope (precomputed frequencies), 8-bit groups of 128: the
    # exact fused block's other rope (FusedBlockTest).
    "llama3-f32-q8g128": ("llama", mx.float32, _llama(128, 256, 512, tie=False, rope_scaling=LLAMA3_SCALING),
                          {"bits": 8, "group_size": 128}),
}


def main(argv=None):
    ap = model_args(__doc__)
    args = ap.parse_args(argv)
    for name, d in models_to_build(ap, args, CELLS, RECIPE_VERSION):
        family, dtype, config, quant = CELLS[name]
        build_model_dir(Path(d), family, config, seed_for(name), dtype, quant)
        write_marker(Path(d), RECIPE_VERSION, name)


if __name__ == "__main__":
    main()
