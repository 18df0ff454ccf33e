#!/usr/bin/env bash
# Builds and runs scripts/bench/dense_kernel_bench.cpp (see there): single-thread cost per weight of
# the shim's dense-matmul kernels (and of MLX's own matmul with `mlx`), hot and cold, M = 1..64.
#   dense_kernel_bench.sh [seconds per case] [avx2|avx512|mlx ...]     DENSE_DTYPE=bf16|f16|f32
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root"
mlx_dir="$(.venv/bin/python -c 'import mlx, os; print(list(mlx.__path__)[0])')"
mkdir -p build/bench
src=mlx-native/src/main/c
c++ -std=c++20 -O2 -ffp-contract=off -Wall -Wno-unused-function -I"$mlx_dir/include" \
  scripts/bench/dense_kernel_bench.cpp "$src/mlxr_qmm.cpp" "$src/mlxr_isa.cpp" "$src/mlxr_qmm_avx2.cpp" "$src/mlxr_qmm_avx512.cpp" \
  -L"$mlx_dir/lib" -lmlx -Wl,-rpath,"$mlx_dir/lib" -o build/bench/dense_kernel_bench
exec build/bench/dense_kernel_bench "$@"
