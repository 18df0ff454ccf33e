// The one 8x8 transpose of 32-bit elements that the x86 kernels share: the
// quantized-matmul files (their packed weights and group parameters,
// mlxr_qmm_x86.h; AVX-512's two transposes at once, one per 256-bit half),
// the fast tier's many-rows kernel (mlxr_fastnum_cols.h), both through
// rows_words8, and the attention's keys (mlxr_fast_sdpa.cpp). Include
// it where AVX2 is enabled (a file-wide `#pragma GCC target`, or a push_options
// region around the include); the __m512i form where the includer defines
// MLXR_TRANSPOSE8_AVX512 (GCC's target pragma does not define __AVX512F__ in C++).
#pragma once

#include <cstdint>
#include <immintrin.h>

#ifndef MLXR_INLINE
#define MLXR_INLINE __attribute__((always_inline)) inline
#endif

// Internal linkage: each file compiles its own copy for its instruction set.
namespace mlxr::x86 {
namespace {

MLXR_INLINE __m256i unpacklo32(__m256i a, __m256i b) { return _mm256_unpacklo_epi32(a, b); }
MLXR_INLINE __m256i unpackhi32(__m256i a, __m256i b) { return _mm256_unpackhi_epi32(a, b); }
MLXR_INLINE __m256i unpacklo64(__m256i a, __m256i b) { return _mm256_unpacklo_epi64(a, b); }
MLXR_INLINE __m256i unpackhi64(__m256i a, __m256i b) { return _mm256_unpackhi_epi64(a, b); }
// (a's low 128 bits, b's low 128 bits) and (a's high, b's high).
MLXR_INLINE __m256i halves_lo(__m256i a, __m256i b) { return _mm256_permute2x128_si256(a, b, 0x20); }
MLXR_INLINE __m256i halves_hi(__m256i a, __m256i b) { return _mm256_permute2x128_si256(a, b, 0x31); }

#ifdef MLXR_TRANSPOSE8_AVX512
// The same within each 256-bit half of a 512-bit register (the last step's
// 128-bit moves as qword permutes): all in registers.
MLXR_INLINE __m512i unpacklo32(__m512i a, __m512i b) { return _mm512_unpacklo_epi32(a, b); }
MLXR_INLINE __m512i unpackhi32(__m512i a, __m512i b) { return _mm512_unpackhi_epi32(a, b); }
MLXR_INLINE __m512i unpacklo64(__m512i a, __m512i b) { return _mm512_unpacklo_epi64(a, b); }
MLXR_INLINE __m512i unpackhi64(__m512i a, __m512i b) { return _mm512_unpackhi_epi64(a, b); }
MLXR_INLINE __m512i halves_lo(__m512i a, __m512i b) {
  return _mm512_permutex2var_epi64(a, _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13), b);
}
MLXR_INLINE __m512i halves_hi(__m512i a, __m512i b) {
  return _mm512_permutex2var_epi64(a, _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15), b);
}
#endif

// r[i] holds row i's eight 32-bit elements on entry (per 256-bit half for
// __m512i), r[j] holds element j of the eight rows on return.
template <class V>
MLXR_INLINE void transpose8(V* r) {
  V t0 = unpacklo32(r[0], r[1]), t1 = unpackhi32(r[0], r[1]);
  V t2 = unpacklo32(r[2], r[3]), t3 = unpackhi32(r[2], r[3]);
  V t4 = unpacklo32(r[4], r[5]), t5 = unpackhi32(r[4], r[5]);
  V t6 = unpacklo32(r[6], r[7]), t7 = unpackhi32(r[6], r[7]);
  V u0 = unpacklo64(t0, t2), u1 = unpackhi64(t0, t2);
  V u2 = unpacklo64(t1, t3), u3 = unpackhi64(t1, t3);
  V u4 = unpacklo64(t4, t6), u5 = unpackhi64(t4, t6);
  V u6 = unpacklo64(t5, t7), u7 = unpackhi64(t5, t7);
  r[0] = halves_lo(u0, u4);
  r[1] = halves_lo(u1, u5);
  r[2] = halves_lo(u2, u6);
  r[3] = halves_lo(u3, u7);
  r[4] = halves_hi(u0, u4);
  r[5] = halves_hi(u1, u5);
  r[6] = halves_hi(u2, u6);
  r[7] = halves_hi(u3, u7);
}

// Eight contiguous words of each of eight rows (rowp[0..7]), transposed: out[j] holds word w0 + j
// of every row, row l in lane l.
MLXR_INLINE void rows_words8(const uint32_t* const* rowp, int w0, __m256i* out) {
  for (int l = 0; l < 8; l++) out[l] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rowp[l] + w0));
  transpose8(out);
}

#ifdef MLXR_TRANSPOSE8_AVX512
// The same for sixteen rows: rows l and l + 8 loaded into the halves of one register, then one
// 8x8 transpose in each half at once, all in registers (two 256-bit transposes and inserts went
// through the stack and cost a fifth of the exact M = 1 kernel's time).
MLXR_INLINE void rows_words8(const uint32_t* const* rowp, int w0, __m512i* out) {
  for (int l = 0; l < 8; l++) {
    out[l] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rowp[l] + w0))),
                                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rowp[l + 8] + w0)), 1);
  }
  transpose8(out);
}
#endif

}  // namespace
}  // namespace mlxr::x86
