#!/usr/bin/env python3
"""Run-to-run determinism of MLX's kernels on the default device, op by op.

Usage:
    determinism_probe.py [--repeats 5]

For a few shapes (the tiny parity models' and a 1 B llama's) and row counts M, evaluates the same
op on the same inputs --repeats times, each in its own mx.eval, and prints whether all outputs are
byte-identical: bfloat16 matmul, and affine 4- and 8-bit quantized_matmul (group 64, bfloat16
scales and biases, x @ W.T), as mlx-lm's Linear / QuantizedLinear call them.
"""

import argparse

import mlx.core as mx
import numpy as np


def same(outputs):
    ref = np.array(outputs[0].view(mx.uint16) if outputs[0].dtype == mx.bfloat16 else outputs[0])
    return all(np.array_equal(ref, np.array(o.view(mx.uint16) if o.dtype == mx.bfloat16 else o)) for o in outputs[1:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"mlx {mx.__version__}, default device {mx.default_device()}")
    mx.random.seed(0)
    for (k, n) in [(64, 1024), (64, 192), (2048, 8192), (2048, 2048)]:
        w = (mx.random.normal((n, k)) * 0.05).astype(mx.bfloat16)
        rows = []
        for m in [1, 2, 4, 8, 16, 22, 31, 32, 64, 127]:
            x = mx.random.normal((1, m, k)).astype(mx.bfloat16)
            res = {"matmul": same([mx.eval(o := x @ w.T) or o for _ in range(args.repeats)])}
            for bits in (4, 8):
                wq, s, b = mx.quantize(w, group_size=64, bits=bits)
                outs = []
                for _ in range(args.repeats):
                    o = mx.quantized_matmul(x, wq, s, b, transpose=True, group_size=64, bits=bits)
                    mx.eval(o)
                    outs.append(o)
                res[f"qmm{bits}"] = same(outs)
            rows.append(f"M={m}: " + " ".join(f"{op} {'same' if v else 'DIFFER'}" for op, v in res.items()))
        print(f"K={k} N={n}: " + " | ".join(rows), flush=True)


if __name__ == "__main__":
    main()
