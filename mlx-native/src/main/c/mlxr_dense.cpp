// The exact dense matmul of an unquantized Linear, `x @ W.T` (W [N, K]
// row-major), as an MLX primitive: on x86 MLX's CPU Matmul runs it as the
// wheel's reference BLAS sgemm (float32) or its scalar simd_gemm (float16,
// bfloat16) on one thread. The kernels (mlxr_dense_kernels.h, compiled into
// the AVX2 and AVX-512 kernel files of the quantized matmul, whose worker pool
// and instruction-set choice they share) keep every output's arithmetic —
// one dot product summed in float from zero in order over K, rounded once —
// and change only the schedule. Tested byte for byte against mx.matmul by
// DenseMatmulExactnessTest, for each instruction set this CPU has.
//
// Covered: x of rank >= 2 and W of rank 2, both float32, float16 or bfloat16
// of the same dtype, W already evaluated and row-contiguous (a loaded
// weight), a CPU stream, a CPU with AVX2 and F16C. Everything else (mixed
// dtypes, which MLX promotes with an astype of W; a bias, i.e. addmm; other
// devices and CPUs) is MLX's own op.

#include <cstring>
#include <string>
#include <vector>

#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "mlxr_cpu_task.h"
#include "mlxr_dense.h"
#include "mlxr_guard.h"
#include "mlxr_isa.h"
#include "mlxr_row_major.h"

namespace mx = mlx::core;

namespace mlxr::qmm {
namespace {

// x2d [M, K] @ w[N, K].T over MLX's validated inputs (same dtype), by the
// kernels of one instruction set.
class NativeDenseMatmul : public CpuTaskPrimitive {
 public:
  NativeDenseMatmul(mx::Stream stream, Isa isa) : CpuTaskPrimitive(stream), isa_(isa) {}

  const char* name() const override {
    return "NativeDenseMatmul";
  }

  bool is_equivalent(const mx::Primitive& other) const override {
    auto* o = dynamic_cast<const NativeDenseMatmul*>(&other);
    return o != nullptr && o->isa_ == isa_;
  }

 protected:
  Task task() const override {
    return [isa = isa_](const std::vector<mx::array>& in, mx::array& out) { compute(out, in[0], in[1], isa); };
  }

 private:
  static void compute(mx::array& out, const mx::array& x, const mx::array& w, Isa isa) {
    const int K = x.shape(-1);
    const int N = w.shape(0);
    const int M = K == 0 ? 0 : int(x.size() / K);
    if (out.size() == 0) return;
    if (K == 0) {
      // MLX's Matmul writes zeros for an empty contraction.
      std::memset(out.data<void>(), 0, out.nbytes());
      return;
    }
    std::vector<float> xf;
    const float* xp = row_major_floats(x, xf);
    DenseProblem p{xp, w.data<void>(), out.data<void>(), M, N, K};
    Act act = out.dtype() == mx::float32 ? Act::F32 : out.dtype() == mx::float16 ? Act::F16 : Act::BF16;
    if (isa == Isa::Avx512) {
      run_dense_avx512(p, act);
    } else {
      run_dense_avx2(p, act);
    }
  }

  Isa isa_;
};

}  // namespace
}  // namespace mlxr::qmm

using mlxr::qmm::NativeDenseMatmul;

extern "C" {

// mx::matmul(x, mx::transpose(w)) — mlx.nn.Linear's `x @ W.T` without a bias —
// with MLX's validation and output, evaluated by the native kernel where it
// covers the case (see the top of this file), else MLX's op as is. The graph
// keeps MLX's shape ops: x of rank > 2 is flattened to [M, K] and the result
// unflattened, as mx::matmul does. isa: 0 = the default instruction set
// (mlxr_native_kernels_isa), 1 = AVX2, 2 = AVX-512 (tests run each; one the
// CPU lacks is an error).
mlxr_array mlxr_native_linear(mlxr_array x, mlxr_array w, int isa_code) {
  return mlxr::guard_array([&]() -> mx::array {
    using mlxr::Isa;
    Isa isa = mlxr::isa_of_call(isa_code);
    auto& xa = *static_cast<mx::array*>(x);
    auto& wa = *static_cast<mx::array*>(w);
    mx::array ref = mx::matmul(xa, mx::transpose(wa));
    bool covered = isa != Isa::None && xa.ndim() >= 2 && wa.ndim() == 2 && xa.dtype() == wa.dtype() &&
                   mlxr::is_float(xa.dtype()) && wa.is_available() && wa.flags().row_contiguous &&
                   ref.has_primitive() && ref.primitive().stream().device.type == mx::Device::DeviceType::cpu;
    if (!covered) return ref;
    mx::Stream stream = ref.primitive().stream();
    mx::array a = xa.ndim() > 2 ? mx::flatten(xa, 0, -2, stream) : xa;
    mx::array out({a.shape(0), wa.shape(0)}, xa.dtype(), std::make_shared<NativeDenseMatmul>(stream, isa), {a, wa});
    if (xa.ndim() > 2) {
      mx::Shape batch = xa.shape();
      batch.pop_back();
      out = mx::unflatten(out, 0, std::move(batch), stream);
    }
    return out;
  });
}

// 1 when the array is the output of the native dense matmul, directly or
// through the unflatten of a rank > 2 input (tests check that a covered case
// did not silently take MLX's op).
int mlxr_is_native_linear(mlxr_array a) {
  const auto& arr = *static_cast<mx::array*>(a);
  auto native = [](const mx::array& x) {
    return x.has_primitive() && dynamic_cast<NativeDenseMatmul*>(&x.primitive()) != nullptr;
  };
  if (native(arr)) return 1;
  return arr.has_primitive() && arr.inputs().size() == 1 && native(arr.inputs()[0]) ? 1 : 0;
}

}  // extern "C"
