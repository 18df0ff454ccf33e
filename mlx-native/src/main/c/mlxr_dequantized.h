// Shared by the translation units of the exact quantized matmul over weights
// kept dequantized (opt-in: --dequantized-weights): mlxr_dequantized.cpp (the
// layout's construction, the MLX primitives) and the kernels
// (mlxr_dequantized_kernels.h), which are compiled into the quantized-matmul
// kernel files mlxr_qmm_avx2.cpp / mlxr_qmm_avx512.cpp so that they share those
// files' vector helpers. The same rule holds: no standard-library templates in
// the kernels (see mlxr_qmm.h).
#pragma once

#include "mlxr_qmm.h"

namespace mlxr::qmm {

// Columns per block of the dequantized layout. The layout of an [N, K] weight
// is [ceil(N / 32)][K][32] values of the activation type T (float16 or
// bfloat16): column n of block b is lane n - 32 * b, and columns past N are
// zero. One step over K of one block is one 64-byte line, read front to back.
constexpr int kDequantizedCols = 32;

// out = x @ W.T in MLX's quantized arithmetic over the layout: x [M, K]
// widened to float, w the layout, out [M, N] of T. Every array row-contiguous.
struct DequantizedProblem {
  const float* x;
  const uint16_t* w;
  void* out;
  int M, N, K;
};

// The kernels of one instruction set for act F16 or BF16; the caller checks
// that the CPU has the set.
void run_dequantized_avx2(const DequantizedProblem& p, Act act);
void run_dequantized_avx512(const DequantizedProblem& p, Act act);

}  // namespace mlxr::qmm
