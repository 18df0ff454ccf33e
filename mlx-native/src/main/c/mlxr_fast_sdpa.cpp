// fast::scaled_dot_product_attention on the CPU as one primitive, with the
// bytes of MLX 0.32.4's fallback graph. For q [B, Hq, L, D], k [B, Hkv, S, D],
// v [B, Hkv, S, Dv] of one floating type T (query head h reads kv head
// h / (Hq / Hkv), as the fallback's unflatten / expand_dims arrange it):
//
//     q'     = T(scale) * q                                   (in T)
//     scores = q' @ k^T                                       (MLX's CPU matmul)
//     scores = where(mask, scores, finfo(T).min) | scores + mask | scores
//     scores = concatenate([sinks[h], scores], -1)            (with sinks)
//     p      = softmax(scores, -1, precise=True)[..., sinks ? 1 : 0 :]
//     out    = p @ v                                          (MLX's CPU matmul)
//
// MLX's CPU matmul computes every output element as one dot product summed in
// float from zero, in order over the contraction index, one multiply and one
// add per term: reference BLAS sgemm (alpha 1, beta 0) for float32, and for
// float16/bfloat16 its simd_gemm over values widened to float, rounded to T
// once at the end. The native primitive keeps that per-element arithmetic and
// runs eight outputs per AVX2 register (keys for q' @ k^T, value columns for
// p @ v), without FMA. The causal mask keeps key s for query l when
// l + S - L >= s. softmax(precise) is MLX's CPU softmax: the maximum in float,
// e = simd::exp(x - max), the normalizer summed in order from 0, then
// e * (1 / normalizer) (float32), or T(exp(x - max) * (1 / normalizer)).

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include "mlx/mlx.h"
#include "mlxr_fast.h"
#include "mlxr_fast_exp.h"
#include "mlxr_exact_ops.h"
#include "mlxr_guard.h"
#include "mlxr_qmm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MLXR_SDPA_X86 1
#include <immintrin.h>
// The shared transpose, compiled for AVX2 (the functions here that use it are).
#pragma GCC push_options
#pragma GCC target("avx2")
#include "mlxr_transpose8.h"
#pragma GCC pop_options
#else
#define MLXR_SDPA_X86 0
#endif

namespace mlxr::fast {

namespace {

namespace simd = mx::simd;

enum class MaskKind { None, Causal, Bool, Additive };

struct SdpaParams {
  float scale;
  MaskKind mask;
  bool sinks;
  // false: the output is [B, Hq, L, Dv]; true: it is
  // reshape(transpose(out, [0, 2, 1, 3]), [B, L, Hq * Dv]), written in that layout.
  bool merge_heads;
  // Row slots (sdpa_merged_into only): batch row b reads k's and v's row k_rows[b], from position
  // k_base on. Null: row b, from position 0.
  const int* k_rows = nullptr;
  int k_base = 0;
};

// Element strides of a [B, H, L, S]-broadcastable mask, 0 on broadcast axes.
struct MaskView {
  int64_t b = 0, h = 0, l = 0, s = 0;

