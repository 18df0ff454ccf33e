// mlx-lm's activations.swiglu(gate, x) = silu(gate) * x on the CPU as one
// primitive with the bytes of the kernel MLX compiles for it
// (@mx.compile(shapeless=True), nested as mlxr_shim.cpp's swiglu_impl: MLX's
// CPU JIT writes one C++ loop over the fused tape, g++ -O3 for baseline
// x86-64, each element with the element type T of the operands):
//
//     e   = T(simd::exp(|g|))          exp in float, its result rounded to T
//     y   = 1 / (1 + e)                float (T op float is float)
//     s   = T(g < 0 ? y : 1 - y)       Sigmoid returns Simd<T>
//     t   = T(g * s)                   silu: T op T rounds to T
//     out = T(t * x)
//
// For float32 every T() is the identity, so the whole chain is IEEE float
// arithmetic, eight lanes at a time. For float16 / bfloat16 the roundings
// are MLX's own conversions (mx::float16_t, mx::bfloat16_t), element by
// element. simd::exp is MLX's polynomial (exp_lanes, eight lanes; its
// std::fma calls are fused there and here); every other step is one IEEE
// operation.

#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>
#include <vector>

#include "mlx/mlx.h"
#include "mlxr_fast.h"
#include "mlxr_fast_exp.h"
#include "mlxr_exact_ops.h"
#include "mlxr_guard.h"
#include "mlxr_row_major.h"

namespace mlxr::fast {

namespace {

namespace simd = mx::simd;

// out[i] for i < n, given e[i] = simd::exp(|g[i]|) in float: the chain above, element by element
// (for float32 every T() is the identity).
template <typename T>
void finish_elements(const T* g, const T* x, const float* e, int64_t n, T* out) {
  const T zero(0.0f);
  for (int64_t i = 0; i < n; i++) {
    const float y = 1.0f / (1.0f + static_cast<float>(T(e[i])));
    const T s = g[i] < zero ? T(y) : T(1.0f - y);
    const T t = g[i] * s;
    out[i] = t * x[i];
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// finish_elements for float32, eight lanes at a time.
__attribute__((target("avx2"))) void finish_lanes(const float* g, const float* x, const float* e, int64_t n,
                                                  float* out) {
  const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 gv = _mm256_loadu_ps(g + i);
    __m256 y = _mm256_div_ps(one, _mm256_add_ps(one, _mm256_loadu_ps(e + i)));
    __m256 s = _mm256_blendv_ps(_mm256_sub_ps(one, y), y, _mm256_cmp_ps(gv, zero, _CMP_LT_OQ));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(gv, s), _mm256_loadu_ps(x + i)));
  }
  finish_elements<float>(g + i, x + i, e + i, n - i, out + i);
}
#endif

template <typename T>
void swiglu_typed(const mx::array& gate, const mx::array& x, mx::array& out) {
  const int64_t n = int64_t(out.size());
  std::vector<T> gbuf, xbuf;
  const T* g = row_major<T, T>(gate, gbuf);
  const T* xv = row_major<T, T>(x, xbuf);
  T* o = out.data<T>();
  // In blocks, so |g| and its exponentials stay in L1 between the two passes.
  constexpr int64_t kBlock = 2048;
  thread_local std::vector<float> e(kBlock);
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t len = std::min(kBlock, n - b);
    // |g| is exact in T and in float; simd::exp widens it to float first
    for (int64_t i = 0; i < len; i++) e[i] = std::abs(static_cast<float>(g[b + i]));
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    exp_lanes(e.data(), int(len), e.data());
    if constexpr (std::is_same_v<T, float>) {
      finish_lanes(g + b, xv + b, e.data(), len, o + b);
      continue;
    }
#else
    for (int64_t i = 0; i < len; i++) e[i] = simd::exp(simd::Simd<float, 1>(e[i])).value;
#endif
    finish_elements<T>(g + b, xv + b, e.data(), len, o + b);
  }
}

// swiglu of gate and x of one shape and one dtype (float32, float16, bfloat16) into out.
void swiglu_rows(const mx::array& gate, const mx::array& x, mx::array& out) {
  switch (out.dtype()) {
    case mx::float32: swiglu_typed<float>(gate, x, out); break;
    case mx::float16: swiglu_typed<mx::float16_t>(gate, x, out); break;
    default: swiglu_typed<mx::bfloat16_t>(gate, x, out); break;
  }
}

class NativeSwiglu : public FastOpPrimitive {
 public:
  explicit NativeSwiglu(mx::Stream s) : FastOpPrimitive(s) {}

  const char* name() const override {
    return "NativeSwiglu";
  }

  bool is_equivalent(const mx::Primitive& other) const override {
    return dynamic_cast<const NativeSwiglu*>(&other) != nullptr;
  }

 protected:
  Task task() const override {
    return [](const std::vector<mx::array>& in, mx::array& out) { swiglu_rows(in[0], in[1], out); };
  }

  // MLX's compiled kernel writes into the first donatable input (gate, then x)
  // when one is row-contiguous and the output's size: without that, a prefill
  // holds one more [L, intermediate] buffer per layer than mlx-lm
  // (PrefillMemoryTest). In place is safe: element i is read before it is
  // written, in both passes.
  void allocate(const std::vector<mx::array>& inputs, mx::array& out) override {
    for (const auto& in : inputs) {
      if (in.is_donatable() && in.flags().row_contiguous && in.dtype() == out.dtype() && in.size() == out.size()) {
        out.copy_shared_buffer(in);
        return;
      }
    }
    out.set_data(mx::allocator::malloc(out.nbytes()));
  }
};

}  // namespace

void swiglu_into(const mx::array& gate, const mx::array& x, mx::array& out) {
  swiglu_rows(gate, x, out);
}

}  // namespace mlxr::fast

extern "C" {

// mlx-lm's compiled swiglu (mlxr_swiglu), evaluated by NativeSwiglu where it
// covers the case (gate and x of one shape and one float dtype, a CPU default stream, a
// CPU with AVX2 and FMA); otherwise the compiled kernel as mlxr_swiglu builds it.
mlxr_array mlxr_swiglu(mlxr_array gate, mlxr_array x);

mlxr_array mlxr_native_swiglu(mlxr_array gate, mlxr_array x) {
  namespace mx = mlx::core;
  using namespace mlxr::fast;
  const auto& g = *static_cast<mx::array*>(gate);
  const auto& xa = *static_cast<mx::array*>(x);
  auto stream = mx::default_stream(mx::default_device());
  bool covered = on_cpu(stream) && cpu_has_avx2() && cpu_has_fma() && is_float(g.dtype()) &&
                 xa.dtype() == g.dtype() && g.shape() == xa.shape() && indexable(g);
  if (!covered) return mlxr_swiglu(gate, x);
  return mlxr::guard_array([&]() -> mx::array {
    return mx::array(g.shape(), g.dtype(), std::make_shared<NativeSwiglu>(stream), {g, xa});
  });
}

}  // extern "C"
