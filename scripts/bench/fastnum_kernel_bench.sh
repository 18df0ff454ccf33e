#!/usr/bin/env bash
# Builds and runs scripts/bench/fastnum_kernel_bench.cpp (see there): single-thread CPU ms per
# SmolLM2 forward pass of the fast tier's (--numerics fast) quantized matmul kernels, M = 1, 2, 4, 8, 16,
# per instruction set.
#   fastnum_kernel_bench.sh [seconds per case, default 0.3] [avx2|avx512 ...]
set -euo pipefail
source "$(dirname "$0")/common.sh"   # $root, cd "$root"
mlx_dir="$(.venv/bin/python -c 'import mlx, os; print(list(mlx.__path__)[0])')"
mkdir -p build/bench
scripts/build_shim.sh
c++ -std=c++20 -O2 -Wall -I"$mlx_dir/include" scripts/bench/fastnum_kernel_bench.cpp \
  -L"$root/build/native" -lmlxr -L"$mlx_dir/lib" -lmlx \
  -Wl,-rpath,"$root/build/native" -Wl,-rpath,"$mlx_dir/lib" -o build/bench/fastnum_kernel_bench
exec build/bench/fastnum_kernel_bench "$@"
