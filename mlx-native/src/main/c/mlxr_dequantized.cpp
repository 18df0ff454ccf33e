// The exact quantized matmul over weights kept dequantized: an opt-in trade of
// memory for speed (--dequantized-weights; seed §3), bit-exact either way.
//
// MLX's _qmm_t computes w = T(T(scale * q) + bias) for every weight at every
// call, then t = T(x * w), sum = T(sum + t). With float16 or bfloat16
// activations the exact kernels (mlxr_qmm.cpp) spend 12 of their 26 vector
// operations per 16 weights on that first line, which depends on the weight
// alone. Here it is computed once, by NativeDequantizedLayout, into the layout
// of mlxr_dequantized.h, and NativeDequantizedMatmul runs the last two lines
// over it (mlxr_dequantized_kernels.h). The layout takes 2 bytes a weight,
// four times 4-bit weights (as much as the unquantized model), on top of the
// packed weights, which the embedding's lookup and every uncovered case still
// read.
//
// The layout is an MLX array made lazily: built by the first graph that uses
// it (the model's first forward pass) and then kept by the model, which owns
// its handle. A model whose activations never match the layout's type never
// evaluates it and so never spends its memory.

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "mlxr_cpu_task.h"
#include "mlxr_dequantized.h"
#include "mlxr_exact_ops.h"
#include "mlxr_guard.h"
#include "mlxr_isa.h"
#include "mlxr_qmm_primitive.h"
#include "mlxr_row_major.h"

namespace mx = mlx::core;

namespace mlxr::qmm {
namespace {

int blocks_of(int n) {
  return (n + kDequantizedCols - 1) / kDequantizedCols;
}

// Value k of a packed row: MLX's bit stream (value k in bits [bits * k, bits * k + bits) of the
// row's little-endian words), which for 2, 4 and 8 bits is also their word-aligned packing.
inline uint32_t packed_value(const uint32_t* row, int k, int bits) {
  const int at = bits * k, word = at / 32, shift = at % 32;
  uint32_t v = row[word] >> shift;
  if (shift + bits > 32) v |= row[word + 1] << (32 - shift);
  return v & ((1u << bits) - 1);
}

// Block `block` of the layout from w [N, K * bits / 32] and scales, biases [N, K / group_size]
// of T, each value T(T(scale * T(q)) + bias) by MLX's own conversions (mx::float16_t,
// mx::bfloat16_t: those of its _qmm_t on x86). The sum puts a NaN product first, as the
// kernels' dequantized() does, for the NaN's sign.
template <typename T>
void build_block(const uint32_t* w, const T* scales, const T* biases, int N, int K, int bits, int group_size,
                 int block, T* out) {
  const int row_words = K * bits / 32, groups = K / group_size;
  T* dst = out + size_t(block) * K * kDequantizedCols;
  for (int c = 0; c < kDequantizedCols; c++) {
    const int n = block * kDequantizedCols + c;
    if (n >= N) {
      for (int k = 0; k < K; k++) dst[size_t(k) * kDequantizedCols + c] = T(0.0f);
      continue;
    }
    const uint32_t* row = w + size_t(n) * row_words;
    for (int k = 0; k < K; k++) {
      const float scale = float(scales[size_t(n) * groups + k / group_size]);
      const float bias = float(biases[size_t(n) * groups + k / group_size]);
      const float product = float(T(scale * float(T(float(packed_value(row, k, bits))))));
      dst[size_t(k) * kDequantizedCols + c] = T(std::isnan(product) ? product : product + bias);
    }
  }
}

// The layout of (w, scales, biases) for one width and group size, of scales' dtype.
class NativeDequantizedLayout final : public CpuTaskPrimitive {
 public:
  NativeDequantizedLayout(mx::Stream stream, int group_size, int bits)
      : CpuTaskPrimitive(stream), group_size_(group_size), bits_(bits) {}

  const char* name() const override {
    return "NativeDequantizedLayout";
  }

  bool is_equivalent(const mx::Primitive& other) const override {
    auto* o = dynamic_cast<const NativeDequantizedLayout*>(&other);
    return o != nullptr && o->group_size_ == group_size_ && o->bits_ == bits_;
  }