  static MaskView of(const mx::array& m) {
    MaskView v;
    int64_t* dst[4] = {&v.b, &v.h, &v.l, &v.s};
    for (int i = 0; i < 4; i++) {
      int axis = m.ndim() - 4 + i;
      if (axis >= 0 && m.shape(axis) != 1) *dst[i] = m.strides()[axis];
    }
    return v;
  }
};

#if MLXR_SDPA_X86

// out[j] = sum_r a[r] * m[r][j], summed from zero in order over r < R, for
// j < n; m's rows are at stride ld. Both matmuls of the fallback are this:
// scores[s] = sum_d q'[d] * kt[d][s] and out[j] = sum_s p[s] * v[s][j]. Eight
// outputs per register, four registers in flight, the last n % 8 in masked
// lanes (lanes past n load zeros and are not stored).
__attribute__((target("avx2"))) void weighted_rows(const float* a, const float* m, int R, int64_t ld,
                                                   int n, float* out) {
  int j = 0;
  for (; j + 32 <= n; j += 32) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    const float* mr = m + j;
    for (int r = 0; r < R; r++, mr += ld) {
      // 16 rows ahead, as scores_few_rows prefetches its keys
      if (r + 16 < R) {
        _mm_prefetch(reinterpret_cast<const char*>(mr + 16 * ld), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(mr + 16 * ld + 16), _MM_HINT_T0);
      }
      __m256 ar = _mm256_set1_ps(a[r]);
      a0 = _mm256_add_ps(a0, _mm256_mul_ps(ar, _mm256_loadu_ps(mr)));
      a1 = _mm256_add_ps(a1, _mm256_mul_ps(ar, _mm256_loadu_ps(mr + 8)));
      a2 = _mm256_add_ps(a2, _mm256_mul_ps(ar, _mm256_loadu_ps(mr + 16)));
      a3 = _mm256_add_ps(a3, _mm256_mul_ps(ar, _mm256_loadu_ps(mr + 24)));
    }
    _mm256_storeu_ps(out + j, a0);
    _mm256_storeu_ps(out + j + 8, a1);
    _mm256_storeu_ps(out + j + 16, a2);
    _mm256_storeu_ps(out + j + 24, a3);
  }
  for (; j < n; j += 8) {
    const int lanes = std::min(8, n - j);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 a0 = _mm256_setzero_ps();
    const float* mr = m + j;
    for (int r = 0; r < R; r++, mr += ld) {
      a0 = _mm256_add_ps(a0, _mm256_mul_ps(_mm256_set1_ps(a[r]), _mm256_maskload_ps(mr, mask)));
    }
    _mm256_maskstore_ps(out + j, mask, a0);
  }
}

// weighted_rows for four rows at once: out[i][j] = sum_r a[i][r] * m[r][j], summed from zero in
// order over r < R[i], for j < n; each output's additions and multiplications are
// weighted_rows's (the same bytes), while each 16-column piece of m's rows is loaded once for
// the four (a prompt chunk's query rows share the transposed keys, and the values).
__attribute__((target("avx2"))) void weighted_rows4(const float* const* a, const int* R, const float* m, int64_t ld,
                                                    int n, float* const* out) {
  const int rmin = std::min(std::min(R[0], R[1]), std::min(R[2], R[3]));
  const int rmax = std::max(std::max(R[0], R[1]), std::max(R[2], R[3]));
  int j = 0;
  for (; j + 16 <= n; j += 16) {
    __m256 acc[4][2];
    for (int i = 0; i < 4; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    const float* mr = m + j;
    int r = 0;
    for (; r < rmin; r++, mr += ld) {
      if (r + 16 < rmin) _mm_prefetch(reinterpret_cast<const char*>(mr + 16 * ld), _MM_HINT_T0);
      const __m256 m0 = _mm256_loadu_ps(mr), m1 = _mm256_loadu_ps(mr + 8);
      for (int i = 0; i < 4; i++) {
        const __m256 ar = _mm256_set1_ps(a[i][r]);
        acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_mul_ps(ar, m0));
        acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_mul_ps(ar, m1));
      }
    }
    for (; r < rmax; r++, mr += ld) {
      const __m256 m0 = _mm256_loadu_ps(mr), m1 = _mm256_loadu_ps(mr + 8);
      for (int i = 0; i < 4; i++) {
        if (r >= R[i]) continue;
        const __m256 ar = _mm256_set1_ps(a[i][r]);
        acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_mul_ps(ar, m0));
        acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_mul_ps(ar, m1));
      }
    }
    for (int i = 0; i < 4; i++) {
      _mm256_storeu_ps(out[i] + j, acc[i][0]);
      _mm256_storeu_ps(out[i] + j + 8, acc[i][1]);
    }
  }
  if (j < n) {
    for (int i = 0; i < 4; i++) weighted_rows(a[i], m + j, R[i], ld, n - j, out[i] + j);
  }
}

// c[e] = (src[0][e], src[1][e], ..., src[7][e]) for e < 8: eight rows of eight
// floats at stride ld transposed in registers.
__attribute__((target("avx2"))) inline void transpose8(const float* src, int64_t ld, __m256* c) {
  __m256i r[8];
  for (int i = 0; i < 8; i++) r[i] = _mm256_castps_si256(_mm256_loadu_ps(src + i * ld));
  x86::transpose8(r);
  for (int i = 0; i < 8; i++) c[i] = _mm256_castsi256_ps(r[i]);
}

