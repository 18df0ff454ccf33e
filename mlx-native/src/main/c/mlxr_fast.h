// Shared by the native replacements of MLX's fast:: ops on the CPU
// (mlxr_fast_norm.cpp, mlxr_fast_rope.cpp, mlxr_fast_sdpa.cpp).
//
// On the CPU, fast::rms_norm, fast::rope and fast::scaled_dot_product_attention
// have no kernel: they build their fallback graphs of ordinary ops (a decode
// step of SmolLM2 becomes ~3,500 primitives, each a task on MLX's stream
// thread). Each native primitive here evaluates one such graph in one task and
// reproduces its arithmetic exactly: the same operations in the same order
// with the same rounding points, using MLX's own scalar math (the installed
// mlx/backend/cpu/simd headers: on x86 simd::max_size is 1, so MLX's CPU
// kernels run exactly these Simd<T, 1> functions) and MLX's float16/bfloat16
// types, whose operators round to the half type after every operation as
// MLX's binary ops do. Only independent outputs are computed side by side.
//
// One thing is not reproduced: the sign of a NaN where two NaNs meet in an add
// or multiply. x86 returns the first operand's NaN, and which operand comes
// first in MLX's kernels is decided by its compiler (it varies with the
// position inside an unrolled loop and with the broadcast path of a binary
// op), not by its source. A NaN output is NaN here too, with the same payload
// (MLX's half-type NaN encodings included); only its sign bit may differ.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

// MLX's simd::exp builds 2^n by reading an int vector as a float vector; MLX
// itself is built so that this works (and so are these files: type-based
// aliasing analysis is off for everything they define).
#pragma GCC optimize("no-strict-aliasing")
#pragma GCC diagnostic ignored "-Wstrict-aliasing"
#pragma GCC diagnostic ignored "-Wsign-compare"  // in MLX's simd headers
#include "mlx/backend/cpu/simd/simd.h"

#include "mlx/allocator.h"
#include "mlx/backend/common/utils.h"
#include "mlx/backend/cpu/encoder.h"
#include "mlx/primitives.h"
#include "mlxr_cpu_task.h"

namespace mlxr::fast {

namespace mx = mlx::core;

// Whether a native fast:: primitive may run on stream s: a CPU stream, and a
// shim not built with -DMLXR_FAST_OPS_OFF (a build for A/B benchmarks whose
// entry points always take MLX's op; see scripts/bench/shim_ab.sh).
inline bool on_cpu(const mx::Stream& s) {
#ifdef MLXR_FAST_OPS_OFF
  (void)s;
  return false;
#else
  return s.device.type == mx::Device::DeviceType::cpu;
#endif
}

using mlxr::is_float;

// Element offset of row-major index i of a possibly strided array (MLX's own
// elem_to_loc, which takes an int: the entry points cover arrays of fewer than
// 2^31 elements only).
inline int64_t element_offset(const mx::array& a, int64_t i) {
  return mx::elem_to_loc(static_cast<int>(i), a);
}

inline bool indexable(const mx::array& a) {
  return a.size() < (size_t(1) << 31);
}

// An optional array argument of the C ABI (NULL for none).
inline std::optional<mx::array> optional_array(void* a) {
  if (a == nullptr) return std::nullopt;
  return *static_cast<mx::array*>(a);
}

// Calls f(T{}) with T the C++ type of a float32/float16/bfloat16 dtype.
template <typename F>
void with_float_type(mx::Dtype d, F&& f) {
  switch (d) {
    case mx::float32: f(float{}); break;
    case mx::float16: f(mx::float16_t{}); break;
    case mx::bfloat16: f(mx::bfloat16_t{}); break;
    default: throw std::runtime_error("[mlxr fast] unexpected dtype");
  }
}

// The native fast:: ops' primitives, told apart from the shim's other CPU
// primitives by mlxr_is_native_fast_op.
class FastOpPrimitive : public CpuTaskPrimitive {
 public:
  using CpuTaskPrimitive::CpuTaskPrimitive;
};

}  // namespace mlxr::fast
