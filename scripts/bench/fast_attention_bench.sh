#!/usr/bin/env bash
# The fast tier's batched decode attention alone (scripts/bench/fast_attention_bench.cpp says
# what it runs). Builds the shim, then the bench against it, then runs it:
#
#   scripts/bench/fast_attention_bench.sh ROWS POSITIONS [f32|f16|bf16] [cold|hot] [iterations]
#
# e.g. `32 150 f32 cold` against `32 150 f16 cold`: what half-precision keys and values would
# save a 32-row step on this machine.
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root"
mlx_dir="$(.venv/bin/python -c 'import mlx, os; print(list(mlx.__path__)[0])')"
mkdir -p build/bench
scripts/build_shim.sh > /dev/null
c++ -std=c++20 -O2 -ffp-contract=off -Wall -Wno-unused-function -I"$mlx_dir/include" -Imlx-native/src/main/c \
  scripts/bench/fast_attention_bench.cpp -L"$root/build/native" -lmlxr -L"$mlx_dir/lib" -lmlx \
  -Wl,-rpath,"$root/build/native" -Wl,-rpath,"$mlx_dir/lib" -o build/bench/fast_attention_bench
exec build/bench/fast_attention_bench "$@"
