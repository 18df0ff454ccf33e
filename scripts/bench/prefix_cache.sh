#!/usr/bin/env bash
# Prefix-cache benchmark (issue 11, item 7): TTFT cold vs RAM hit vs SSD restore after a restart,
# ours (`./mlx-ring serve --prompt-cache-dir`) against mlx_lm.server's RAM cache, same prompts.
#
#   scripts/bench/prefix_cache.sh            # both models below, report -> build/bench/prefix_cache*.{md,json,png}
#   scripts/bench/prefix_cache.sh --model DIR --sizes 1024,4096 [--runs K] [--engines ours,mlxlm] [--out PATH]
#
# Default set: the long-context test model (build/bench/models/smol-long-bf16: SmolLM2's
# architecture and tokenizer shrunk to 4 layers, 32k context, random weights; built here by
# scripts/bench/make_prefix_cache_model.py) at ~1k, ~4k and ~16k prompt tokens, then the default
# model (SmolLM2-135M, 8k context) at ~1k. Needs `./mlx-ring setup` done (the serve jars).
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root", JDK 25 on PATH

.venv/bin/python scripts/bench/make_prefix_cache_model.py --out build/bench/models
if [[ $# -gt 0 ]]; then
  exec .venv/bin/python scripts/bench/prefix_cache.py "$@"
fi
.venv/bin/python scripts/bench/prefix_cache.py --model build/bench/models/smol-long-bf16 \
  --sizes 1024,4096,16384 --out build/bench/prefix_cache-long
.venv/bin/python scripts/bench/prefix_cache.py --model models/smollm2-135m-instruct \
  --sizes 1024 --out build/bench/prefix_cache-smollm2