 protected:
  Task task() const override {
    return [group_size = group_size_, bits = bits_](const std::vector<mx::array>& in, mx::array& out) {
      if (out.dtype() == mx::float16) {
        build<mx::float16_t>(in, out, group_size, bits);
      } else {
        build<mx::bfloat16_t>(in, out, group_size, bits);
      }
    };
  }

 private:
  template <typename T>
  static void build(const std::vector<mx::array>& in, mx::array& out, int group_size, int bits) {
    struct Work {
      const uint32_t* w;
      const T* scales;
      const T* biases;
      T* out;
      int N, K, bits, group_size, blocks, chunks;
    };
    std::vector<uint32_t> wcopy;
    std::vector<T> scopy, bcopy;
    const int N = in[0].shape(0), K = in[0].shape(1) * 32 / bits;
    const int blocks = blocks_of(N);
    Work work{row_major<uint32_t, uint32_t>(in[0], wcopy), row_major<T, T>(in[1], scopy), row_major<T, T>(in[2], bcopy),
              out.data<T>(), N, K, bits, group_size, blocks, std::min(blocks, parallel_threads() * 4)};
    if (blocks == 0) return;
    parallel_chunks(work.chunks, [](void* ctx, int chunk) {
      const Work& w = *static_cast<const Work*>(ctx);
      const int lo = int(int64_t(w.blocks) * chunk / w.chunks), hi = int(int64_t(w.blocks) * (chunk + 1) / w.chunks);
      for (int b = lo; b < hi; b++) build_block<T>(w.w, w.scales, w.biases, w.N, w.K, w.bits, w.group_size, b, w.out);
    }, &work);
  }

  int group_size_;
  int bits_;
};

// quantized_matmul(x, w, scales, biases, transpose=True) over the layout of w: inputs {x, layout}.
class NativeDequantizedMatmul final : public CpuTaskPrimitive {
 public:
  NativeDequantizedMatmul(mx::Stream stream, int n, Isa isa) : CpuTaskPrimitive(stream), n_(n), isa_(isa) {}

  const char* name() const override {
    return "NativeDequantizedMatmul";
  }

  bool is_equivalent(const mx::Primitive& other) const override {
    auto* o = dynamic_cast<const NativeDequantizedMatmul*>(&other);
    return o != nullptr && o->n_ == n_ && o->isa_ == isa_;
  }

  static bool computes(const mx::array& a) {
    return a.has_primitive() && dynamic_cast<const NativeDequantizedMatmul*>(&a.primitive()) != nullptr;
  }

 protected:
  Task task() const override {
    return [n = n_, isa = isa_](const std::vector<mx::array>& in, mx::array& out) {
      dequantized_matmul_into(in[0], in[1], n, isa, out);
    };
  }

 private:
  int n_;
  Isa isa_;
};

bool half_type(mx::Dtype d) {
  return d == mx::float16 || d == mx::bfloat16;
}

}  // namespace

void dequantized_matmul_into(const mx::array& x, const mx::array& layout, int n, Isa isa, mx::array& out) {
  const int K = x.shape(-1);
  if (out.size() == 0) return;
  std::vector<float> xf;
  DequantizedProblem p{row_major_floats(x, xf), layout.data<uint16_t>(), out.data<void>(), int(x.size() / K), n, K};
  const Act act = out.dtype() == mx::float16 ? Act::F16 : Act::BF16;
  if (isa == Isa::Avx512) {
    run_dequantized_avx512(p, act);
  } else {
    run_dequantized_avx2(p, act);
  }
}
}  // namespace mlxr::qmm

using mlxr::qmm::NativeDequantizedLayout;
using mlxr::qmm::NativeDequantizedMatmul;

