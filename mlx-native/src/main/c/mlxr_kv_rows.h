// What the batch caches' row-movement primitives share (mlxr_roll_rows.cpp, mlxr_place_rows.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mlxr {

// One position of d elements of item bytes each to dst (contiguous) from p, whose elements lie
// stride_d elements apart (1: contiguous, one memcpy).
inline void copy_position(char* dst, const char* p, int64_t stride_d, int d, size_t item) {
  if (stride_d == 1) {
    std::memcpy(dst, p, size_t(d) * item);
    return;
  }
  for (int e = 0; e < d; e++) std::memcpy(dst + size_t(e) * item, p + int64_t(e) * stride_d * int64_t(item), item);
}

}  // namespace mlxr
