// The 8-bit-activation kernels (mlxr_fastq8_kernels.h) for AVX-512 F/BW/VL with VNNI: sixteen
// int32 lanes, each vpdpbusd four byte products per lane; up to six activation rows per pass over
// two tiles of sixteen columns (12 integer and 12 float accumulators, two weight vectors and a
// broadcast activation quad of 32 registers). Compiled for that set by the pragma below and run
// only when the CPU has it (mlxr_fastnum.cpp checks with cpu_has_avx512_vnni).
#include "mlxr_fastq8.h"
#include "mlxr_qmm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c"))), \
                             apply_to = function)
#else
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define MLXR_TRANSPOSE8_AVX512 1
#include "mlxr_transpose8.h"

namespace mlxr::fastq8 {
namespace {

using mlxr::qmm::thread_scratch;

#define MLXR_INLINE __attribute__((always_inline)) inline
#include "mlxr_fastnum_x86.h"

constexpr int kL = 16;
constexpr int kQ8Rows = 6;
constexpr int kQ8DirectRows = 2;  // calls of up to this many rows skip the panel
constexpr int kQ8Tiles = 2;

using vf = __m512;
using vi = __m512i;

MLXR_INLINE vf vzero() { return _mm512_setzero_ps(); }
MLXR_INLINE vf vset1(float f) { return _mm512_set1_ps(f); }
MLXR_INLINE vf vload(const float* p) { return _mm512_loadu_ps(p); }
MLXR_INLINE void vstore(float* p, vf v) { _mm512_storeu_ps(p, v); }
MLXR_INLINE vf vmul(vf a, vf b) { return _mm512_mul_ps(a, b); }
MLXR_INLINE vf vfma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
MLXR_INLINE vf vcvti(vi a) { return _mm512_cvtepi32_ps(a); }
MLXR_INLINE vi vzeroi() { return _mm512_setzero_si512(); }
MLXR_INLINE vi vset1i(int i) { return _mm512_set1_epi32(i); }
MLXR_INLINE vi vsubi(vi a, vi b) { return _mm512_sub_epi32(a, b); }
MLXR_INLINE vi vandi(vi a, vi b) { return _mm512_and_si512(a, b); }
MLXR_INLINE vi vshr4(vi a) { return _mm512_srli_epi32(a, 4); }
MLXR_INLINE vi vloadi(const void* p) { return _mm512_loadu_si512(p); }
MLXR_INLINE void vstorei(void* p, vi v) { _mm512_storeu_si512(p, v); }
template <int BITS>
MLXR_INLINE vi dot4(vi acc, vi w, vi x) { return _mm512_dpbusd_epi32(acc, w, x); }
MLXR_INLINE void load_words8(const uint32_t* const* rowp, int w0, vi* out) { x86::rows_words8(rowp, w0, out); }

#include "mlxr_fastq8_kernels.h"

}  // namespace

bool run_avx512(const Problem* ps, int n) {
  return q8_run(ps, n);
}

}  // namespace mlxr::fastq8

#if defined(__clang__)
#pragma clang attribute pop
#endif

#else

namespace mlxr::fastq8 {
bool run_avx512(const Problem*, int) {
  return false;
}
}  // namespace mlxr::fastq8

#endif
