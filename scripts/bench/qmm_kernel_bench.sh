#!/usr/bin/env bash
# Builds and runs scripts/bench/qmm_kernel_bench.cpp (see there): single-thread cost per weight of
# the shim's quantized_matmul kernels, hot and cold, M = 1, 2, 4, 8, per instruction set.
#   qmm_kernel_bench.sh [seconds per case] [avx2|avx512 ...]
#   QMM_WIDTHS=1 qmm_kernel_bench.sh [seconds]   # per bit width (3, 4, 5, 6, 8), ours vs MLX's kernel
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root"
mlx_dir="$(.venv/bin/python -c 'import mlx, os; print(list(mlx.__path__)[0])')"
mkdir -p build/bench
# Against the shim as built (its kernels are the slow files to compile; this tool adds one small one).
scripts/build_shim.sh
c++ -std=c++20 -O2 -ffp-contract=off -Wall -Wno-unused-function -I"$mlx_dir/include" \
  scripts/bench/qmm_kernel_bench.cpp -L"$root/build/native" -lmlxr -L"$mlx_dir/lib" -lmlx \
  -Wl,-rpath,"$root/build/native" -Wl,-rpath,"$mlx_dir/lib" -o build/bench/qmm_kernel_bench
exec build/bench/qmm_kernel_bench "$@"