extern "C" {

// The dequantized layout of an affine-quantized weight (w [N, K * bits / 32] uint32, scales and
// biases [N, K / group_size] of one dtype, float16 or bfloat16), as a lazy array of that dtype
// and shape [ceil(N / 32), K, 32]; built on the default stream when first evaluated. Needs a
// CPU stream, a CPU with the exact kernels' instruction set and a (bits, group size) they
// cover; anything else is an error naming what.
mlxr_array mlxr_dequantized_layout(mlxr_array w, mlxr_array scales, mlxr_array biases, int group_size, int bits) {
  return mlxr::guard_array([&]() -> mx::array {
    using namespace mlxr::qmm;
    const auto& wa = *static_cast<mx::array*>(w);
    const auto& sa = *static_cast<mx::array*>(scales);
    if (biases == nullptr) throw std::invalid_argument("dequantized layout: needs biases (affine quantization)");
    const auto& ba = *static_cast<mx::array*>(biases);
    if (!shape_supported(bits, group_size))
      throw std::invalid_argument("dequantized layout: " + std::to_string(bits) + " bits in groups of " +
                                  std::to_string(group_size) + " are not covered");
    if (!half_type(sa.dtype()) || ba.dtype() != sa.dtype())
      throw std::invalid_argument("dequantized layout: scales and biases must both be float16 or both bfloat16");
    if (wa.dtype() != mx::uint32 || wa.ndim() != 2 || sa.ndim() != 2 || ba.shape() != sa.shape() ||
        sa.shape(0) != wa.shape(0) || wa.shape(1) * 32 / bits != sa.shape(1) * group_size)
      throw std::invalid_argument("dequantized layout: w must be [N, K * bits / 32] uint32 and scales, biases "
                                  "[N, K / group_size]");
    auto stream = mx::default_stream(mx::default_device());
    const mlxr::Isa isa = mlxr::default_isa();
    if (stream.device.type != mx::Device::DeviceType::cpu || isa == mlxr::Isa::None)
      throw std::invalid_argument("dequantized layout: needs a CPU stream and a CPU with AVX2 and F16C");
    const int N = wa.shape(0), K = wa.shape(1) * 32 / bits;
    return mx::array({(N + kDequantizedCols - 1) / kDequantizedCols, K, kDequantizedCols}, sa.dtype(),
                     std::make_shared<NativeDequantizedLayout>(stream, group_size, bits), {wa, sa, ba});
  });
}

// mx::quantized_matmul(x, w, scales, biases, transpose=True, group_size, bits) by the kernels
// over `layout` (mlxr_dequantized_layout of these w, scales, biases) when x is of the layout's
// dtype and the case is the direct one (mlxr_qmm_primitive.h), on a CPU stream; otherwise what
// mlxr_native_quantized_matmul gives (the packed kernels, or MLX's op with its errors). isa: 0 =
// the default instruction set, 1 = AVX2, 2 = AVX-512 (tests run each; one the CPU lacks is an
// error).
mlxr_array mlxr_dequantized_quantized_matmul(mlxr_array x, mlxr_array w, mlxr_array scales, mlxr_array biases,
                                             mlxr_array layout, int group_size, int bits, int isa_code) {
  return mlxr::guard_array([&]() -> mx::array {
    const auto& xa = *static_cast<mx::array*>(x);
    const auto& wa = *static_cast<mx::array*>(w);
    const auto& sa = *static_cast<mx::array*>(scales);
    const auto* ba = static_cast<mx::array*>(biases);
    const auto& la = *static_cast<mx::array*>(layout);
    const mlxr::Isa isa = mlxr::isa_of_call(isa_code);
    // direct_quantized_matmul first: it checks the operands' ranks before their shapes are read
    if (isa != mlxr::Isa::None && xa.dtype() == la.dtype()) {
      if (auto d = mlxr::direct_quantized_matmul(xa, wa, sa, ba, group_size, bits);
          d && d->stream.device.type == mx::Device::DeviceType::cpu && la.ndim() == 3 &&
          la.shape(0) == (wa.shape(0) + mlxr::qmm::kDequantizedCols - 1) / mlxr::qmm::kDequantizedCols &&
          la.shape(1) == xa.shape(-1) && la.shape(2) == mlxr::qmm::kDequantizedCols) {
        return mx::array(d->out_shape, xa.dtype(), std::make_shared<NativeDequantizedMatmul>(d->stream, wa.shape(0), isa),
                         {xa, la});
      }
    }
    return mlxr::qmm::native_quantized_matmul(xa, wa, sa, ba, true, group_size, bits, "affine", isa);
  });
}

// 1 when the array is the output of the kernels over a dequantized layout (tests check that a
// covered case did not silently take another op).
int mlxr_is_dequantized_quantized_matmul(mlxr_array a) {
  return NativeDequantizedMatmul::computes(*static_cast<mx::array*>(a)) ? 1 : 0;
}

}  // extern "C"
