#!/usr/bin/env python3
"""Whether two runs of scripts/oracle/greedy.py (same model, prompts, device) agree with each other.

Usage:
    oracle_consistency.py A.json B.json

Prints, per prompt, whether mlx-lm's greedy tokens and first-step logits bytes are the same in both
runs. On the CPU they always are; on a GPU some kernels may not be run-to-run deterministic, and
then byte parity with mlx-lm has no single answer to match. Exit 0 when every prompt agrees, 1 if not.
"""

import json
import sys


def main():
    a, b = (json.load(open(p)) for p in sys.argv[1:3])
    ok = True
    for i, (x, y) in enumerate(zip(a["results"], b["results"])):
        tokens = x["tokens"] == y["tokens"]
        logits = x["logits0"]["b64"] == y["logits0"]["b64"]
        ok &= tokens and logits
        print(f"mlx-lm vs mlx-lm prompt {i} ({len(x['prompt'])} tokens): tokens {'same' if tokens else 'DIFFER'},"
              f" logits0 bytes {'same' if logits else 'DIFFER'}")
    print(f"{a['model']}: mlx-lm run-to-run {'deterministic' if ok else 'NOT deterministic'} on these prompts")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
