#!/usr/bin/env python3
"""Create the larger random-weight llama models of the model pool's load-time figures.

Usage:
    make_pool_models.py --out DIR [--only NAME,...] [--force]

Two models of one shape, built with mlx-lm's own classes
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


def _llama(hidden, layers, inter, heads, kv_heads, head_dim, vocab):
    return {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "intermediate_size": inter,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "rms_norm_eps": 1e-5,
        "vocab_size": vocab,
        "rope_theta": 100000.0,
        "rope_traditional": False,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": True,
        "attention_bias": False,
        "mlp_bias": False,
        "hidden_act": "silu",
        "bos_token_id": 1,
        "eos_token_id": 2,
    }


SHAPE = _llama(2048, 16, 5632, 32, 8, 64, 49152)
MODELS = {
    "llama-pool-820m-q4": (SHAPE, {"bits": 4, "group_size": 64}),
    "llama-pool-820m-bf16": (SHAPE, None),
}


def main(argv=None):
    ap = model_args(__doc__)
    ap.add_argument("--tokenizer-from", default=str(ROOT / "models/smollm2-135m-instruct"))
    args = ap.parse_args(argv)
    src = Path(args.tokenizer_from)
    for name, d in models_to_build(ap, args, MODELS, RECIPE_VERSION):
        t0 = time.perf_counter()
        config, quant = MODELS[name]
        seed = seed_for(name)
        build_model_dir(d, "llama", config, seed, mx.bfloat16, quant)
        for f in TOKENIZER_FILES:
            if (src / f).exists():
                shutil.copy(src / f, d / f)
        write_marker(d, RECIPE_VERSION, name, seed=seed, quantization=quant)
        print(f"[built] {name} in {time.perf_counter() - t0:.2f}s -> {d}", file=sys.stderr)


if __name__ == "__main__":
    main()
