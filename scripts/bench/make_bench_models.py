#!/usr/bin/env python3
"""Create the random-weight qwen3 models of the side-by-side benchmark.

Usage:
    make_bench_models.py --out DIR [--only NAME,...] [--force]

Two models, built with mlx-lm's own classes
(mlx_lm.models.qwen3.Model(ModelArgs.from_dict(config))), re-initialised from a
fixed seed, cast to bfloat16 the way `mlx_lm.convert --dtype bfloat16` casts,
quantized (the 4-bit one) with `mlx_lm.utils.quantize_model` (affine, group 64,
embeddings included: its default predicate, like `mlx_lm.convert -q`), and
written with `mlx_lm.utils.save_model` + `mlx_lm.utils.save_config`, i.e. the
layout `mlx_lm.utils.load_model` (and our `Models.load`) reads back:

    DIR/qwen3-bench-bf16   hidden 768, 6 layers, MLP 2304, 12 q / 4 kv heads,
                           head_dim 64, vocab 16384, tied embeddings (~52 M params)
    DIR/qwen3-bench-q4     hidden 256, 4 layers, MLP 768, 4 q / 2 kv heads,
                           head_dim 64, vocab 8192, tied embeddings (~5 M params),
                           4-bit, group 64, quantized from bfloat16

They are sized so that one run of the benchmark (128-token prompt + 64 greedy
decode tokens) takes a few seconds on a 2-core x86 CPU with MLX's CPU backend,
whose quantized matmuls with bfloat16 scales are much slower than its dense
bfloat16 ones (hence the much smaller 4-bit model).

Idempotent: a model directory is complete when its marker `.complete` (written
last) names the current recipe version; complete models are skipped,
incomplete ones are wiped and rebuilt. No tokenizer is written: the benchmark
feeds token ids.
"""

import argparse
import contextlib
import copy
import json
import shutil
import sys
import time
import zlib
from pathlib import Path

import mlx.core as mx
from mlx.utils import tree_flatten, tree_map_with_path, tree_unflatten

import mlx_lm
from mlx_lm.models import qwen3
from mlx_lm.utils import quantize_model, save_config, save_model

MARKER = ".complete"
# Bump when anything below changes so that stale directories get rebuilt.
RECIPE_VERSION = 1
RESID_GAIN = 8.0


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
}


def seed_for(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def reinit(model, seed):
    """Deterministic re-initialisation (float32), the recipe of the parity models.

    norms 1 + 0.1 N(0,1); embeddings 0.5 N(0,1); linear weights N(0,1)/sqrt(fan_in),
    times RESID_GAIN for o_proj/down_proj so that greedy decoding of a random model
    does not just echo its input.
    """
    key = mx.random.key(seed)
    flat = sorted(tree_flatten(model.parameters()), key=lambda kv: kv[0])
    keys = mx.random.split(key, len(flat))
    new = []
    for i, (path, p) in enumerate(flat):
        noise = mx.random.normal(p.shape, dtype=mx.float32, key=keys[i])
        if path.endswith("norm.weight"):
            v = 1.0 + 0.1 * noise
        elif path.endswith("embed_tokens.weight"):
            v = 0.5 * noise
        elif path.endswith(("o_proj.weight", "down_proj.weight")):
            v = RESID_GAIN * noise / (p.shape[-1] ** 0.5)
        elif path.endswith(".weight") and p.ndim == 2:
            v = noise / (p.shape[-1] ** 0.5)
        else:
            raise ValueError(f"unexpected parameter {path} {p.shape}")
        new.append((path, v))
    model.update(tree_unflatten(new))
    mx.eval(model.parameters())


def cast_like_convert(model, dtype):
    """The cast mlx_lm.convert applies for --dtype."""
    cast_predicate = getattr(model, "cast_predicate", lambda _: True)

    def set_dtype(k, v):
        if cast_predicate(k) and mx.issubdtype(v.dtype, mx.floating):
            return v.astype(dtype)
        return v

    model.update(tree_map_with_path(set_dtype, model.parameters()))
    mx.eval(model.parameters())


def build(name, out_dir: Path):
    config, quant = MODELS[name]
    config = copy.deepcopy(config)
    seed = seed_for(name)
    mx.random.seed(seed)
    model = qwen3.Model(qwen3.ModelArgs.from_dict(config))
    reinit(model, seed)
    cast_like_convert(model, mx.bfloat16)
    if quant is not None:
        with contextlib.redirect_stdout(sys.stderr):  # quantize_model prints an [INFO] line
            model, config = quantize_model(model, config, quant["group_size"], quant["bits"], mode="affine")
    tmp = out_dir.with_name("." + out_dir.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    save_model(tmp, model)
    save_config(config, config_path=tmp / "config.json")
    n_params = sum(v.size for _, v in tree_flatten(model.parameters()))
    if out_dir.exists():
        shutil.rmtree(out_dir)
    tmp.rename(out_dir)
    return seed, n_params


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--only", default=None, help="comma-separated model names (default: all)")
    ap.add_argument("--force", action="store_true", help="rebuild even if complete")
    args = ap.parse_args(argv)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = list(MODELS)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in MODELS]
        if unknown:
            ap.error(f"unknown model(s) {unknown}; known: {list(MODELS)}")

    for name in names:
        d = out / name
        marker = d / MARKER
        if not args.force and marker.exists():
            try:
                body = json.loads(marker.read_text())
            except ValueError:
                body = None
            if body and body.get("recipe_version") == RECIPE_VERSION:
                print(f"[skip] {name}: complete", file=sys.stderr)
                continue
        t0 = time.perf_counter()
        seed, n_stored = build(name, d)
        info = {
            "recipe_version": RECIPE_VERSION,
            "mlx_version": mx.__version__,
            "mlx_lm_version": mlx_lm.__version__,
            "name": name,
            "seed": seed,
            "stored_elements": int(n_stored),
            "quantization": MODELS[name][1],
        }
        marker.write_text(json.dumps(info, indent=1) + "\n")
        print(f"[built] {name} in {time.perf_counter() - t0:.2f}s -> {d}", file=sys.stderr)


if __name__ == "__main__":
    main()
