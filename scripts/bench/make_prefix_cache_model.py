#!/usr/bin/env python3
"""Create the long-context test model of the prefix-cache benchmark.

Usage:
    make_prefix_cache_model.py --out DIR [--force]

One random-weight llama (SmolLM2's architecture, shrunk) built with mlx-lm's own
classes (mlx_lm.models.llama.Model(ModelArgs.from_dict(config))) through
scripts/oracle/common.py's build_model_dir, in bfloat16, with SmolLM2's tokenizer
files copied from models/smollm2-135m-instruct (same vocabulary, 49152 ids), so
both servers (ours and mlx_lm.server) load it as a normal chat model:

    DIR/smol-long-bf16   hidden 256, 4 layers, MLP 768, 4 q / 2 kv heads,
                         head_dim 64, vocab 49152, tied embeddings,
                         max_position_embeddings 32768 (the default model has 8192)

It exists so the benchmark can run 16k-token prompts in minutes on a 2-core CPU;
its text is noise (random weights), which does not matter for timing.

Idempotent: a complete directory (marker `.complete` naming the recipe version)
is skipped.
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
ROOT = Path(__file__).resolve().parent.parent.parent
TOKENIZER_FROM = ROOT / "models" / "smollm2-135m-instruct"
TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json"]

CONFIG = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 256,
    "num_hidden_layers": 4,
    "intermediate_size": 768,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "rms_norm_eps": 1e-5,
    "vocab_size": 49152,
    "rope_theta": 100000.0,
    "rope_traditional": False,
    "max_position_embeddings": 32768,
    "tie_word_embeddings": True,
    "attention_bias": False,
    "mlp_bias": False,
    "hidden_act": "silu",
    "bos_token_id": 1,
    "eos_token_id": 2,
}
MODELS = {"smol-long-bf16": CONFIG}


def main(argv=None):
    ap = model_args(__doc__)
    args = ap.parse_args(argv)
    for name, d in models_to_build(ap, args, MODELS, RECIPE_VERSION):
        t0 = time.perf_counter()
        model = build_model_dir(d, "llama", MODELS[name], seed_for(name), mx.bfloat16, None)
        for f in TOKENIZER_FILES:
            shutil.copy(TOKENIZER_FROM / f, d / f)
        n = sum(v.size for _, v in tree_flatten(model.parameters()))
        write_marker(d, RECIPE_VERSION, name, seed=seed_for(name), stored_elements=int(n))
        print(f"[built] {name} in {time.perf_counter() - t0:.2f}s -> {d}", file=sys.stderr)


if __name__ == "__main__":
    main()
