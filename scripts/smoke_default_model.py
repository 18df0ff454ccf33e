#!/usr/bin/env python3
"""Smoke test for a converted model directory (default: the embedded SmolLM2).

    python scripts/smoke_default_model.py [--model DIR]

Loads the directory with mlx_lm.load (offline), applies the chat template to a
few easy questions, generates greedily (~30 tokens) with mlx_lm.generate and
checks the answers. Exits non-zero when a checked answer is wrong (the Paris
question is the one that must pass; a wrong q/k permutation or tokenizer makes
the model talk nonsense).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = REPO_ROOT / "models" / "smollm2-135m-instruct"
MAX_TOKENS = 30

# (question, substrings of which one must appear (case-insensitive), or None = print only)
QUESTIONS = [
    ("What is the capital of France?", ["Paris"]),
    ("What is 2+2?", ["4", "four"]),
    ("What color is the sky on a clear day?", ["blue"]),
    # printed only: the 135M model names Shakespeare but then garbles the attribution
    ("Who wrote Romeo and Juliet?", None),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="model directory")
    args = ap.parse_args(argv)

    if not (args.model / "config.json").is_file():
        print(f"error: no model at {args.model} (run scripts/convert_gguf.py first)", file=sys.stderr)
        return 2

    from mlx_lm import generate, load
    from mlx_lm.sample_utils import make_sampler

    t0 = time.perf_counter()
    model, tokenizer = load(str(args.model))
    print(f"loaded {args.model} in {time.perf_counter() - t0:.2f}s")
    greedy = make_sampler(temp=0.0)

    failures = []
    for question, expected in QUESTIONS:
        prompt = tokenizer.apply_chat_template(
            [{"role": "user", "content": question}], add_generation_prompt=True
        )
        t = time.perf_counter()
        answer = generate(model, tokenizer, prompt, max_tokens=MAX_TOKENS, sampler=greedy)
        dt = time.perf_counter() - t
        ok = expected is None or any(e.lower() in answer.lower() for e in expected)
        status = "ok" if ok else "FAIL"
        if expected is None:
            status = "--"
        print(f"[{status}] Q: {question}\n       A: {answer.strip()!r}  ({dt:.2f}s)")
        if not ok:
            failures.append(question)

    if failures:
        print(f"FAILED: {len(failures)} check(s): {failures}")
        return 1
    print("smoke test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
