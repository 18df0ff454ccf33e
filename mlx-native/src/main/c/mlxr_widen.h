// Activations handed to the native matmul primitives (mlxr_qmm.cpp,
// mlxr_dense.cpp) as row-major floats: defined in mlxr_qmm.cpp.
#pragma once

#include <vector>

#include "mlx/array.h"

namespace mlxr::qmm {

// The array's elements in row-major order as float, whatever its strides: its
// float32 / float16 / bfloat16 values widened exactly by MLX's own conversions.
void widen_any(const mlx::core::array& a, std::vector<float>& out);

}  // namespace mlxr::qmm
