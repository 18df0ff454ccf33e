// The base of the shim's CPU primitives (the exact quantized matmul, the fast
// numerics tier, the native fast:: ops): one output, evaluated as one task on
// the stream's command encoder.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mlx/allocator.h"
#include "mlx/backend/cpu/encoder.h"
#include "mlx/primitives.h"

namespace mlxr {

namespace mx = mlx::core;

// The floating types the shim's CPU primitives compute in.
inline bool is_float(mx::Dtype d) {
  return d == mx::float32 || d == mx::float16 || d == mx::bfloat16;
}

// The task runs over weak copies of the inputs and output (the encoder keeps
// their buffers alive until it has run). It is a closure over the primitive's
// parameters by value: the primitive itself may be gone when the task runs
// (MLX detaches an evaluated graph as soon as its tasks are queued).
using Task = std::function<void(const std::vector<mx::array>& inputs, mx::array& out)>;

class CpuTaskPrimitive : public mx::UnaryPrimitive {
 public:
  explicit CpuTaskPrimitive(mx::Stream stream) : mx::UnaryPrimitive(stream) {}

  void eval_cpu(const std::vector<mx::array>& inputs, mx::array& out) override {
    auto& encoder = mx::cpu::get_command_encoder(stream());
    allocate(inputs, out);
    std::vector<mx::array> ins;
    ins.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); i++) {
      encoder.set_input_array(inputs[i]);
      ins.push_back(captures_by_reference(i, inputs[i]) ? inputs[i] : mx::array::unsafe_weak_copy(inputs[i]));
    }
    encoder.set_output_array(out);
    encoder.dispatch([task = task(), ins = std::move(ins),
                      out = mx::array::unsafe_weak_copy(out)]() mutable { task(ins, out); });
  }

  void eval_gpu(const std::vector<mx::array>&, mx::array&) override {
    throw std::runtime_error(std::string("[") + name() + "] has no GPU implementation");
  }

 protected:
  virtual Task task() const = 0;

  // Whether the task holds input i itself (a reference, as the fused decoder block holds its
  // weights: a model's leaves, never donated) rather than a weak copy, e.g. so that it can tell
  // that input's buffer from a later array's at the same address.
  virtual bool captures_by_reference(size_t input, const mx::array& a) const {
    (void)input;
    (void)a;
    return false;
  }

  // Gives out its buffer: a fresh one, unless a subclass reuses an input's as
  // MLX's elementwise kernels do (see NativeSwiglu).
  virtual void allocate(const std::vector<mx::array>& inputs, mx::array& out) {
    (void)inputs;
    out.set_data(mx::allocator::malloc(out.nbytes()));
  }
};

}  // namespace mlxr
