#!/usr/bin/env bash
# Prefix-cache benchmark (issue 11, item 7): TTFT cold vs RAM hit vs SSD restore after a restart,
# ours (`./mlx-ring serve --prompt-cache-dir`) against mlx_lm.server's RAM cache, same prompts.
#
#   scripts/bench/prefix_cache.sh            # both models below, report -> build/bench/prefix_cache*.{md,json,png}
#   scripts/bench/prefix_cache.sh --model DIR --sizes 1024,4096 [--runs K] [--engines ours,mlxlm] [--out PATH]
#   scripts/bench/prefix_cache.sh --spill [--model DIR --prompt-tokens N --streams K --runs R]
#       # spill MB/s and decode tok/s while spilling vs the SSD tier off (scripts/bench/spill_load.py)
#   scripts/bench/prefix_cache.sh --cost [--model DIR --tokens N --runs R]
#       # the SSD tier's own costs at N tokens: spill MB/s, restore broken into disk lookup and
#       # KvSnapshots.restore (dev.mlxring.perf.PrefixCacheCost; default: the long model, 16384)
#
# Default set: the long-context test model (build/bench/models/smol-long-bf16: SmolLM2's
# architecture and tokenizer shrunk to 4 layers, 32k context, random weights; built here by
# scripts/bench/make_prefix_cache_model.py) at ~1k, ~4k and ~16k prompt tokens, then the default
# model (SmolLM2-135M, 8k context) at ~1k. Needs `./mlx-ring setup` done (the serve jars).
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root", JDK 25 on PATH

.venv/bin/python scripts/bench/make_prefix_cache_model.py --out build/bench/models
if [[ "${1:-}" == "--spill" ]]; then
  shift
  exec .venv/bin/python scripts/bench/spill_load.py "$@"
fi
if [[ "${1:-}" == "--cost" ]]; then
  shift
  mvn -q -B -DskipTests package -pl perf -am
  [[ " $* " == *" --model "* ]] || set -- --model build/bench/models/smol-long-bf16 "$@"
  exec java @"$root/jvm.args" ${JAVA_OPTS:-} -Dmlxring.home="$root" \
    -cp "perf/target/perf-0.1.0-SNAPSHOT.jar:perf/target/lib/*" dev.mlxring.perf.PrefixCacheCost "$@"
fi
if [[ $# -gt 0 ]]; then
  exec .venv/bin/python scripts/bench/prefix_cache.py "$@"
fi
.venv/bin/python scripts/bench/prefix_cache.py --model build/bench/models/smol-long-bf16 \
  --sizes 1024,4096,16384 --out build/bench/prefix_cache-long
.venv/bin/python scripts/bench/prefix_cache.py --model models/smollm2-135m-instruct \
  --sizes 1024 --out build/bench/prefix_cache-smollm2
