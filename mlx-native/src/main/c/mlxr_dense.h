// Shared by the dense-matmul translation units: mlxr_dense.cpp (the MLX
// primitive) and the kernels (mlxr_dense_kernels.h), which are compiled into
// the quantized-matmul kernel files mlxr_qmm_avx2.cpp / mlxr_qmm_avx512.cpp so
// that they share those files' vector helpers (rounding, stores with MLX's NaN
// encodings, in-register transposes, operand-ordered add and multiply). The
// same rule holds: no standard-library templates in the kernels (see
// mlxr_qmm.h).
#pragma once

#include "mlxr_qmm.h"

namespace mlxr::qmm {

// out = x @ w.T for one call, every array row-contiguous: x widened to float,
// w and out of the activation type (float32, float16 or bfloat16).
struct DenseProblem {
  const float* x;  // [M, K]
  const void* w;   // [N, K]
  void* out;       // [M, N]
  int M, N, K;
};

// The kernels of one instruction set; the caller checks the CPU has it.
void run_dense_avx2(const DenseProblem& p, Act act);
void run_dense_avx512(const DenseProblem& p, Act act);

}  // namespace mlxr::qmm
