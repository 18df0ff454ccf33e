// The quantized_matmul primitive of the shim's two CPU kernel families: the
// exact kernels (mlxr_qmm.cpp) and the fast numerics tier's (mlxr_fastnum.cpp).
#pragma once

#include <vector>

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

}  // namespace mlxr