// kt[d][s] = k[s][d] for s < S, d < D; k rows at stride ldk, kt rows at ldt.
// Eight-by-eight blocks transposed in registers, the edges one by one.
__attribute__((target("avx2"))) void transpose(const float* k, int64_t ldk, int S, int D, float* kt,
                                               int64_t ldt) {
  int s0 = 0;
  for (; s0 + 8 <= S; s0 += 8) {
    int d0 = 0;
    for (; d0 + 8 <= D; d0 += 8) {
      __m256 c[8];
      transpose8(k + s0 * ldk + d0, ldk, c);
      for (int e = 0; e < 8; e++) _mm256_storeu_ps(kt + int64_t(d0 + e) * ldt + s0, c[e]);
    }
    for (; d0 < D; d0++)
      for (int s = s0; s < s0 + 8; s++) kt[int64_t(d0) * ldt + s] = k[s * ldk + d0];
  }
  for (int d = 0; d < D; d++)
    for (int s = s0; s < S; s++) kt[int64_t(d) * ldt + s] = k[s * ldk + d];
}

// out[r][s] = sum_d q[r][d] * k[s][d], summed from zero in order over d, for
// r < R <= 8 query rows (q rows of D, out rows of S) and s < S keys (rows at
// stride ldk); D a multiple of 8. For a few queries (decode) the keys are
// transposed eight by eight in registers and used at once by every row, not
// stored transposed first.
__attribute__((target("avx2"))) void scores_few_rows(const float* q, int R, const float* k, int64_t ldk,
                                                     int S, int D, float* out) {
  int s0 = 0;
  for (; s0 + 8 <= S; s0 += 8) {
    __m256 acc[8];
    for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
    // The keys two blocks ahead (the cache's rows are read once a step, from memory):
    // without it the loads of each block waited on memory one line at a time.
    if (s0 + 24 <= S) {
      for (int r = 16; r < 24; r++)
        for (int d = 0; d < D; d += 16) _mm_prefetch(reinterpret_cast<const char*>(k + (s0 + r) * ldk + d), _MM_HINT_T0);
    }
    for (int d0 = 0; d0 < D; d0 += 8) {
      __m256 c[8];
      transpose8(k + s0 * ldk + d0, ldk, c);
      for (int r = 0; r < R; r++) {
        const float* qr = q + int64_t(r) * D + d0;
        __m256 a = acc[r];
        for (int e = 0; e < 8; e++) a = _mm256_add_ps(a, _mm256_mul_ps(_mm256_set1_ps(qr[e]), c[e]));
        acc[r] = a;
      }
    }
    for (int r = 0; r < R; r++) _mm256_storeu_ps(out + int64_t(r) * S + s0, acc[r]);
  }
  for (int s = s0; s < S; s++) {
    for (int r = 0; r < R; r++) {
      float a = 0.0f;
      for (int d = 0; d < D; d++) a = a + q[int64_t(r) * D + d] * k[s * ldk + d];
      out[int64_t(r) * S + s] = a;
    }
  }
}

#else

void weighted_rows(const float*, const float*, int, int64_t, int, float*) {}
void weighted_rows4(const float* const*, const int*, const float*, int64_t, int, float* const*) {}
void transpose(const float*, int64_t, int, int, float*, int64_t) {}
void scores_few_rows(const float*, int, const float*, int64_t, int, int, float*) {}

#endif  // MLXR_SDPA_X86

// MLX's simd::maximum(a, b) for float: a if a is NaN, else the larger (b on ties).
inline float mlx_maximum(float a, float b) {
  return a != a ? a : (a > b ? a : b);
}

// Each of four rows' maximum over its first n values, in float, in order (MLX's CPU softmax
// with simd::max_size 1); the rows' folds run interleaved so their dependency chains overlap.
template <typename T>
void row_maxima4(T* const* x, int n, float (&m)[4]) {
  for (int j = 0; j < 4; j++) m[j] = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < n; i++) {
    m[0] = mlx_maximum(static_cast<float>(x[0][i]), m[0]);
    m[1] = mlx_maximum(static_cast<float>(x[1][i]), m[1]);
    m[2] = mlx_maximum(static_cast<float>(x[2][i]), m[2]);
    m[3] = mlx_maximum(static_cast<float>(x[3][i]), m[3]);
  }
}

