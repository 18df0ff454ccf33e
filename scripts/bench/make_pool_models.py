#!/usr/bin/env python3
"""Create the larger random-weight llama models of the model pool's load-time figures.

Usage:
    make_pool_models.py --out DIR [--only NAME,...] [--force]

Two models of one shape (SmolLM2-135M's config.json, scaled up), built with mlx-lm's own classes
(mlx_lm.models.llama.Model(ModelArgs.from_dict(config))), re-initialised from a fixed seed,
cast to bfloat16 the way `mlx_lm.convert --dtype bfloat16` casts, and written with
mlx_lm.utils.save_model + save_config (scripts/oracle/common.py's build_model_dir):

    DIR/llama-pool-820m-q4    hidden 2048, 16 layers, MLP 5632, 32 q / 8 kv heads, head_dim 64,
                              vocab 49152, tied embeddings (~0.82 B params), 4-bit, group 64
                              (quantized from bfloat16, embeddings included): ~0.46 GB
    DIR/llama-pool-820m-bf16  the same, unquantized bfloat16: ~1.64 GB

SmolLM2-135M's tokenizer and chat template (models/smollm2-135m-instruct) are copied beside the
weights, so the server takes chat requests to them; their answers are noise (random weights).
They only time a load and a cold first token at sizes the 135M default model does not reach.

Idempotent: a model directory is complete when its marker (written last) names the current
recipe version.
"""

import json
import shutil
import sys
import time
from pathlib import Path

import mlx.core as mx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "oracle"))
from common import build_model_dir, model_args, models_to_build, seed_for, write_marker  # noqa: E402

RECIPE_VERSION = 1
ROOT = Path(__file__).resolve().parent.parent.parent
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json")


# SmolLM2-135M's llama config (its config.json), scaled up; quantization decided per model below.
SHAPE = {
    "hidden_size": 2048,
    "num_hidden_layers": 16,
    "intermediate_size": 5632,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 64,
}
MODELS = {
    "llama-pool-820m-q4": {"bits": 4, "group_size": 64},
    "llama-pool-820m-bf16": None,
}


def config_from(src: Path):
    config = json.loads((src / "config.json").read_text())
    for key in ("quantization", "quantization_config"):
        config.pop(key, None)
    config.update(SHAPE)
    return config


def main(argv=None):
    ap = model_args(__doc__)
    ap.add_argument("--tokenizer-from", default=str(ROOT / "models/smollm2-135m-instruct"))
    args = ap.parse_args(argv)
    src = Path(args.tokenizer_from)
    config = config_from(src)
    for name, d in models_to_build(ap, args, MODELS, RECIPE_VERSION):
        t0 = time.perf_counter()
        quant = MODELS[name]
        seed = seed_for(name)
        build_model_dir(d, "llama", config, seed, mx.bfloat16, quant)
        for f in TOKENIZER_FILES:
            if (src / f).exists():
                shutil.copy(src / f, d / f)
        write_marker(d, RECIPE_VERSION, name, seed=seed, quantization=quant)
        print(f"[built] {name} in {time.perf_counter() - t0:.2f}s -> {d}", file=sys.stderr)


if __name__ == "__main__":
    main()
