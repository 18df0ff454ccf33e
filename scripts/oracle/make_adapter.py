#!/usr/bin/env python3
"""Writes an adapter folder as mlx_lm.lora writes one, with random trained-looking values.

Usage:
    make_adapter.py --model DIR --out DIR --type lora|dora|full --num-layers N
                    [--rank R] [--scale S] [--keys k1,k2] [--seed K]

The model is loaded with mlx_lm.utils.load_model(Path(DIR)); then, as mlx_lm.lora's train_model
prepares it: model.freeze(), and for lora/dora mlx_lm.tuner.utils.linear_to_lora_layers(model,
num_layers, {"rank", "dropout": 0.0, "scale"[, "keys"]}, use_dora=...), for full the last
num_layers blocks unfrozen. The trainable parameters (dict(tree_flatten(model.trainable_parameters())),
what mlx_lm.lora saves) are given values a training run could leave -- lora_b (zeros at
initialisation) and m get seeded noise, lora_a keeps its random initialisation, full weights a
seeded perturbation -- and written with mx.save_safetensors to DIR/adapters.safetensors, with the
run's settings (including the training-only fields mlx_lm.lora also writes) to
DIR/adapter_config.json.
"""

import argparse
import json
from pathlib import Path

import mlx.core as mx
from mlx.utils import tree_flatten
from mlx_lm.tuner.utils import linear_to_lora_layers
from mlx_lm.utils import load_model


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--type", choices=["lora", "dora", "full"], required=True)
    ap.add_argument("--num-layers", type=int, required=True)
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--scale", type=float, default=20.0)
    ap.add_argument("--keys", default=None)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args(argv)

    mx.random.seed(args.seed)
    model, _ = load_model(Path(args.model))
    model.freeze()
    lora_parameters = {"rank": args.rank, "dropout": 0.0, "scale": args.scale}
    if args.keys:
        lora_parameters["keys"] = args.keys.split(",")
    if args.type == "full":
        for layer in model.layers[-max(args.num_layers, 0):]:
            layer.unfreeze()
    else:
        linear_to_lora_layers(model, args.num_layers, lora_parameters, use_dora=args.type == "dora")

    key = mx.random.key(args.seed)
    weights = {}
    for i, (name, p) in enumerate(sorted(tree_flatten(model.trainable_parameters()))):
        noise = mx.random.normal(p.shape, dtype=mx.float32, key=mx.random.split(key, i + 1)[-1])
        leaf = name.rsplit(".", 1)[-1]
        if leaf == "lora_b":
            v = 0.02 * noise
        elif leaf == "m":
            v = p * (1.0 + 0.2 * noise)
        elif leaf == "lora_a":
            v = p
        else:  # full: a perturbation of the trained weight, in its dtype
            v = p + (0.05 * noise * mx.abs(p).mean()).astype(p.dtype) if mx.issubdtype(p.dtype, mx.floating) else p
        weights[name] = v.astype(p.dtype)
    mx.eval(weights)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    mx.save_safetensors(str(out / "adapters.safetensors"), weights)
    config = {
        "model": args.model,
        "fine_tune_type": args.type,
        "num_layers": args.num_layers,
        "lora_parameters": lora_parameters,
        "batch_size": 4,
        "iters": 100,
        "learning_rate": 1e-5,
        "optimizer": "adam",
        "seed": args.seed,
    }
    with open(out / "adapter_config.json", "w") as f:
        json.dump(config, f, indent=4)


if __name__ == "__main__":
    main()