// softmax(precise) in place of four rows of n values of T whose maxima row_maxima4 gave (MLX's
// CPU softmax with simd::max_size 1, per row: e = exp(x - max), the normalizer summed in order
// from 0, then T(e * (1 / normalizer))). The four rows' sequential folds run interleaved so their
// dependency chains overlap; a block of fewer rows repeats its last row. e holds 8 * n floats.
template <typename T>
void softmax_rows4(T* const* x, int n, const float (&m)[4], std::vector<float>& e) {
  e.resize(8 * size_t(n));
  float* ex[4];
  for (int j = 0; j < 4; j++) {
    ex[j] = e.data() + size_t(j) * n;
    float* d = e.data() + size_t(4 + j) * n;
    for (int i = 0; i < n; i++) d[i] = static_cast<float>(x[j][i]) - m[j];
    if (cpu_has_fma()) {
      exp_lanes(d, n, ex[j]);
    } else {
      for (int i = 0; i < n; i++) ex[j][i] = simd::exp(simd::Simd<float, 1>(d[i])).value;
    }
  }
  float norm[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int i = 0; i < n; i++) {
    norm[0] = norm[0] + ex[0][i];
    norm[1] = norm[1] + ex[1][i];
    norm[2] = norm[2] + ex[2][i];
    norm[3] = norm[3] + ex[3][i];
  }
  for (int j = 0; j < 4; j++) {
    const float inv = 1 / norm[j];
    for (int i = 0; i < n; i++) x[j][i] = static_cast<T>(ex[j][i] * inv);
  }
}

// softmax(precise) in place of four whole rows of n values of T.
template <typename T>
void softmax_rows4(T* const* x, int n, std::vector<float>& e) {
  float m[4];
  row_maxima4(x, n, m);
  softmax_rows4(x, n, m, e);
}

// softmax_rows4 of four causal rows whose entries from n to `full` are all floor (finfo(T).min,
// the causal mask's value), computed over their first n entries only, when that gives the
// bytes of the whole rows: each row's maximum over all `full` entries is then its maximum over
// the first n (the floors lie below it), e^(floor - max) is exactly 0 (MLX's exp gives 0 below
// -88), and adding those zeros in order leaves the normalizer's bits. Returns false, x untouched,
// when a row's floor - max is not below -88 (every visible score -inf, or NaN), where the caller
// runs softmax_rows4 over the whole rows instead. Entries n .. full - 1 are left unwritten: their
// probabilities are exact zeros.
template <typename T>
bool softmax_rows4_upto(T* const* x, int n, int full, T floor, std::vector<float>& e) {
  float m[4];
  row_maxima4(x, n, m);
  if (n < full) {
    for (int j = 0; j < 4; j++) {
      if (!(static_cast<float>(floor) - m[j] < -88.0f)) return false;
    }
  }
  softmax_rows4(x, n, m, e);
  return true;
}

// A [rows][cols] matrix of T at strides (row_step, col_step) as float rows:
// the data itself when it already is (float, unit col_step), else widened into
// buf. ld receives the row stride of the result.
template <typename T>
const float* float_rows(const T* m, int rows, int cols, int64_t row_step, int64_t col_step,
                        std::vector<float>& buf, int64_t& ld) {
  if (std::is_same_v<T, float> && col_step == 1) {
    ld = row_step;
    return reinterpret_cast<const float*>(m);
  }
  buf.resize(size_t(rows) * cols);
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) buf[size_t(r) * cols + c] = static_cast<float>(m[r * row_step + c * col_step]);
  ld = cols;
  return buf.data();
}

