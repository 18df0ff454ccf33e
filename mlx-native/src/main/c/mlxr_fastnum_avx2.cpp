// The fast tier's kernels (mlxr_fastnum_kernels.h) for AVX2 + FMA + F16C:
// eight float lanes; up to four activation rows per pass over two weight rows
// (8 accumulators + 4 decoded vectors + 2 scales, of 16 registers), up to
// eight over one (8 + 2 + 1). Compiled for that instruction set by the pragma below and run
// only when the CPU has it (mlxr_fastnum.cpp checks).
#include "mlxr_fastnum.h"
#include "mlxr_qmm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC target("avx2,fma,f16c")
#endif

#include "mlxr_transpose8.h"

namespace mlxr::fastnum {
namespace {

using mlxr::qmm::parallel_chunks;
using mlxr::qmm::parallel_threads;
using mlxr::qmm::thread_scratch;

#define MLXR_INLINE __attribute__((always_inline)) inline
#include "mlxr_fastnum_x86.h"

constexpr int kL = kLanesAvx2;
constexpr int kMaxRows = 8;
constexpr int kScaledRows = 3;
constexpr int kPairedRows = 4;

using vf = __m256;

MLXR_INLINE vf vzero() { return _mm256_setzero_ps(); }
MLXR_INLINE vf vset1(float f) { return _mm256_set1_ps(f); }
MLXR_INLINE vf vload(const float* p) { return _mm256_loadu_ps(p); }
MLXR_INLINE void vstore(float* p, vf v) { _mm256_storeu_ps(p, v); }
MLXR_INLINE vf vmul(vf a, vf b) { return _mm256_mul_ps(a, b); }
MLXR_INLINE vf vadd(vf a, vf b) { return _mm256_add_ps(a, b); }
MLXR_INLINE vf vfma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }

MLXR_INLINE float hsum(vf v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

MLXR_INLINE void decode4(const uint8_t* p, vf& lo, vf& hi) {
  __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  const __m256i eight = _mm256_set1_epi32(8);
  lo = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(v, _mm256_set1_epi32(15)), eight));
  hi = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(v, 4), eight));
}

// q - 128: the byte with its top bit flipped, read as signed.
MLXR_INLINE vf decode8(const uint8_t* p) {
  __m128i b = _mm_xor_si128(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), _mm_set1_epi8(char(0x80)));
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
}

// Eight group parameters from element i, widened exactly to float.
MLXR_INLINE vf widen8(const void* base, Dt dt, size_t i) {
  switch (dt) {
    case Dt::F32: return _mm256_loadu_ps(static_cast<const float*>(base) + i);
    case Dt::F16:
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + i)));
    default:
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(
          reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + i))), 16));
  }
}

// n (<= 8) group parameters from element i as floats, zero past them. AVX2
// has no masked 16-bit load, so fewer than eight half-precision parameters
// are read as the eight that end at i + n (the row's earlier groups, or the
// previous row's) and moved down in registers: a copy through the stack,
// re-read as one vector, stalls on store forwarding (on a Zen 3 the widening
// fell from 11.8% to 7.8% of a fast-tier decode step's samples). Only when
// fewer than eight elements precede the tail (the first row of a matrix with
// under eight groups) does it take the scalar copy.
MLXR_INLINE vf widen_params(const void* base, Dt dt, size_t i, int n) {
  if (n >= kL) return widen8(base, dt, i);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane);
  if (dt == Dt::F32) return _mm256_maskload_ps(static_cast<const float*>(base) + i, keep);
  if (i + n < size_t(kL)) {
    alignas(32) float tail[kL] = {};
    for (int t = 0; t < n; t++) tail[t] = param_at(base, dt, i + t);
    return _mm256_load_ps(tail);
  }
  const vf ending = widen8(base, dt, i + n - kL);
  const vf moved = _mm256_permutevar8x32_ps(ending, _mm256_add_epi32(lane, _mm256_set1_epi32(kL - n)));
  return _mm256_and_ps(moved, _mm256_castsi256_ps(keep));
}

#include "mlxr_fastnum_kernels.h"

// For the many-rows kernel: 6 rows x 2 tiles of 8 columns, 12 accumulators, two weight vectors
// and a broadcast activation of 16 registers.
constexpr int kColRows = 6;
constexpr int kColTiles = 2;
constexpr int kColSegmentRows = 24;  // mlxr_fastnum_cols.h: segments of K up to this many rows
using vi = __m256i;
MLXR_INLINE vi vseti(int i) { return _mm256_set1_epi32(i); }
MLXR_INLINE vi vandi(vi a, vi b) { return _mm256_and_si256(a, b); }
template <int s>
MLXR_INLINE vi vshri(vi a) { return _mm256_srli_epi32(a, s); }
MLXR_INLINE vf vcvti(vi a) { return _mm256_cvtepi32_ps(a); }
MLXR_INLINE void load_words8(const uint32_t* const* rowp, int w0, vi* out) { x86::rows_words8(rowp, w0, out); }
#include "mlxr_fastnum_cols.h"

}  // namespace

bool run_avx2(const Problem* ps, int n) {
  return n > 0 && ps[0].cols ? run_cols(ps, n) : run_any(ps, n);
}

}  // namespace mlxr::fastnum

#if defined(__clang__)
#pragma clang attribute pop
#endif

#else

namespace mlxr::fastnum {
bool run_avx2(const Problem*, int) {
  return false;
}
}  // namespace mlxr::fastnum

#endif
