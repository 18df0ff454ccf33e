#!/usr/bin/env python3
"""A tiny random-weight llama that speaks the default model's tokenizer, for the bounded CI soak
(SoakTest): the server path, sessions, KV caches and disconnects are the real ones, while a token
costs about a millisecond, so ~100 requests fit in the test budget even on a busy 2-core box.

Usage: make_soak_model.py --out DIR [--tokenizer-from models/smollm2-135m-instruct]

Built with mlx-lm's own llama classes (scripts/oracle/common.build_model_dir, fixed seed), then the
tokenizer files are copied next to it. Idempotent: a complete directory (marker `.complete`) is
left as it is.
"""
import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "oracle"))
import mlx.core as mx  # noqa: E402

from common import build_model_dir  # noqa: E402

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenizer-from", default="models/smollm2-135m-instruct")
    args = ap.parse_args()
    out, src = Path(args.out), Path(args.tokenizer_from)
    if (out / ".complete").exists():
        print(json.dumps({"model": str(out), "built": False}))
        return
    src_config = json.loads((src / "config.json").read_text())
    config = {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "rms_norm_eps": 1e-5,
        "vocab_size": src_config["vocab_size"],
        "max_position_embeddings": 2048,
        "rope_theta": 10000.0,
        "rope_traditional": False,
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": True,
        "bos_token_id": src_config.get("bos_token_id"),
        "eos_token_id": src_config.get("eos_token_id"),
    }
    build_model_dir(out, "llama", config, seed=20261130, dtype=mx.float32, quant=None)
    for f in TOKENIZER_FILES:
        if (src / f).exists():
            shutil.copy(src / f, out / f)
    (out / ".complete").write_text("soak model v1\n")
    print(json.dumps({"model": str(out), "built": True}))


if __name__ == "__main__":
    main()