template <typename T>
void sdpa(const SdpaParams& p, const std::vector<mx::array>& in, mx::array& out) {
  const mx::array& q = in[0];
  const mx::array& k = in[1];
  const mx::array& v = in[2];
  const T floor_value = in[3].data<T>()[0];  // finfo(T).min as MLX builds it
  size_t next = 4;
  const mx::array* mask = (p.mask == MaskKind::Bool || p.mask == MaskKind::Additive) ? &in[next++] : nullptr;
  const mx::array* sinks = p.sinks ? &in[next++] : nullptr;

  const int B = q.shape(0), Hq = q.shape(1), L = q.shape(2), D = q.shape(3);
  const int Hkv = k.shape(1), S = k.shape(2), Dv = v.shape(3);
  const int rep = Hq / Hkv;
  const auto& qs = q.strides();
  const auto& ks = k.strides();
  const auto& vs = v.strides();
  const T scale_t = static_cast<T>(p.scale);
  const MaskView mv = mask ? MaskView::of(*mask) : MaskView{};
  const int cols = S + (p.sinks ? 1 : 0);

  // A group's query rows (rep heads x L positions) score together when they
  // are few (decode); otherwise each row scores against keys transposed once
  // per piece of rows.
  const int rows = rep * L;
  const bool few = rows <= 8 && D % 8 == 0;
  const T* qp = q.data<T>();
  const T* kp = k.data<T>();
  const T* vp = v.data<T>();
  T* op = out.data<T>();

  // Rows [r_begin, r_end) of kv group g of batch b: every output row depends
  // only on its own query row and the group's keys and values, so pieces run
  // on any thread in any order with the bytes of one loop over them.
  auto run_piece = [&](int b, int g, int r_begin, int r_end) {
    std::vector<float> kt(few ? 0 : size_t(D) * S), kf, vf, qrows(size_t(few ? rows : 4) * D),
        scores(size_t(few ? rows : 4) * S), acc(4 * size_t(S)), orow(4 * size_t(Dv)), e;
    std::vector<T> block(4 * size_t(cols));
    const int64_t kr = p.k_rows != nullptr ? p.k_rows[b] : b;
    const T* kb = kp + kr * ks[0] + g * ks[1] + int64_t(p.k_base) * ks[2];
    const T* vb = vp + kr * vs[0] + g * vs[1] + int64_t(p.k_base) * vs[2];
    int64_t k_ld, v_ld;
    const float* k_rows = float_rows(kb, S, D, ks[2], ks[3], kf, k_ld);
    const float* v_rows = float_rows(vb, S, Dv, vs[2], vs[3], vf, v_ld);
    // q' = T(scale) * q, widened: row i is head g * rep + i / L, position i % L.
    auto scaled_query = [&](int i, float* dst) {
      const T* qr = qp + b * qs[0] + (g * rep + i / L) * qs[1] + (i % L) * qs[2];
      for (int d = 0; d < D; d++) dst[d] = static_cast<float>(static_cast<T>(scale_t * qr[d * qs[3]]));
    };
    if (few) {
      for (int i = 0; i < rows; i++) scaled_query(i, qrows.data() + size_t(i) * D);
      scores_few_rows(qrows.data(), rows, k_rows, k_ld, S, D, scores.data());
    } else {
      transpose(k_rows, k_ld, S, D, kt.data(), S);
    }
    // A causal prompt chunk (no sinks): query l sees keys 0 .. l + S - L only, and the rest of its
    // row is the mask's floor, whose probability is an exact zero. Its scores stop at the last
    // visible key, its softmax at the block's last visible key (softmax_rows4_upto, which says
    // when that keeps the bytes), and its p @ v at its own last visible key, where every value
    // row after it is finite (a zero times a finite value adds a zero, which leaves a sum
    // started at +0 as it is; times an infinity or a NaN it would add a NaN, so those rows are
    // summed in full as MLX sums them). MLX's graph computes and sums the whole rows.
    // Only value rows at or past the piece's fewest visible keys can be past a row's own, so the
    // search for the last non-finite one stops there (-1: none from there on).
    const bool causal_rows = !few && p.mask == MaskKind::Causal && !p.sinks;
    int last_nonfinite_value = -1;
    if (causal_rows) {
      int first_l = L;
      for (int i = r_begin; i < r_end && first_l > 0; i++) first_l = std::min(first_l, i % L);
      const int fewest_visible = std::clamp(first_l + S - L + 1, 0, S);
      for (int s = S - 1; s >= fewest_visible && last_nonfinite_value < 0; s--)
        for (int d = 0; d < Dv; d++)
          if (!std::isfinite(v_rows[s * v_ld + d])) {
            last_nonfinite_value = s;
            break;
          }
    }
    for (int i0 = r_begin; i0 < r_end; i0 += 4) {
      const int nb = std::min(4, r_end - i0);
      int visible[4] = {cols, cols, cols, cols};
      int block_cols = cols;
      if (causal_rows) {
        block_cols = 0;
        for (int j = 0; j < 4; j++) {
          const int l = (i0 + std::min(j, nb - 1)) % L;
          visible[j] = std::clamp(l + S - L + 1, 0, S);
          block_cols = std::max(block_cols, visible[j]);
        }
      }
      // A whole block of a prompt chunk scores its four rows together (weighted_rows4: the keys
      // loaded once for them, each score's bytes weighted_rows's), up to the block's last
      // visible key; a short block row by row.
      const bool four = !few && nb == 4;
      if (four) {
        const float* qa[4];
        float* sa[4];
        const int depth[4] = {D, D, D, D};
        for (int j = 0; j < 4; j++) {
          scaled_query(i0 + j, qrows.data() + size_t(j) * D);
          qa[j] = qrows.data() + size_t(j) * D;
          sa[j] = scores.data() + size_t(j) * S;
        }
        weighted_rows4(qa, depth, kt.data(), S, std::min(block_cols, S), sa);
      }
      for (int j = 0; j < nb; j++) {
        const int i = i0 + j;
        const int h = g * rep + i / L;
        const int l = i % L;
        const float* sc_f = scores.data() + (few ? size_t(i) * S : four ? size_t(j) * S : 0);
        if (!few && !four) {
          scaled_query(i, qrows.data());
          weighted_rows(qrows.data(), kt.data(), D, S, visible[j] < S ? visible[j] : S, scores.data());
        }
        T* sc = block.data() + size_t(j) * cols;
        if (sinks) *sc++ = static_cast<T>(sinks->data<T>()[h * sinks->strides()[0]]);
        if (causal_rows) {
          // the switch below for the causal mask: the visible keys' scores, then the floor
          const int seen = std::min(visible[j], block_cols);
          for (int s = 0; s < seen; s++) sc[s] = static_cast<T>(sc_f[s]);
          std::fill(sc + seen, sc + block_cols, floor_value);
          continue;
        }
        for (int s = 0; s < S; s++) {
          T x = static_cast<T>(sc_f[s]);
          switch (p.mask) {
            case MaskKind::Causal:
              if (!(l + S - L >= s)) x = floor_value;
              break;
            case MaskKind::Bool: {
              const bool* m = mask->data<bool>();
              if (!m[b * mv.b + h * mv.h + l * mv.l + s * mv.s]) x = floor_value;
              break;
            }
            case MaskKind::Additive:
              x = x + mask->data<T>()[b * mv.b + h * mv.h + l * mv.l + s * mv.s];
              break;
            case MaskKind::None:
              break;
          }
          sc[s] = x;
        }
      }
      T* rows4[4];
      for (int j = 0; j < 4; j++) rows4[j] = block.data() + size_t(std::min(j, nb - 1)) * cols;
      if (block_cols < cols && !softmax_rows4_upto(rows4, block_cols, cols, floor_value, e)) {
        for (int j = 0; j < nb; j++) std::fill(rows4[j] + block_cols, rows4[j] + cols, floor_value);
        block_cols = cols;
        softmax_rows4(rows4, cols, e);
      } else if (block_cols == cols) {
        softmax_rows4(rows4, cols, e);
      }
      // Cut rows: the probabilities past block_cols are exact zeros (softmax_rows4_upto), and so
      // are those past the row's visible keys; rows not cut (softmax_rows4 over the whole rows:
      // every visible score -inf or NaN) sum every key, as MLX does. A whole block sums its four
      // rows' values together (weighted_rows4), each row over its own keys.
      const bool cut = block_cols < cols;
      int summed[4];
      const float* pa[4];
      float* oa[4];
      for (int j = 0; j < 4; j++) {
        const int jj = std::min(j, nb - 1);
        summed[j] = cut && last_nonfinite_value < visible[jj] ? visible[jj] : S;
        const T* prob = rows4[jj] + (p.sinks ? 1 : 0);
        float* ar = acc.data() + size_t(j) * S;
        const int probs = std::min(summed[j], block_cols);
        for (int s = 0; s < probs; s++) ar[s] = static_cast<float>(prob[s]);
        std::fill(ar + probs, ar + summed[j], 0.0f);
        pa[j] = ar;
        oa[j] = orow.data() + size_t(j) * Dv;
      }
      if (four) weighted_rows4(pa, summed, v_rows, v_ld, Dv, oa);
      for (int j = 0; j < nb; j++) {
        const int i = i0 + j;
        const int h = g * rep + i / L;
        const int l = i % L;
        if (!four) weighted_rows(pa[j], v_rows, summed[j], v_ld, Dv, oa[j]);
        T* dst = op + (p.merge_heads ? (size_t(b) * L + l) * Hq + h : (size_t(b) * Hq + h) * L + l) * Dv;
        for (int jj = 0; jj < Dv; jj++) dst[jj] = static_cast<T>(oa[j][jj]);
      }
    }
  };

  // Pieces over the kernel pool of mlxr_qmm.h (idle between a step's matmuls):
  // one per kv group and batch row in decode, and a group's rows cut in up to
  // 8 pieces of whole 4-row blocks otherwise (each piece re-transposes the
  // group's keys: S * D moves against its rows * S * D multiply-adds).
  const int per_group = few ? 1 : std::min(8, (rows + 3) / 4);
  const int piece_rows = few ? rows : ((rows + 3) / 4 + per_group - 1) / per_group * 4;
  const int64_t units = int64_t(B) * Hkv * per_group;
  struct Pieces {
    const decltype(run_piece)* run;
    int64_t units;
    int chunks, per_group, piece_rows, rows, Hkv;
    std::exception_ptr error;
    std::atomic<bool> failed{false};
  } job{&run_piece, units, int(std::min<int64_t>(units, 4096)), per_group, piece_rows, rows, Hkv, nullptr};
  mlxr::qmm::parallel_chunks(job.chunks, [](void* ctx, int chunk) {
    auto& j = *static_cast<Pieces*>(ctx);
    // A throw must not leave a worker's chunk (the pool's threads do not
    // catch); the first is rethrown on the stream thread once all have run.
    try {
      for (int64_t u = chunk; u < j.units && !j.failed.load(std::memory_order_relaxed); u += j.chunks) {
        const int piece = int(u % j.per_group);
        const int g = int((u / j.per_group) % j.Hkv);
        const int b = int(u / (int64_t(j.per_group) * j.Hkv));
        const int r_begin = piece * j.piece_rows;
        if (r_begin < j.rows) (*j.run)(b, g, r_begin, std::min(j.rows, r_begin + j.piece_rows));
      }
    } catch (...) {
      if (!j.failed.exchange(true)) j.error = std::current_exception();
    }
  }, &job);
  if (job.error) std::rethrow_exception(job.error);
}

