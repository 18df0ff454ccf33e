// The quantized-matmul kernels (mlxr_qmm_kernels.h) for AVX-512 (F, BW, VL)
// + F16C: sixteen float lanes, 32 registers, masked tails. Compiled for that
// instruction set by the pragma below and run only when the CPU has it
// (mlxr_qmm.cpp checks; MLXR_KERNEL_ISA=avx2 forces the AVX2 file instead).
// The arithmetic per lane is the AVX2 file's: the same operations in the same
// order, no FMA (not enabled here, and the shim builds with -ffp-contract=off).
#include "mlxr_dense.h"
#include "mlxr_dequantized.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c"))), apply_to = function)
#else
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,f16c")
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which
// -Wmaybe-uninitialized (in panel_pass, -Wuninitialized) reports once inlined, and block_compute's
// pre-shifted scales (sp) are written at every group's first word, which
// word 0 always is; both warnings are spurious.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#define MLXR_TRANSPOSE8_AVX512 1
#include "mlxr_transpose8.h"

namespace mlxr::qmm {
namespace {

#include "mlxr_qmm_x86.h"

constexpr int kLanes = 16;

// Lane-wide tiles per block for R rows, within 32 zmm registers: R * T
// accumulators, T packed words, the mask, R broadcast activations, scratch.
// Two tiles (32 columns, as the AVX2 file's one row) at every pass size:
// on a Zen 4 (which runs a 512-bit op as two 256-bit halves) they keep the
// next block's prefetched weights in L1 where four did not. Four tiles at
// four rows were chosen before the pre-shifted decode; measured since on the
// Zen 4 (scripts/bench/qmm_kernel_bench.sh, the SmolLM2 forward's shapes),
// two take 0.78x their time with the weights from memory and 0.92x hot, and
// one tile at eight rows 1.1x two's. Not measured on an Intel AVX-512 CPU.
template <int R>
constexpr int tiles_for() {
  return 2;
}

// Rows from which a call decodes each weight once into a panel and runs its
// passes from there (mlxr_qmm_kernels.h, panel_unit). Measured on the Zen 4
// (scripts/bench/qmm_kernel_bench.sh, cold, one thread, the SmolLM2 forward):
// 0.75x the passes' time at 6 and 16 rows, 0.93x at 8, level at 3 and 4,
// 1.1x at 2. Not measured on an Intel AVX-512 CPU.
constexpr int kPanelMinRows = 5;

using vf = __m512;
using vi = __m512i;

MLXR_INLINE vf vzero() { return _mm512_setzero_ps(); }
MLXR_INLINE vf vset1(float f) { return _mm512_set1_ps(f); }
MLXR_INLINE vf vload(const float* p) { return _mm512_loadu_ps(p); }
MLXR_INLINE void vstore(float* p, vf v) { _mm512_storeu_ps(p, v); }
MLXR_INLINE vi vseti(int i) { return _mm512_set1_epi32(i); }
MLXR_INLINE vi vand(vi a, vi b) { return _mm512_and_si512(a, b); }
MLXR_INLINE vi vor(vi a, vi b) { return _mm512_or_si512(a, b); }
template <int s>
MLXR_INLINE vi vshr(vi a) { return _mm512_srli_epi32(a, s); }
template <int s>
MLXR_INLINE vi vshl(vi a) { return _mm512_slli_epi32(a, s); }
MLXR_INLINE vf vcvt(vi a) { return _mm512_cvtepi32_ps(a); }
MLXR_INLINE vf vmul(vf a, vf b) { return _mm512_mul_ps(a, b); }

// T(v), as the AVX2 file's (see there, also for why NaNs are left to
// store_lanes): float16 by the same conversion instructions (EVEX forms),
// bfloat16 by MLX's integer round-to-nearest-even (not VCVTNEPS2BF16, which
// flushes subnormals).
template <Act A>
MLXR_INLINE vf round_to(vf v) {
  if constexpr (A == Act::F32) {
    return v;
  } else if constexpr (A == Act::F16) {
    return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  } else {
    __m512i u = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, lsb), _mm512_set1_epi32(0x7fff));
    return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32(int(0xffff0000u))));
  }
}

// Writes `lanes` (<= 16) outputs, already rounded to T, in T's encoding.
template <Act A>
MLXR_INLINE void store_lanes(void* out, size_t index, vf v, int lanes) {
  const __mmask16 keep = __mmask16((1u << lanes) - 1);
  if constexpr (A == Act::F32) {
    _mm512_mask_storeu_ps(static_cast<float*>(out) + index, keep, v);
  } else {
    __m256i h;
    if constexpr (A == Act::F16) {
      h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      // MLX writes a float16 NaN as its sign | 0x7D00; the conversion writes 0x7E00.
      __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      __m256i mlx_nan = _mm256_or_si256(_mm256_and_si256(h, _mm256_set1_epi16(short(0x8000))),
                                        _mm256_set1_epi16(0x7d00));
      h = _mm256_mask_mov_epi16(h, nan, mlx_nan);
    } else {
      // v is already bfloat16-exact: its upper halves are the encoding; MLX writes every NaN as 0x7FC0.
      __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      __m512i u = _mm512_mask_mov_epi32(_mm512_castps_si512(v), nan, _mm512_set1_epi32(0x7fc00000));
      h = _mm512_cvtepi32_epi16(_mm512_srli_epi32(u, 16));
    }
    _mm256_mask_storeu_epi16(static_cast<uint16_t*>(out) + index, keep, h);
  }
}

// out[j] = word w0 + j of each lane's row, j < 8 (x86::rows_words8).
MLXR_INLINE void load_words8(const uint32_t* const* rowp, int w0, vi* out) {
  x86::rows_words8(rowp, w0, out);
}

// Word w of each lane's row, the rows at `offsets` words from base.
MLXR_INLINE vi gather_word(const uint32_t* base, const int* offsets, int w) {
  return _mm512_i32gather_epi32(_mm512_loadu_si512(offsets), reinterpret_cast<const int*>(base) + w, 4);
}

// Register constraint of the kernels' inline assembly (add_first, mul_first).
#define MLXR_VREG "v"
#define MLXR_BCAST "%{1to16%}"
#include "mlxr_qmm_kernels.h"
#include "mlxr_dense_kernels.h"
#include "mlxr_dequantized_kernels.h"
#undef MLXR_VREG
#undef MLXR_BCAST

}  // namespace

bool run_avx512(const Problem& p, Act act, int bits, int group_size) {
  return run_any(p, act, bits, group_size);
}

void run_dense_avx512(const DenseProblem& p, Act act) {
  run_dense_any(p, act);
}

void run_dequantized_avx512(const DequantizedProblem& p, Act act) {
  run_dequantized_any(p, act);
}

}  // namespace mlxr::qmm

#if defined(__clang__)
#pragma clang attribute pop
#endif

#else

namespace mlxr::qmm {
bool run_avx512(const Problem&, Act, int, int) {
  return false;
}
void run_dense_avx512(const DenseProblem&, Act) {}
void run_dequantized_avx512(const DequantizedProblem&, Act) {}
}  // namespace mlxr::qmm

#endif
