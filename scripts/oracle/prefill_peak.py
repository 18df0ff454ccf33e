"""Peak MLX memory of mlx-lm's generate_step over a prompt (the prefill-memory oracle).

Usage: prefill_peak.py --model DIR --prompt-tokens 1,2,3 [--max-tokens 1] [--prefill-step-size 2048]
Prints {"peak_memory_bytes": N}, measured from just after the model is loaded.
"""
import argparse
import json
from pathlib import Path

import mlx.core as mx
from mlx_lm.generate import generate_step
from mlx_lm.utils import load_model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-tokens", required=True)
    ap.add_argument("--max-tokens", type=int, default=1)
    ap.add_argument("--prefill-step-size", type=int, default=2048)
    a = ap.parse_args()
    model, _ = load_model(Path(a.model))
    ids = [int(x) for x in a.prompt_tokens.split(",")]
    mx.reset_peak_memory()
    for _ in generate_step(mx.array(ids), model, max_tokens=a.max_tokens, prefill_step_size=a.prefill_step_size):
        pass
    print(json.dumps({"peak_memory_bytes": mx.get_peak_memory()}))


if __name__ == "__main__":
    main()