class NativeSdpa : public FastOpPrimitive {
 public:
  NativeSdpa(mx::Stream s, SdpaParams p) : FastOpPrimitive(s), p_(p) {}

  const char* name() const override {
    return "NativeSdpa";
  }

  bool is_equivalent(const mx::Primitive& other) const override {
    auto* o = dynamic_cast<const NativeSdpa*>(&other);
    return o != nullptr && o->p_.scale == p_.scale && o->p_.mask == p_.mask && o->p_.sinks == p_.sinks &&
           o->p_.merge_heads == p_.merge_heads;
  }

 protected:
  Task task() const override {
    return [p = p_](const std::vector<mx::array>& in, mx::array& out) {
      with_float_type(out.dtype(), [&](auto t) { sdpa<decltype(t)>(p, in, out); });
    };
  }

 private:
  SdpaParams p_;
};

bool broadcastable(const mx::array& m, const mx::Shape& target) {
  if (m.ndim() > int(target.size())) return false;
  for (int i = 0; i < m.ndim(); i++) {
    int d = m.shape(m.ndim() - 1 - i);
    if (d != 1 && d != target[target.size() - 1 - i]) return false;
  }
  return true;
}

// mx::fast::scaled_dot_product_attention, evaluated by NativeSdpa where it covers
// the case (q, k, v rank 4 of one float type; no mask, "causal", or a bool /
// same-type mask; optional sinks; a CPU default stream on a CPU with AVX2);
// otherwise MLX's op as is (which also reports invalid arguments). With
// merge_heads the result is reshape(transpose(out, [0, 2, 1, 3]), [B, L, -1]),
// which NativeSdpa writes directly.
mx::array sdpa_array(const mx::array& qa, const mx::array& ka, const mx::array& va, float scale,
                     const std::string& mode, const std::optional<mx::array>& m,
                     const std::optional<mx::array>& sk, bool merge_heads) {
  auto stream = mx::default_stream(mx::default_device());
  auto mlx_op = [&] {
    mx::array out = mx::fast::scaled_dot_product_attention(qa, ka, va, scale, mode, m, sk);
    if (!merge_heads) return out;
    return mx::reshape(mx::transpose(out, {0, 2, 1, 3}), {out.shape(0), out.shape(2), -1});
  };
  if (!on_cpu(stream) || !cpu_has_avx2()) return mlx_op();
  if (qa.ndim() != 4 || ka.ndim() != 4 || va.ndim() != 4) return mlx_op();
  if (!indexable(qa) || !indexable(ka) || !indexable(va)) return mlx_op();
  const mx::Dtype t = qa.dtype();
  if (!is_float(t) || ka.dtype() != t || va.dtype() != t) return mlx_op();
  if (ka.shape(0) != qa.shape(0) || va.shape(0) != qa.shape(0) || ka.shape(3) != qa.shape(3) ||
      ka.shape(1) != va.shape(1) || ka.shape(2) != va.shape(2) || ka.shape(1) == 0 ||
      qa.shape(1) % ka.shape(1) != 0 || qa.shape(2) == 0 || ka.shape(2) == 0 || qa.shape(3) == 0)
    return mlx_op();
  MaskKind kind = MaskKind::None;
  if (mode == "causal") {
    if (m) return mlx_op();
    kind = MaskKind::Causal;
  } else if (!mode.empty()) {
    return mlx_op();
  } else if (m) {
    mx::Shape target = {qa.shape(0), qa.shape(1), qa.shape(2), ka.shape(2)};
    if (!broadcastable(*m, target)) return mlx_op();
    if (m->dtype() == mx::bool_) {
      kind = MaskKind::Bool;
    } else if (m->dtype() == t) {
      kind = MaskKind::Additive;
    } else {
      return mlx_op();
    }
  }
  if (sk && (sk->ndim() != 1 || sk->shape(0) != qa.shape(1) || sk->dtype() != t)) return mlx_op();
  std::vector<mx::array> inputs = {qa, ka, va, mx::array(mx::finfo(t).min, t)};
  if (m) inputs.push_back(*m);
  if (sk) inputs.push_back(*sk);
  SdpaParams p{scale, kind, sk.has_value(), merge_heads};
  mx::Shape shape = merge_heads ? mx::Shape{qa.shape(0), qa.shape(2), qa.shape(1) * va.shape(3)}
                                : mx::Shape{qa.shape(0), qa.shape(1), qa.shape(2), va.shape(3)};
  return mx::array(std::move(shape), t, std::make_shared<NativeSdpa>(stream, p), std::move(inputs));
}

