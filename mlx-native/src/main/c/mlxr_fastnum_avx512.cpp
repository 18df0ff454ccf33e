// The fast tier's kernels (mlxr_fastnum_kernels.h) for AVX-512 F/BW/VL + FMA
// + F16C: sixteen float lanes; up to eight activation rows per pass over two
// weight rows (16 accumulators + 4 decoded vectors + 2 scales of 32
// registers), up to sixteen over one (16 + 2 + 1). Compiled for that instruction set by the pragma below and run
// only when the CPU has it (mlxr_fastnum.cpp checks).
#include "mlxr_fastnum.h"
#include "mlxr_qmm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define MLXR_TRANSPOSE8_AVX512 1
#include "mlxr_transpose8.h"

namespace mlxr::fastnum {
namespace {

using mlxr::qmm::parallel_chunks;
using mlxr::qmm::parallel_threads;
using mlxr::qmm::thread_scratch;

#define MLXR_INLINE __attribute__((always_inline)) inline
#include "mlxr_fastnum_x86.h"

constexpr int kL = kLanesAvx512;
constexpr int kMaxRows = 16;
constexpr int kScaledRows = kWordLaneRows;  // fewer rows take tile_words
constexpr int kPairedRows = 8;

using vf = __m512;

MLXR_INLINE vf vzero() { return _mm512_setzero_ps(); }
MLXR_INLINE vf vset1(float f) { return _mm512_set1_ps(f); }
MLXR_INLINE vf vload(const float* p) { return _mm512_loadu_ps(p); }
MLXR_INLINE void vstore(float* p, vf v) { _mm512_storeu_ps(p, v); }
MLXR_INLINE vf vmul(vf a, vf b) { return _mm512_mul_ps(a, b); }
MLXR_INLINE vf vadd(vf a, vf b) { return _mm512_add_ps(a, b); }
MLXR_INLINE vf vfma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
MLXR_INLINE float hsum(vf v) { return _mm512_reduce_add_ps(v); }

MLXR_INLINE void decode4(const uint8_t* p, vf& lo, vf& hi) {
  __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m512i eight = _mm512_set1_epi32(8);
  lo = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_and_si512(v, _mm512_set1_epi32(15)), eight));
  hi = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_srli_epi32(v, 4), eight));
}

// q - 128: the byte with its top bit flipped, read as signed.
MLXR_INLINE vf decode8(const uint8_t* p) {
  __m128i b = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), _mm_set1_epi8(char(0x80)));
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
}

// n (<= 16) group parameters from element i as floats, zero past them.
MLXR_INLINE vf widen_params(const void* base, Dt dt, size_t i, int n) {
  const __mmask16 m = __mmask16((1u << n) - 1);
  switch (dt) {
    case Dt::F32: return _mm512_maskz_loadu_ps(m, static_cast<const float*>(base) + i);
    case Dt::F16: return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(base) + i));
    default:
      return _mm512_castsi512_ps(
          _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(base) + i)), 16));
  }
}

using vi = __m512i;

// For tile_words (mlxr_fastnum_kernels.h).

MLXR_INLINE vi load_words(const uint8_t* p, int count) {
  return _mm512_maskz_loadu_epi32(__mmask16((1u << count) - 1), p);
}

// 8 bits: q - 128 is the byte with its top bit flipped, read as signed.
template <int BITS>
MLXR_INLINE vi word_prep(vi words) {
  return BITS == 8 ? _mm512_xor_si512(words, _mm512_set1_epi32(int(0x80808080u))) : words;
}

template <int BITS>
MLXR_INLINE vf word_value(vi words, int v, vf table) {
  if constexpr (BITS == 4) {
    return _mm512_permutexvar_ps(v == 0 ? words : _mm512_srli_epi32(words, 4 * v), table);
  } else {
    const vi top = v == 3 ? words : _mm512_slli_epi32(words, 24 - 8 * v);  // byte v to the top
    return _mm512_cvtepi32_ps(_mm512_srai_epi32(top, 24));
  }
}

MLXR_INLINE vf centred_table() {
  return _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
}

template <int PW, int GS>
MLXR_INLINE vf lane_scales(const float* s, int count) {
  if constexpr (GS >= PW * kL) {
    (void)count;
    return vset1(s[0]);
  } else {
    const vi lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const vi group = _mm512_srli_epi32(_mm512_mullo_epi32(lane, _mm512_set1_epi32(PW)), __builtin_ctz(GS));
    return _mm512_permutexvar_ps(group, _mm512_maskz_loadu_ps(__mmask16((1u << count) - 1), s));
  }
}

