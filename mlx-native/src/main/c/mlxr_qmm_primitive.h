// The quantized_matmul primitive of the shim's two CPU kernel families: the
// exact kernels (mlxr_qmm.cpp) and the fast numerics tier's (mlxr_fastnum.cpp).
#pragma once

#include <optional>
#include <vector>

#include "mlx/ops.h"
#include "mlxr_cpu_task.h"
#include "mlxr_isa.h"

namespace mlxr {

// quantized_matmul(x, w, scales, biases, transpose=True) for one group size,
// width and instruction set, evaluated by Kernels::compute(out, x, w, scales,
// biases, group_size, bits, isa) over MLX's own validated operands; created
// only for the cases Kernels covers. Kernels::kName is its name in MLX's graph.
template <class Kernels>
class QuantizedMatmulPrimitive final : public CpuTaskPrimitive {
 public:
  QuantizedMatmulPrimitive(mx::Stream stream, int group_size, int bits, Isa isa)
      : CpuTaskPrimitive(stream), group_size_(group_size), bits_(bits), isa_(isa) {}

  const char* name() const override {
    return Kernels::kName;
  }

  bool is_equivalent(const mx::Primitive& other) const override {
    auto* o = dynamic_cast<const QuantizedMatmulPrimitive*>(&other);
    return o != nullptr && o->group_size_ == group_size_ && o->bits_ == bits_ && o->isa_ == isa_;
  }

  // Whether `a` is this primitive's output (tests check that a covered case
  // did not silently take another op).
  static bool computes(const mx::array& a) {
    return a.has_primitive() && dynamic_cast<const QuantizedMatmulPrimitive*>(&a.primitive()) != nullptr;
  }

 protected:
  // The weight and its group parameters (inputs 1 to 3) by reference where the kernels key state
  // on them (Kernels::kKeepsWeights: fast-q8's widened parameters, mlxr_fastq8.h) and they are
  // leaves, as a model's weights are.
  bool captures_by_reference(size_t input, const mx::array& a) const override {
    return Kernels::kKeepsWeights && input >= 1 && !a.has_primitive();
  }

  Task task() const override {
    return [group_size = group_size_, bits = bits_, isa = isa_](const std::vector<mx::array>& in, mx::array& out) {
      Kernels::compute(out, in[0], in[1], in[2], in[3], group_size, bits, isa);
    };
  }

 private:
  int group_size_;
  int bits_;
  Isa isa_;
};

// The output shape and stream of mx::quantized_matmul(x, w, scales, biases,
// transpose=True, group_size, bits, "affine") in the case every decode step
// makes: x already of the promoted dtype (so MLX's astype of it is x itself),
// a 2-D uint32 w, scales and biases of one floating dtype and shape
// [N, K / group_size], the default stream. MLX's op accepts exactly these
// operands and would forward x and w unchanged, so the primitive can be built
// over them directly; anything else is nullopt, and the caller builds MLX's
// op for its validation and promotion (and its errors). Building that op only
// to take its inputs (the op, two astype nodes, their teardown; ~200 calls a
// token) cost 1.0 us a call against 0.33 us direct in a hot loop, and ~5% of
// the JVM thread's CPU in a decode step.
struct DirectOperands {
  mx::Shape out_shape;
  mx::Stream stream;
};

inline std::optional<DirectOperands> direct_quantized_matmul(const mx::array& x, const mx::array& w,
                                                             const mx::array& scales, const mx::array* biases,
                                                             int group_size, int bits) {
  if (biases == nullptr || bits <= 0 || group_size <= 0) return std::nullopt;
  if (!is_float(scales.dtype()) || biases->dtype() != scales.dtype() || !is_float(x.dtype()) ||
      mx::promote_types(x.dtype(), scales.dtype()) != x.dtype())
    return std::nullopt;
  if (w.dtype() != mx::uint32 || w.ndim() != 2 || scales.ndim() != 2 || biases->shape() != scales.shape() ||
      scales.shape(0) != w.shape(0) || x.ndim() < 1)
    return std::nullopt;
  // MLX's own shape checks, in its integer arithmetic (validate_quantized_input,
  // extract_quantized_matmul_dims).
  if (w.shape(1) * 32 / bits != scales.shape(1) * group_size || x.shape(-1) != w.shape(1) * 32 / bits)
    return std::nullopt;
  mx::Shape out_shape = x.shape();
  out_shape.back() = w.shape(0);
  return DirectOperands{std::move(out_shape), mx::default_stream(mx::default_device())};
}

}  // namespace mlxr
