#!/usr/bin/env python3
"""Create the random-weight hybrid (qwen3_5) model of the prefix-cache TTFT benchmark.

Usage:
    make_hybrid_bench_model.py --out DIR [--only NAME,...] [--force]

    DIR/qwen3_5-bench-bf16   qwen3_5 (text): hidden 512, 8 layers (every 4th gated attention,
                             4 q / 2 kv heads of 128; the others gated delta nets, 4 key heads,
                             8 value heads, key/value head dims 64, conv kernel 4), MLP 1536,
                             vocab 32000, tied embeddings, bfloat16 (~41 M params)
    DIR/qwen3_5-bench-serve-bf16
                             the same shape with the default model's vocabulary (49152) and its
                             tokenizer files (models/smollm2-135m-instruct: tokenizer.json,
                             tokenizer_config.json, special_tokens_map.json), so a server (ours,
                             mlx_lm.server) can serve it; eos 2 as SmolLM2's (~47 M params)

Built as scripts/bench/make_bench_models.py builds its qwen3 models (mlx-lm's own class,
re-initialised from a fixed seed, cast like `mlx_lm.convert --dtype bfloat16`, written in the
layout mlx_lm.utils.load_model and our Models.load read). Idempotent (the marker names the recipe
version). The first has no tokenizer (its benchmark feeds token ids); the serve variant borrows
the default model's.
"""

import shutil
import sys
import time
from pathlib import Path

import mlx.core as mx
from mlx.utils import tree_flatten

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "oracle"))
from common import build_model_dir, model_args, models_to_build, seed_for, write_marker  # noqa: E402

RECIPE_VERSION = 1

MODELS = {
    "qwen3_5-bench-bf16": {
        "model_type": "qwen3_5",
        "architectures": ["Qwen3_5ForConditionalGeneration"],
        "hidden_size": 512,
        "num_hidden_layers": 8,
        "intermediate_size": 1536,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 128,
        "rms_norm_eps": 1e-6,
        "vocab_size": 32000,
        "max_position_embeddings": 32768,
        "full_attention_interval": 4,
        "linear_num_key_heads": 4,
        "linear_num_value_heads": 8,
        "linear_key_head_dim": 64,
        "linear_value_head_dim": 64,
        "linear_conv_kernel_dim": 4,
        "rope_parameters": {"type": "default", "rope_theta": 100000.0, "partial_rotary_factor": 0.25},
        "tie_word_embeddings": True,
    },
}


ROOT = Path(__file__).resolve().parents[2]
TOKENIZER_FROM = ROOT / "models" / "smollm2-135m-instruct"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
SERVE = dict(MODELS["qwen3_5-bench-bf16"], vocab_size=49152, eos_token_id=2, bos_token_id=1)
MODELS["qwen3_5-bench-serve-bf16"] = SERVE


def main(argv=None):
    ap = model_args(__doc__)
    args = ap.parse_args(argv)
    for name, d in models_to_build(ap, args, MODELS, RECIPE_VERSION):
        t0 = time.perf_counter()
        model = build_model_dir(d, "qwen3_5", MODELS[name], seed_for(name), mx.bfloat16, None)
        n = sum(v.size for _, v in tree_flatten(model.parameters()))
        if name == "qwen3_5-bench-serve-bf16":
            for f in TOKENIZER_FILES:
                shutil.copyfile(TOKENIZER_FROM / f, d / f)
        write_marker(d, RECIPE_VERSION, name, seed=seed_for(name), stored_elements=int(n))
        print(f"[built] {name} ({n / 1e6:.1f} M params) in {time.perf_counter() - t0:.2f}s -> {d}", file=sys.stderr)


if __name__ == "__main__":
    main()
