// logsumexp over the last axis on the CPU as one primitive, with the bytes of
// MLX 0.32.4's LogSumExp CPU kernel (mlx/backend/cpu/logsumexp.cpp; with
// simd::max_size 1 on x86 it is a scalar loop). Per row of M values widened
// to float:
//
//     maximum    = fold of simd::maximum(x[i], maximum) from -inf, in order
//     normalizer = sum of simd::exp(x[i] - maximum), in order from 0
//     out        = isinf(maximum) ? T(maximum) : T(std::log(normalizer) + maximum)
//
// The exponentials run eight lanes at a time (exp_lanes: MLX's simd::exp in
// its operations) and the normalizer is still one sequential float sum. The
// maximum is taken eight lanes wide too: without NaNs it is the same value as
// MLX's fold, except perhaps the sign of a zero maximum, which changes no
// output bit (x - (+0) and x - (-0) differ only at x = -0, where exp gives 1
// either way, and log(normalizer) + (±0) is log(normalizer) or, when that is
// +0, +0). A row holding a NaN takes MLX's scalar fold as written. Used for
// the logprobs of every sampling step (logits - logsumexp(logits)): over a
// vocabulary of 49,152 MLX's scalar loop took 0.90 ms per call, this 0.155 ms.

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "mlx/mlx.h"
#include "mlxr_fast.h"
#include "mlxr_fast_exp.h"
#include "mlxr_guard.h"

namespace mlxr::fast {

namespace {

namespace simd = mx::simd;

// MLX's fold, for rows with a NaN (and CPUs without AVX2).
float mlx_maximum(const float* x, int64_t m) {
  simd::Simd<float, 1> v(-std::numeric_limits<float>::infinity());
  for (int64_t i = 0; i < m; i++) v = simd::maximum(simd::Simd<float, 1>(x[i]), v);
  return v.value;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// The row's maximum eight lanes wide, or NaN when the row holds a NaN (the
// caller then folds it MLX's way).
__attribute__((target("avx2"))) float lanes_maximum(const float* x, int64_t m) {
  __m256 mx8 = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 nan8 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= m; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    mx8 = _mm256_max_ps(mx8, v);
    nan8 = _mm256_or_ps(nan8, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  if (_mm256_movemask_ps(nan8) != 0) return std::numeric_limits<float>::quiet_NaN();
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, mx8);
  float r = lanes[0];
  for (int j = 1; j < 8; j++) r = lanes[j] > r ? lanes[j] : r;
  for (; i < m; i++) {
    if (std::isnan(x[i])) return x[i];
    r = x[i] > r ? x[i] : r;
  }
  return r;
}

__attribute__((target("avx2"))) void subtract_lanes(const float* x, int64_t m, float c, float* y) {
  const __m256 c8 = _mm256_set1_ps(c);
  int64_t i = 0;
  for (; i + 8 <= m; i += 8) _mm256_storeu_ps(y + i, _mm256_sub_ps(_mm256_loadu_ps(x + i), c8));
  for (; i < m; i++) y[i] = x[i] - c;
}
#endif

template <typename T>
void logsumexp_rows(const mx::array& in, mx::array& out) {
  const int64_t m = in.shape(-1);
  const int64_t rows = int64_t(in.size()) / m;
  const bool contiguous = in.flags().row_contiguous;
  const T* src = in.data<T>();
  T* dst = out.data<T>();
  std::vector<float> xf(std::is_same_v<T, float> && contiguous ? 0 : m), e(m);
  for (int64_t r = 0; r < rows; r++) {
    const float* x;
    if (std::is_same_v<T, float> && contiguous) {
      x = reinterpret_cast<const float*>(src) + r * m;
    } else {
      for (int64_t i = 0; i < m; i++) {
        int64_t idx = r * m + i;
        xf[i] = static_cast<float>(src[contiguous ? idx : element_offset(in, idx)]);
      }
      x = xf.data();
    }
    float maximum;
    bool lanes = false;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    maximum = lanes_maximum(x, m);
    lanes = !std::isnan(maximum);
#endif
    if (!lanes) maximum = mlx_maximum(x, m);
    float normalizer = 0.0f;
    if (lanes) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
      subtract_lanes(x, m, maximum, e.data());
      exp_lanes(e.data(), int(m), e.data());
      for (int64_t i = 0; i < m; i++) normalizer = normalizer + e[i];
#endif
    } else {
      simd::Simd<float, 1> v(0.0f);
      for (int64_t i = 0; i < m; i++) v = v + simd::exp(simd::Simd<float, 1>(x[i]) - maximum);
      normalizer = v.value;
    }
    dst[r] = std::isinf(maximum) ? static_cast<T>(maximum) : static_cast<T>(std::log(normalizer) + maximum);
  }
}

class NativeLogSumExp : public FastOpPrimitive {
 public:
  explicit NativeLogSumExp(mx::Stream s) : FastOpPrimitive(s) {}

  const char* name() const override {
    return "NativeLogSumExp";
  }

  bool is_equivalent(const mx::Primitive& other) const override {
    return dynamic_cast<const NativeLogSumExp*>(&other) != nullptr;
  }

 protected:
  Task task() const override {
    return [](const std::vector<mx::array>& in, mx::array& out) {
      with_float_type(out.dtype(), [&](auto t) { logsumexp_rows<decltype(t)>(in[0], out); });
    };
  }
};

}  // namespace

}  // namespace mlxr::fast

extern "C" {

// mx::logsumexp(a, axes, keepdims) (axes NULL: all of them), evaluated by
// NativeLogSumExp where MLX's own op is its LogSumExp primitive (a reduction
// over the last axis only, of a floating type) with keepdims, on a CPU stream
// of a CPU with AVX2 and FMA; otherwise MLX's op as is (which also reports
// invalid arguments).
mlxr_array mlxr_native_logsumexp(mlxr_array a, const int32_t* axes, int n, bool keepdims) {
  namespace mx = mlx::core;
  using namespace mlxr::fast;
  return mlxr::guard_array([&]() -> mx::array {
    const auto& x = *static_cast<mx::array*>(a);
    // By name: libmlx.so does not export LogSumExp's type information.
    mx::array ref = axes == nullptr ? mx::logsumexp(x, keepdims)
                                    : mx::logsumexp(x, std::vector<int>(axes, axes + n), keepdims);
    bool covered = keepdims && ref.has_primitive() && std::string(ref.primitive().name()) == "LogSumExp" &&
                   on_cpu(ref.primitive().stream()) && cpu_has_avx2() && cpu_has_fma() && is_float(ref.dtype()) &&
                   ref.inputs().size() == 1 && indexable(ref.inputs()[0]) && ref.inputs()[0].ndim() >= 1 &&
                   ref.inputs()[0].shape(-1) > 0;
    if (!covered) return ref;
    return mx::array(ref.shape(), ref.dtype(), std::make_shared<NativeLogSumExp>(ref.primitive().stream()),
                     {ref.inputs()[0]});
  });
}

}  // extern "C"
