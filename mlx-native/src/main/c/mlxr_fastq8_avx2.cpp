// The 8-bit-activation kernels (mlxr_fastq8_kernels.h) for AVX2 + FMA + F16C: eight int32 lanes,
// four byte products per lane by vpmaddubsw then vpmaddwd (8-bit weights a nibble at a time, so
// that no 16-bit pair sum saturates); up to four activation rows per pass over one tile of eight
// columns. Also the activations' quantization, for every instruction set (its bytes do not depend
// on the set). Compiled for AVX2 by the pragma below and run only when the CPU has it.
#include "mlxr_fastq8.h"
#include "mlxr_qmm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC target("avx2,fma,f16c")
#endif

#include "mlxr_transpose8.h"

namespace mlxr::fastq8 {
namespace {

using mlxr::qmm::thread_scratch;

#define MLXR_INLINE __attribute__((always_inline)) inline
#include "mlxr_fastnum_x86.h"

constexpr int kL = 8;
constexpr int kQ8Rows = 4;
constexpr int kQ8DirectRows = 2;  // calls of up to this many rows skip the panel
constexpr int kQ8Tiles = 1;

using vf = __m256;
using vi = __m256i;

MLXR_INLINE vf vzero() { return _mm256_setzero_ps(); }
MLXR_INLINE vf vset1(float f) { return _mm256_set1_ps(f); }
MLXR_INLINE vf vload(const float* p) { return _mm256_loadu_ps(p); }
MLXR_INLINE void vstore(float* p, vf v) { _mm256_storeu_ps(p, v); }
MLXR_INLINE vf vmul(vf a, vf b) { return _mm256_mul_ps(a, b); }
MLXR_INLINE vf vfma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
MLXR_INLINE vf vcvti(vi a) { return _mm256_cvtepi32_ps(a); }
MLXR_INLINE vi vzeroi() { return _mm256_setzero_si256(); }
MLXR_INLINE vi vset1i(int i) { return _mm256_set1_epi32(i); }
MLXR_INLINE vi vsubi(vi a, vi b) { return _mm256_sub_epi32(a, b); }
MLXR_INLINE vi vandi(vi a, vi b) { return _mm256_and_si256(a, b); }
MLXR_INLINE vi vshr4(vi a) { return _mm256_srli_epi32(a, 4); }
MLXR_INLINE vi vloadi(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
MLXR_INLINE void vstorei(void* p, vi v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }

// Four unsigned bytes below 16 times four signed ones, summed per int32 lane: each 16-bit pair
// sum is at most 2 * 15 * 127 in size, far from saturating.
MLXR_INLINE vi dot4_nibbles(vi w, vi x) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1));
}

template <int BITS>
MLXR_INLINE vi dot4(vi acc, vi w, vi x) {
  if constexpr (BITS == 4) {
    return _mm256_add_epi32(acc, dot4_nibbles(w, x));
  } else {
    const vi mask = _mm256_set1_epi8(0x0F);
    const vi lo = dot4_nibbles(_mm256_and_si256(w, mask), x);
    const vi hi = dot4_nibbles(_mm256_and_si256(_mm256_srli_epi16(w, 4), mask), x);
    return _mm256_add_epi32(acc, _mm256_add_epi32(lo, _mm256_slli_epi32(hi, 4)));
  }
}

MLXR_INLINE void load_words8(const uint32_t* const* rowp, int w0, vi* out) { x86::rows_words8(rowp, w0, out); }

#include "mlxr_fastq8_kernels.h"

MLXR_INLINE float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

MLXR_INLINE int hsumi(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

MLXR_INLINE float hsumf(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace

bool run_avx2(const Problem* ps, int n) {
  return q8_run(ps, n);
}

void widen_params(const void* scales, const void* biases, Dt param, int N, int K, int bits, int group_size, float* dst) {
  constexpr int C = fastnum::kColParamColumns;
  const int G = K / group_size;
  for (int n0 = 0; n0 < N; n0 += C) {
    float* sc = dst + size_t(n0 / C) * 2 * G * C;
    q8_widen(scales, biases, param, N, G, bits, n0, C, C, sc, sc + size_t(G) * C);
  }
}

void quantize_avx2(const float* x, int M, int K, int bits, int group_size, Acts& out) {
  const int blocks = K / kBlock, G = K / group_size, per_group = group_size / kBlock;
  out.xq.resize(size_t(M) * K);
  out.d.resize(size_t(M) * blocks);
  out.sq.resize(size_t(M) * blocks);
  out.xg.resize(size_t(M) * G);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  // 4-bit weights meet their activations as (0, 2, 4, 6, 1, 3, 5, 7) in each eight.
  const __m256i order = bits == 4 ? _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7) : _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i bytes_order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int m = 0; m < M; m++) {
    const float* row = x + size_t(m) * K;
    int8_t* q = out.xq.data() + size_t(m) * K;
    for (int g = 0; g < G; g++) {
      __m256 gsum = _mm256_setzero_ps();
      for (int j = g * per_group; j < (g + 1) * per_group; j++) {
        const float* src = row + size_t(j) * kBlock;
        __m256 v[4];
        __m256 amax = _mm256_setzero_ps();
        for (int i = 0; i < 4; i++) {
          v[i] = _mm256_loadu_ps(src + 8 * i);
          amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[i]));
          gsum = _mm256_add_ps(gsum, v[i]);
        }
        const float a = hmax(amax);
        const float d = a / 127.0f;
        const float inv = a > 0.0f ? 127.0f / a : 0.0f;
        const __m256 vinv = _mm256_set1_ps(inv);
        __m256i iv[4];
        __m256i isum = _mm256_setzero_si256();
        for (int i = 0; i < 4; i++) {
          const __m256 r = _mm256_round_ps(_mm256_mul_ps(v[i], vinv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
          iv[i] = _mm256_permutevar8x32_epi32(_mm256_cvtps_epi32(r), order);
          isum = _mm256_add_epi32(isum, iv[i]);
        }
        // int32 -> int8 in order: the packs interleave 128-bit halves, the last permute undoes it.
        const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(iv[0], iv[1]), _mm256_packs_epi32(iv[2], iv[3]));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + size_t(j) * kBlock), _mm256_permutevar8x32_epi32(p, bytes_order));
        out.d[size_t(m) * blocks + j] = d;
        out.sq[size_t(m) * blocks + j] = hsumi(isum);
      }
      out.xg[size_t(m) * G + g] = hsumf(gsum);
    }
  }
}

}  // namespace mlxr::fastq8

#if defined(__clang__)
#pragma clang attribute pop
#endif

#else

namespace mlxr::fastq8 {
bool run_avx2(const Problem*, int) {
  return false;
}
void quantize_avx2(const float*, int, int, int, int, Acts&) {}
void widen_params(const void*, const void*, Dt, int, int, int, int, float*) {}
}  // namespace mlxr::fastq8

#endif
