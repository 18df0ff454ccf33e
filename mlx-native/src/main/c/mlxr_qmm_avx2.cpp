// The quantized-matmul kernels (mlxr_qmm_kernels.h) for AVX2 + F16C: eight
// float lanes. Compiled for that instruction set by the pragma below and run
// only when the CPU has it (mlxr_qmm.cpp checks), so the shim stays one binary
// for any x86-64. FMA is deliberately not enabled (and the shim builds with
// -ffp-contract=off): a fused multiply-add rounds once where MLX rounds twice.
#include "mlxr_dense.h"
#include "mlxr_dequantized.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,f16c"))), apply_to = function)
#else
#pragma GCC target("avx2,f16c")
// block_compute's pre-shifted scales (sp) are written at every group's first
// word, which word 0 always is; GCC cannot see that and warns spuriously.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "mlxr_transpose8.h"

namespace mlxr::qmm {
namespace {

#include "mlxr_qmm_x86.h"

constexpr int kLanes = 8;

// Lane-wide tiles per block for R rows, within 16 ymm registers: R * T
// accumulators, T packed words, the mask, R broadcast activations, scratch
// (R = 4 with two tiles spilled and measured slower).
template <int R>
constexpr int tiles_for() {
  return R == 1 ? 4 : R == 2 ? 2 : 1;
}

// Rows from which a call decodes each weight once into a panel
// (mlxr_qmm_kernels.h, panel_unit); 0: never. This file's passes of one
// 8-lane tile measured level or slower with it at 4 to 16 rows (the Zen 4
// running this file, cold, one thread), so it keeps decoding per pass.
constexpr int kPanelMinRows = 0;

using vf = __m256;
using vi = __m256i;

MLXR_INLINE vf vzero() { return _mm256_setzero_ps(); }
MLXR_INLINE vf vset1(float f) { return _mm256_set1_ps(f); }
MLXR_INLINE vf vload(const float* p) { return _mm256_loadu_ps(p); }
MLXR_INLINE void vstore(float* p, vf v) { _mm256_storeu_ps(p, v); }
MLXR_INLINE vi vseti(int i) { return _mm256_set1_epi32(i); }
MLXR_INLINE vi vand(vi a, vi b) { return _mm256_and_si256(a, b); }
MLXR_INLINE vi vor(vi a, vi b) { return _mm256_or_si256(a, b); }
template <int s>
MLXR_INLINE vi vshr(vi a) { return _mm256_srli_epi32(a, s); }
template <int s>
MLXR_INLINE vi vshl(vi a) { return _mm256_slli_epi32(a, s); }
MLXR_INLINE vf vcvt(vi a) { return _mm256_cvtepi32_ps(a); }
MLXR_INLINE vf vmul(vf a, vf b) { return _mm256_mul_ps(a, b); }

// T(v) for the activation type: identity for float32; float16 through F16C
// (round to nearest even, equal to MLX's software conversion for every
// non-NaN value; NaN stays NaN with its sign); bfloat16 as MLX's integer
// round-to-nearest-even. MLX also turns a NaN into 0x7FC0 at every bfloat16
// rounding; here NaNs are left as they are and made 0x7FC0 only when stored
// (store_lanes), which gives the same bytes: a NaN operand makes every later
// result of its chain NaN whatever its sign or payload, and every NaN that
// reaches this rounding has a bfloat16 encoding (inputs are bfloat16 — the
// entry point sees to it — and x86 propagates an operand NaN's bits or
// writes 0xFFC00000), whose low half is zero, so the integer rounding keeps
// it a NaN (a NaN with low bits set could carry into the sign).
template <Act A>
MLXR_INLINE vf round_to(vf v) {
  if constexpr (A == Act::F32) {
    return v;
  } else if constexpr (A == Act::F16) {
    return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  } else {
    __m256i u = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, lsb), _mm256_set1_epi32(0x7fff));
    return _mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32(int(0xffff0000u))));
  }
}

// Writes `lanes` (<= 8) outputs, already rounded to T, in T's encoding.
template <Act A>
MLXR_INLINE void store_lanes(void* out, size_t index, vf v, int lanes) {
  if constexpr (A == Act::F32) {
    float* o = static_cast<float*>(out) + index;
    if (lanes == 8) {
      _mm256_storeu_ps(o, v);
    } else {
      alignas(32) float tmp[8];
      _mm256_store_ps(tmp, v);
      __builtin_memcpy(o, tmp, lanes * sizeof(float));
    }
  } else {
    alignas(16) uint16_t h[8];
    if constexpr (A == Act::F16) {
      _mm_store_si128(reinterpret_cast<__m128i*>(h),
                      _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      int nan = _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      // MLX writes a float16 NaN as its sign | 0x7D00; F16C writes 0x7E00.
      for (int l = 0; nan != 0 && l < 8; l++) {
        if (nan & (1 << l)) h[l] = uint16_t((h[l] & 0x8000) | 0x7d00);
      }
    } else {
      // v is already bfloat16-exact: its upper halves are the encoding; MLX writes every NaN as 0x7FC0.
      __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
      v = _mm256_blendv_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)), nan);
      __m256i u = _mm256_srli_epi32(_mm256_castps_si256(v), 16);
      __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(u), _mm256_extracti128_si256(u, 1));
      _mm_store_si128(reinterpret_cast<__m128i*>(h), packed);
    }
    __builtin_memcpy(static_cast<uint16_t*>(out) + index, h, lanes * sizeof(uint16_t));
  }
}

// out[j] = word w0 + j of each lane's row, j < 8.
MLXR_INLINE void load_words8(const uint32_t* const* rowp, int w0, vi* out) {
  words8x8(rowp, w0, out);
}

// Word w of each lane's row, the rows at `offsets` words from base.
MLXR_INLINE vi gather_word(const uint32_t* base, const int* offsets, int w) {
  return _mm256_i32gather_epi32(reinterpret_cast<const int*>(base) + w,
                                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offsets)), 4);
}

// Register constraint of the kernels' inline assembly (add_first, mul_first).
#define MLXR_VREG "x"
#include "mlxr_qmm_kernels.h"
#include "mlxr_dense_kernels.h"
#include "mlxr_dequantized_kernels.h"
#undef MLXR_VREG

}  // namespace

bool run_avx2(const Problem& p, Act act, int bits, int group_size) {
  return run_any(p, act, bits, group_size);
}

void run_dense_avx2(const DenseProblem& p, Act act) {
  run_dense_any(p, act);
}

void run_dequantized_avx2(const DequantizedProblem& p, Act act) {
  run_dequantized_any(p, act);
}

}  // namespace mlxr::qmm

#if defined(__clang__)
#pragma clang attribute pop
#endif

#else

namespace mlxr::qmm {
bool run_avx2(const Problem&, Act, int, int) {
  return false;
}
void run_dense_avx2(const DenseProblem&, Act) {}
void run_dequantized_avx2(const DequantizedProblem&, Act) {}
}  // namespace mlxr::qmm

#endif
