// MLX's float simd::exp, eight lanes at a time (AVX2 + FMA), shared by the
// native attention's softmax (mlxr_fast_sdpa.cpp) and logsumexp
// (mlxr_fast_logsumexp.cpp). Callers check the CPU (cpu_has_avx2, cpu_has_fma)
// before calling it.
#pragma once

#include <limits>

#include "mlxr_fast.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

namespace mlxr::fast {

inline bool cpu_has_avx2() {
  static const bool ok = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
  }();
  return ok;
}

inline bool cpu_has_fma() {
  static const bool ok = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("fma");
  }();
  return ok;
}

// y[i] = simd::exp(x[i]) for i < n, eight at a time, with MLX's operations
// (simd/math.h) in its order: the polynomial's std::fma calls are fused
// multiply-adds, so vfmadd gives their bits; floor(x + 0.5) (in double there)
// is floor(x) + (x - floor(x) >= 0.5), exact for every float; float to int
// truncates as static_cast does (NaN and overflow give INT_MIN either way, and
// those lanes are replaced by the selects). The last n % 8 take MLX's function.
__attribute__((target("avx2,fma"))) inline void exp_lanes(const float* x, int n, float* y) {
  const __m256 log2e = _mm256_set1_ps(1.442695f), half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  const __m256 c0 = _mm256_set1_ps(1.535336188319500e-4f), c1 = _mm256_set1_ps(1.339887440266574e-3f);
  const __m256 c2 = _mm256_set1_ps(9.618437357674640e-3f), c3 = _mm256_set1_ps(5.550332471162809e-2f);
  const __m256 c4 = _mm256_set1_ps(2.402264791363012e-1f), c5 = _mm256_set1_ps(6.931472028550421e-1f);
  const __m256 c6 = _mm256_set1_ps(1.000000000000000f);
  const __m256 hi = _mm256_set1_ps(88.0f), lo = _mm256_set1_ps(-88.0f);
  const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity()), zero = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 x_init = _mm256_loadu_ps(x + i);
    __m256 t = _mm256_mul_ps(x_init, log2e);
    __m256 fl = _mm256_floor_ps(t);
    __m256 up = _mm256_and_ps(_mm256_cmp_ps(_mm256_sub_ps(t, fl), half, _CMP_GE_OQ), one);
    __m256 ipart = _mm256_add_ps(fl, up);
    __m256 fpart = _mm256_sub_ps(t, ipart);
    __m256 p = _mm256_fmadd_ps(c0, fpart, c1);
    p = _mm256_fmadd_ps(p, fpart, c2);
    p = _mm256_fmadd_ps(p, fpart, c3);
    p = _mm256_fmadd_ps(p, fpart, c4);
    p = _mm256_fmadd_ps(p, fpart, c5);
    p = _mm256_fmadd_ps(p, fpart, c6);
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(ipart), _mm256_set1_epi32(127)), 23);
    __m256 r = _mm256_mul_ps(_mm256_castsi256_ps(e), p);
    r = _mm256_blendv_ps(r, x_init, _mm256_cmp_ps(x_init, x_init, _CMP_UNORD_Q));
    r = _mm256_blendv_ps(r, inf, _mm256_cmp_ps(x_init, hi, _CMP_GT_OQ));
    r = _mm256_blendv_ps(r, zero, _mm256_cmp_ps(x_init, lo, _CMP_LT_OQ));
    _mm256_storeu_ps(y + i, r);
  }
  for (; i < n; i++) y[i] = mx::simd::exp(mx::simd::Simd<float, 1>(x[i])).value;
}

}  // namespace mlxr::fast

#else

namespace mlxr::fast {

inline bool cpu_has_avx2() {
  return false;
}

inline bool cpu_has_fma() {
  return false;
}

inline void exp_lanes(const float* x, int n, float* y) {
  for (int i = 0; i < n; i++) y[i] = mx::simd::exp(mx::simd::Simd<float, 1>(x[i])).value;
}

}  // namespace mlxr::fast

#endif