// The C entry points' handles: q, k, v, and mask and sinks (NULL for none).
mlxr_array sdpa_entry(mlxr_array q, mlxr_array k, mlxr_array v, float scale, const char* mask_mode,
                      mlxr_array mask, mlxr_array sinks, bool merge_heads) {
  return mlxr::guard_array([&] {
    return sdpa_array(*static_cast<mx::array*>(q), *static_cast<mx::array*>(k),
                      *static_cast<mx::array*>(v), scale, mask_mode, optional_array(mask),
                      optional_array(sinks), merge_heads);
  });
}

}  // namespace

void sdpa_merged_into(const mx::array& q, const mx::array& k, const mx::array& v, float scale, bool causal,
                      mx::array& out) {
  const mx::Dtype t = q.dtype();
  const std::vector<mx::array> in = {q, k, v, mx::array(mx::finfo(t).min, t)};
  const SdpaParams p{scale, causal ? MaskKind::Causal : MaskKind::None, false, true};
  with_float_type(out.dtype(), [&](auto tt) { sdpa<decltype(tt)>(p, in, out); });
}

void sdpa_merged_into(const mx::array& q, const mx::array& k, const mx::array& v, float scale,
                      const mx::array& mask, mx::array& out, const int* k_rows, int k_base) {
  const mx::Dtype t = q.dtype();
  const std::vector<mx::array> in = {q, k, v, mx::array(mx::finfo(t).min, t), mask};
  const SdpaParams p{scale, MaskKind::Bool, false, true, k_rows, k_base};
  with_float_type(out.dtype(), [&](auto tt) { sdpa<decltype(tt)>(p, in, out); });
}

bool sdpa_mask_covered(const mx::array& mask, const mx::Shape& scores) {
  return mask.dtype() == mx::bool_ && broadcastable(mask, scores);
}

}  // namespace mlxr::fast

extern "C" {

// mask_mode: "" (none or mask array given), "causal"; mask and sinks may be NULL.
mlxr_array mlxr_native_sdpa(mlxr_array q, mlxr_array k, mlxr_array v, float scale,
                            const char* mask_mode, mlxr_array mask, mlxr_array sinks) {
  return mlxr::fast::sdpa_entry(q, k, v, scale, mask_mode, mask, sinks, false);
}

// As mlxr_native_sdpa, the heads merged: [B, L, Hq * Dv], as the attention modules
// pass it to o_proj (mlx-lm: output.transpose(0, 2, 1, 3).reshape(B, L, -1)).
mlxr_array mlxr_native_sdpa_merged(mlxr_array q, mlxr_array k, mlxr_array v, float scale,
                                   const char* mask_mode, mlxr_array mask, mlxr_array sinks) {
  return mlxr::fast::sdpa_entry(q, k, v, scale, mask_mode, mask, sinks, true);
}

}  // extern "C"
