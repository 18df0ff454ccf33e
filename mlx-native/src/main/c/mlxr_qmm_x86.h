// 256-bit helpers of both kernel files (mlxr_qmm_avx2.cpp, mlxr_qmm_avx512.cpp):
// included inside each file's anonymous namespace after its target pragma, so
// each gets its own copy compiled for its instruction set. See mlxr_qmm.h for
// why these files use no standard-library templates.

#define MLXR_INLINE __attribute__((always_inline)) inline

#include "mlxr_spread_prefetch.h"

MLXR_INLINE int imin(int a, int b) {
  return a < b ? a : b;
}

// Eight contiguous words of each of eight rows, transposed (mlxr_transpose8.h): out[j] holds word
// w0 + j of rows rowp[0..7].
MLXR_INLINE void words8x8(const uint32_t* const* rowp, int w0, __m256i* out) {
  x86::rows_words8(rowp, w0, out);
}

// One group parameter widened exactly to float.
MLXR_INLINE float param_at(const void* base, Param param, size_t i) {
  switch (param) {
    case Param::F32: return static_cast<const float*>(base)[i];
    case Param::F16: return _cvtsh_ss(static_cast<const uint16_t*>(base)[i]);
    default: {
      uint32_t u = uint32_t(static_cast<const uint16_t*>(base)[i]) << 16;
      float f;
      __builtin_memcpy(&f, &u, sizeof f);
      return f;
    }
  }
}

// Eight consecutive group parameters of one weight row, widened exactly to float.
MLXR_INLINE __m256i params8(const void* base, Param param, size_t i) {
  switch (param) {
    case Param::F32:
      return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const float*>(base) + i));
    case Param::F16:
      return _mm256_castps_si256(_mm256_cvtph_ps(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + i))));
    default:
      return _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(
          reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + i))), 16);
  }
}

// The group parameters of `cols` (a multiple of 8) weight rows from n0 as
// [group][column] floats (a group's are adjacent, so a kernel loads one
// vector per tile): eight groups of eight rows at a time through transpose8,
// the rest one by one. Rows past N repeat the last row.
inline void block_params(const Problem& p, int n0, int cols, int groups, float* sc, float* bi) {
  for (int c8 = 0; c8 < cols; c8 += 8) {
    size_t row[8];
    for (int l = 0; l < 8; l++) row[l] = size_t(imin(n0 + c8 + l, p.N - 1)) * groups;
    int g = 0;
    for (; g + 8 <= groups; g += 8) {
      __m256i vs[8], vb[8];
      for (int l = 0; l < 8; l++) {
        vs[l] = params8(p.scales, p.param, row[l] + g);
        vb[l] = params8(p.biases, p.param, row[l] + g);
      }
      x86::transpose8(vs);
      x86::transpose8(vb);
      for (int k = 0; k < 8; k++) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(sc + size_t(g + k) * cols + c8), vs[k]);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(bi + size_t(g + k) * cols + c8), vb[k]);
      }
    }
    for (; g < groups; g++) {
      for (int l = 0; l < 8; l++) {
        sc[size_t(g) * cols + c8 + l] = param_at(p.scales, p.param, row[l] + g);
        bi[size_t(g) * cols + c8 + l] = param_at(p.biases, p.param, row[l] + g);
      }
    }
  }
}
