// Operands handed to the shim's CPU primitives as row-major buffers. MLX's
// graph gives them views as well as contiguous arrays (transposes, broadcasts,
// slices); the kernels read dense rows, so a view is copied once per call.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "mlx/array.h"

namespace mlxr {

// a's elements in row-major order as Dst: a's own buffer when it is already
// row-contiguous Dst, else `copy`, filled by walking a's strides (last axis
// fastest) with each value converted by static_cast, for MLX's half types
// their own exact widening.
template <typename Dst, typename Src>
const Dst* row_major(const mlx::core::array& a, std::vector<Dst>& copy) {
  const Src* src = a.data<Src>();
  if constexpr (std::is_same_v<Dst, Src>) {
    if (a.flags().row_contiguous) return src;
  }
  copy.resize(a.size());
  if (a.flags().row_contiguous) {
    for (size_t i = 0; i < a.size(); i++) copy[i] = static_cast<Dst>(src[i]);
    return copy.data();
  }
  const int nd = a.ndim();
  std::vector<int> at(nd, 0);
  int64_t off = 0;
  for (size_t i = 0; i < a.size(); i++) {
    copy[i] = static_cast<Dst>(src[off]);
    for (int d = nd - 1; d >= 0; d--) {
      off += a.strides()[d];
      if (++at[d] < a.shape(d)) break;
      off -= a.strides()[d] * a.shape(d);
      at[d] = 0;
    }
  }
  return copy.data();
}

// A float32, float16 or bfloat16 array as row-major floats (exact widening).
inline const float* row_major_floats(const mlx::core::array& a, std::vector<float>& copy) {
  switch (a.dtype()) {
    case mlx::core::float32: return row_major<float, float>(a, copy);
    case mlx::core::float16: return row_major<float, mlx::core::float16_t>(a, copy);
    default: return row_major<float, mlx::core::bfloat16_t>(a, copy);
  }
}

}  // namespace mlxr