// The low and the high nibbles of kL packed bytes looked up in table: vpermps
// reads only the low four bits of each lane's index, so the low nibble needs
// no mask; three operations where decode4 and two scalings take nine.
MLXR_INLINE void decode4_scaled(const uint8_t* p, vf table, vf& lo, vf& hi) {
  const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  lo = _mm512_permutexvar_ps(v, table);
  hi = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), table);
}

// out[i] = the sum of v[i]'s sixteen lanes for i < 16, by a tree of shuffles
// and adds over all sixteen at once (45 operations where sixteen
// _mm512_reduce_add_ps take ~140; at eight rows of K = 576 the reductions had
// been a fifth of a pass's operations). First, per four vectors a, b, c, d,
// the sums within each 128-bit block: lanes 4k..4k+3 = block k's sums of
// (a, b, c, d); then the four blocks added across by 128-bit shuffles.
MLXR_INLINE vf hsum4_blocks(vf a, vf b, vf c, vf d) {
  const vf ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));  // a0+a2 b0+b2 a1+a3 b1+b3
  const vf cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  return _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                       _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
}

MLXR_INLINE void hsum_lanes(const vf* v, float* out) {
  const vf v0 = hsum4_blocks(v[0], v[1], v[2], v[3]);
  const vf v1 = hsum4_blocks(v[4], v[5], v[6], v[7]);
  const vf v2 = hsum4_blocks(v[8], v[9], v[10], v[11]);
  const vf v3 = hsum4_blocks(v[12], v[13], v[14], v[15]);
  // blocks (0 + 2, 1 + 3) of v0 then of v1, and of v2, v3
  const vf x01 = _mm512_add_ps(_mm512_shuffle_f32x4(v0, v1, _MM_SHUFFLE(1, 0, 1, 0)),
                               _mm512_shuffle_f32x4(v0, v1, _MM_SHUFFLE(3, 2, 3, 2)));
  const vf x23 = _mm512_add_ps(_mm512_shuffle_f32x4(v2, v3, _MM_SHUFFLE(1, 0, 1, 0)),
                               _mm512_shuffle_f32x4(v2, v3, _MM_SHUFFLE(3, 2, 3, 2)));
  _mm512_storeu_ps(out, _mm512_add_ps(_mm512_shuffle_f32x4(x01, x23, _MM_SHUFFLE(2, 0, 2, 0)),
                                      _mm512_shuffle_f32x4(x01, x23, _MM_SHUFFLE(3, 1, 3, 1))));
}

#define MLXR_FASTNUM_HSUM16 1
#define MLXR_FASTNUM_SCALED_TABLE 1
#define MLXR_FASTNUM_WORD_LANES 1
#include "mlxr_fastnum_kernels.h"

// For the many-rows kernel: 12 rows x 2 tiles of 16 columns, 24 accumulators, two weight
// vectors and a broadcast activation of 32 registers.
constexpr int kColRows = 12;
constexpr int kColTiles = 2;
constexpr int kColSegmentRows = 64;  // mlxr_fastnum_cols.h: segments of K up to this many rows
MLXR_INLINE vi vseti(int i) { return _mm512_set1_epi32(i); }
MLXR_INLINE vi vandi(vi a, vi b) { return _mm512_and_si512(a, b); }
template <int s>
MLXR_INLINE vi vshri(vi a) { return _mm512_srli_epi32(a, s); }
MLXR_INLINE vf vcvti(vi a) { return _mm512_cvtepi32_ps(a); }
MLXR_INLINE void load_words8(const uint32_t* const* rowp, int w0, vi* out) { x86::rows_words8(rowp, w0, out); }
#include "mlxr_fastnum_cols.h"

}  // namespace

bool run_avx512(const Problem* ps, int n) {
  return n > 0 && ps[0].cols ? run_cols(ps, n) : run_any(ps, n);
}

}  // namespace mlxr::fastnum

#if defined(__clang__)
#pragma clang attribute pop
#endif

#else

namespace mlxr::fastnum {
bool run_avx512(const Problem*, int) {
  return false;
}
}  // namespace mlxr::fastnum

#endif
