// The fast numerics tier's decoder block (--numerics fast): one MLX primitive
// for a whole pre-norm transformer block of the llama / qwen2 / qwen3 shape,
//
//     r = attention(rms_norm(x, w_in)),  h = x + o_proj(r)
//     out = h + down_proj(silu(gate_proj(n)) * up_proj(n)),  n = rms_norm(h, w_post)
//
// with the seven projections affine 4/8-bit weights evaluated by the tier's
// kernels (mlxr_fastnum.h), rope of the default kind (base, scale) at
// positions offset .. offset + L - 1, causal attention over a full-precision
// cache's first `offset` positions and the block's own new keys and values,
// qwen3's per-head q/k norms and qwen2's projection biases where present.
//
// Why one primitive: a decode step of the block as mlx-lm's graph is ~28 MLX
// primitives, each a task on MLX's stream thread and a node the calling thread
// builds, schedules and allocates for; at SmolLM2's size that overhead is as
// large as the arithmetic. The tier changes bits anyway (its oracle is a
// float64 rendering of the model, FastNumericsOracleTest), so everything
// between the projections runs in float32 here and only the block's outputs are
// rounded to the activations' dtype.
//
// The primitive, its outputs and its cache writes: mlxr_block.h.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlx/mlx.h"
#include "mlxr_block.h"
#include "mlxr_fast.h"
#include "mlxr_fast_exp.h"
#include "mlxr_fastnum.h"
#include "mlxr_fastq8.h"
#include "mlxr_guard.h"
#include "mlxr_qmm.h"
#include "mlxr_row_major.h"

// x86-64 only (AVX2 intrinsics throughout); elsewhere the entry point is an error, and the Java
// side never calls it (the fast tier needs an x86-64 CPU).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

namespace mlxr::fastnum {

namespace {

namespace mx = mlx::core;

using namespace mlxr::block;

// Scratch of the calling thread (MLX's stream thread runs every block), kept from call to call
// up to calls of this many rows (a lone row's prompt chunk); after larger ones (~24 KB a row for
// SmolLM2: a batch's prompt chunk of 16 rows of 512 would hold ~200 MB) given back at the next
// smaller call (run_block).
constexpr int kRetainedRows = 512;

float* scratch(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Eight elements of a float32 / float16 / bfloat16 row as floats.
__attribute__((target("avx2,fma,f16c"))) inline __m256 load8(const void* p, Dt dt, size_t i) {
  switch (dt) {
    case Dt::F32: return _mm256_loadu_ps(static_cast<const float*>(p) + i);
    case Dt::F16:
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(p) + i)));
    default: {
      __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(p) + i));
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
  }
}

__attribute__((target("avx2,fma"))) inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// sum_i q[i] k[i] over n (a multiple of 8) elements.
__attribute__((target("avx2,fma,f16c"))) float dot(const float* q, const void* k, Dt dt, int n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load8(k, dt, i), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), load8(k, dt, i + 8), a1);
  }
  if (i < n) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load8(k, dt, i), a0);
  return hsum(_mm256_add_ps(a0, a1));
}

// acc[i] += p v[i] over n (a multiple of 8) elements.
__attribute__((target("avx2,fma,f16c"))) void axpy(float p, const void* v, Dt dt, float* acc, int n) {
  const __m256 pv = _mm256_set1_ps(p);
  for (int i = 0; i < n; i += 8) {
    _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(pv, load8(v, dt, i), _mm256_loadu_ps(acc + i)));
  }
}

// a[i] = silu(g[i]) * u[i] = g / (1 + exp(-g)) * u.
__attribute__((target("avx2,fma"))) void silu_times(const float* g, const float* u, float* a, int n, float* e) {
  for (int i = 0; i < n; i++) e[i] = -g[i];
  mlxr::fast::exp_lanes(e, n, e);
  const __m256 one = _mm256_set1_ps(1.0f);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 d = _mm256_add_ps(one, _mm256_loadu_ps(e + i));
    _mm256_storeu_ps(a + i, _mm256_mul_ps(_mm256_div_ps(_mm256_loadu_ps(g + i), d), _mm256_loadu_ps(u + i)));
  }
  for (; i < n; i++) a[i] = g[i] / (1.0f + e[i]) * u[i];
}

// The attention row kernels for a head size of 8 NV floats, the key/value dtype fixed: the
// query (pre-scaled) and the value sums stay in registers, four keys are scored at once.
template <Dt DT>
__attribute__((target("avx2,fma,f16c"))) inline __m256 load8t(const char* row, int i) {
  return load8(row, DT, size_t(i));
}

template <Dt DT, int NV>
__attribute__((target("avx2,fma,f16c"))) void scores_t(const __m256* qv, const char* k, size_t row_bytes, int count,
                                                        float* p) {
  int j = 0;
  for (; j + 4 <= count; j += 4) {
    const char* k0 = k + size_t(j) * row_bytes;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
#pragma GCC unroll 16
    for (int i = 0; i < NV; i++) {
      a0 = _mm256_fmadd_ps(qv[i], load8t<DT>(k0, 8 * i), a0);
      a1 = _mm256_fmadd_ps(qv[i], load8t<DT>(k0 + row_bytes, 8 * i), a1);
      a2 = _mm256_fmadd_ps(qv[i], load8t<DT>(k0 + 2 * row_bytes, 8 * i), a2);
      a3 = _mm256_fmadd_ps(qv[i], load8t<DT>(k0 + 3 * row_bytes, 8 * i), a3);
    }
    // [a0 a1 a2 a3] totals: two rounds of pairwise sums, then the two 128-bit halves
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    _mm_storeu_ps(p + j, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
  }
  for (; j < count; j++) {
    const char* kj = k + size_t(j) * row_bytes;
    __m256 a = _mm256_setzero_ps();
#pragma GCC unroll 16
    for (int i = 0; i < NV; i++) a = _mm256_fmadd_ps(qv[i], load8t<DT>(kj, 8 * i), a);
    p[j] = hsum(a);
  }
}

template <Dt DT, int NV>
__attribute__((target("avx2,fma,f16c"))) void weigh_t(const float* p, const char* v, size_t row_bytes, int count,
                                                       __m256* acc) {
  for (int j = 0; j < count; j++) {
    const __m256 pj = _mm256_set1_ps(p[j]);
    const char* vj = v + size_t(j) * row_bytes;
#pragma GCC unroll 16
    for (int i = 0; i < NV; i++) acc[i] = _mm256_fmadd_ps(pj, load8t<DT>(vj, 8 * i), acc[i]);
  }
}

// p[j] = e^(p[j] - m) for the n scores' maximum m (into *m); returns their sum.
float exp_from_max(float* p, int n, float* m) {
  float mx = -INFINITY;
  for (int j = 0; j < n; j++) mx = std::max(mx, p[j]);
  for (int j = 0; j < n; j++) p[j] -= mx;
  mlxr::fast::exp_lanes(p, n, p);
  float sum = 0;
  for (int j = 0; j < n; j++) sum += p[j];
  *m = mx;
  return sum;
}

// One query row against n key rows (row_bytes apart), the softmax's parts over these rows
// alone: p[j] = scale q . k_j, *m = max_j p[j], acc = sum_j e^(p[j] - m) v_j (not normalized);
// returns sum_j e^(p[j] - m). merge_parts combines the parts of a query's position ranges.
template <Dt DT, int NV>
__attribute__((target("avx2,fma,f16c"))) float attend_part_t(const float* q, float scale, const char* k,
                                                              const char* v, size_t row_bytes, int n, float* p,
                                                              float* acc_out, float* m_out) {
  __m256 qv[NV];
  const __m256 sv = _mm256_set1_ps(scale);
#pragma GCC unroll 16
  for (int i = 0; i < NV; i++) qv[i] = _mm256_mul_ps(_mm256_loadu_ps(q + 8 * i), sv);
  scores_t<DT, NV>(qv, k, row_bytes, n, p);
  const float sum = exp_from_max(p, n, m_out);
  __m256 acc[NV];
#pragma GCC unroll 16
  for (int i = 0; i < NV; i++) acc[i] = _mm256_setzero_ps();
  weigh_t<DT, NV>(p, v, row_bytes, n, acc);
#pragma GCC unroll 16
  for (int i = 0; i < NV; i++) _mm256_storeu_ps(acc_out + 8 * i, acc[i]);
  return sum;
}

using AttendPart = float (*)(const float*, float, const char*, const char*, size_t, int, float*, float*, float*);

// The part kernel for head size D and dtype dt, or null (attend_part_generic).
AttendPart attend_part_for(int D, Dt dt) {
  switch (D) {
    case 64: return dt == Dt::F32 ? attend_part_t<Dt::F32, 8> : dt == Dt::F16 ? attend_part_t<Dt::F16, 8>
                                                                                : attend_part_t<Dt::BF16, 8>;
    case 128: return dt == Dt::F32 ? attend_part_t<Dt::F32, 16> : dt == Dt::F16 ? attend_part_t<Dt::F16, 16>
                                                                                 : attend_part_t<Dt::BF16, 16>;
    default: return nullptr;
  }
}

// R query rows (2 <= R <= 4) over the same n key and value rows, the rows of one kv head's group
// at one position: each row by attend_part_t's operations in attend_part_t's order (its pre-scaled
// query, the same fused multiply-adds into the same sums, the same pairwise totals, exp_from_max,
// the values summed over keys in order), so each row's part has attend_part_t's bytes; but each
// key and value vector is loaded once for the R rows, not once per row (a row alone loads one
// for every fused multiply-add), and the rows' softmax maxima and sums run as R chains side by
// side. Measured on a Zen 4 (benchmarks.md): forwards of several positions (verify rounds, prompt
// chunks) 4-12% faster from 600 positions of context, a 4,000-token prefill 1.3x; a one-position
// step unchanged (its keys and values come from memory either way). The 4 R sums and four key or
// value vectors need AVX-512VL's 32 vector registers (the operations stay 256-bit).
template <Dt DT, int NV, int R>
__attribute__((target("avx2,fma,f16c,avx512f,avx512vl"))) void attend_rows_t(const float* const* q, float scale,
                                                                             const char* k, const char* v,
                                                                             size_t row_bytes, int n, float* p,
                                                                             float* const* part) {
  static_assert(NV % 4 == 0 && R >= 2 && R <= 4, "four value vectors a pass, up to four rows");
  constexpr int D = 8 * NV;
  alignas(32) float qs[R][D];
  const __m256 sv = _mm256_set1_ps(scale);
#pragma GCC unroll 4
  for (int r = 0; r < R; r++)
    for (int i = 0; i < NV; i++) _mm256_store_ps(qs[r] + 8 * i, _mm256_mul_ps(_mm256_loadu_ps(q[r] + 8 * i), sv));
  int j = 0;
  for (; j + 4 <= n; j += 4) {
    const char* k0 = k + size_t(j) * row_bytes;
    __m256 a[R][4];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
      for (int t = 0; t < 4; t++) a[r][t] = _mm256_setzero_ps();
#pragma GCC unroll 16
    for (int i = 0; i < NV; i++) {
      const __m256 c0 = load8t<DT>(k0, 8 * i), c1 = load8t<DT>(k0 + row_bytes, 8 * i),
                   c2 = load8t<DT>(k0 + 2 * row_bytes, 8 * i), c3 = load8t<DT>(k0 + 3 * row_bytes, 8 * i);
#pragma GCC unroll 4
      for (int r = 0; r < R; r++) {
        const __m256 qv = _mm256_load_ps(qs[r] + 8 * i);
        a[r][0] = _mm256_fmadd_ps(qv, c0, a[r][0]);
        a[r][1] = _mm256_fmadd_ps(qv, c1, a[r][1]);
        a[r][2] = _mm256_fmadd_ps(qv, c2, a[r][2]);
        a[r][3] = _mm256_fmadd_ps(qv, c3, a[r][3]);
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
      const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a[r][0], a[r][1]), _mm256_hadd_ps(a[r][2], a[r][3]));
      _mm_storeu_ps(p + size_t(r) * n + j, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
    }
  }
  for (; j < n; j++) {
    const char* kj = k + size_t(j) * row_bytes;
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
      __m256 a = _mm256_setzero_ps();
#pragma GCC unroll 16
      for (int i = 0; i < NV; i++) a = _mm256_fmadd_ps(_mm256_load_ps(qs[r] + 8 * i), load8t<DT>(kj, 8 * i), a);
      p[size_t(r) * n + j] = hsum(a);
    }
  }
  // exp_from_max for each row, the rows' maxima and sums as R chains side by side (each in its
  // row's order: its bytes)
  float mx[R], sum[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; r++) mx[r] = -INFINITY;
  for (int jj = 0; jj < n; jj++)
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) mx[r] = std::max(mx[r], p[size_t(r) * n + jj]);
#pragma GCC unroll 4
  for (int r = 0; r < R; r++) {
    float* pr = p + size_t(r) * n;
    for (int jj = 0; jj < n; jj++) pr[jj] -= mx[r];
    mlxr::fast::exp_lanes(pr, n, pr);
    sum[r] = 0;
  }
  for (int jj = 0; jj < n; jj++)
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) sum[r] += p[size_t(r) * n + jj];
#pragma GCC unroll 4
  for (int r = 0; r < R; r++) {
    part[r][D] = mx[r];
    part[r][D + 1] = sum[r];
  }
  for (int i0 = 0; i0 < NV; i0 += 4) {
    __m256 acc[R][4];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
      for (int t = 0; t < 4; t++) acc[r][t] = _mm256_setzero_ps();
    for (int jj = 0; jj < n; jj++) {
      const char* vj = v + size_t(jj) * row_bytes;
      const __m256 c0 = load8t<DT>(vj, 8 * i0), c1 = load8t<DT>(vj, 8 * (i0 + 1)), c2 = load8t<DT>(vj, 8 * (i0 + 2)),
                   c3 = load8t<DT>(vj, 8 * (i0 + 3));
#pragma GCC unroll 4
      for (int r = 0; r < R; r++) {
        const __m256 pj = _mm256_set1_ps(p[size_t(r) * n + jj]);
        acc[r][0] = _mm256_fmadd_ps(pj, c0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(pj, c1, acc[r][1]);
        acc[r][2] = _mm256_fmadd_ps(pj, c2, acc[r][2]);
        acc[r][3] = _mm256_fmadd_ps(pj, c3, acc[r][3]);
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
      for (int t = 0; t < 4; t++) _mm256_storeu_ps(part[r] + 8 * (i0 + t), acc[r][t]);
  }
}

// R rows' parts: part[r] is row r's acc[D], then m and the sum, as attend_part_t leaves them.
using AttendRows = void (*)(const float* const*, float, const char*, const char*, size_t, int, float*, float* const*);

template <int NV, int R>
AttendRows attend_rows_dt(Dt dt) {
  return dt == Dt::F32 ? attend_rows_t<Dt::F32, NV, R> : dt == Dt::F16 ? attend_rows_t<Dt::F16, NV, R>
                                                                        : attend_rows_t<Dt::BF16, NV, R>;
}

// The kernel for R rows (2 .. 4) of head size D and dtype dt, or null (one row at a time).
AttendRows attend_rows_for(int D, Dt dt, int R) {
  if (D != 64 && D != 128) return nullptr;
  switch (R) {
    case 2: return D == 64 ? attend_rows_dt<8, 2>(dt) : attend_rows_dt<16, 2>(dt);
    case 3: return D == 64 ? attend_rows_dt<8, 3>(dt) : attend_rows_dt<16, 3>(dt);
    case 4: return D == 64 ? attend_rows_dt<8, 4>(dt) : attend_rows_dt<16, 4>(dt);
    default: return nullptr;
  }
}

// Rows of a group attend_chunk passes to attend_rows_t at once: 4 where the CPU has AVX-512
// (F/BW/VL), 1 (attend_part_t row by row) otherwise or when the environment's
// MLXR_FAST_ATTENTION_ROWS says 1 (A/B runs); mlxr_fast_attention_rows sets it (tests). Each
// row's bytes are the same either way.
std::atomic<int>& attention_rows() {
  static std::atomic<int> rows{[] {
    if (!mlxr::cpu_has(mlxr::Isa::Avx512)) return 1;
    const char* v = std::getenv("MLXR_FAST_ATTENTION_ROWS");
    return v != nullptr && std::strcmp(v, "1") == 0 ? 1 : 4;
  }()};
  return rows;
}

// attend_part_t for any head size D (a multiple of 8).
float attend_part_generic(const float* q, float scale, const char* k, const char* v, Dt dt, int D, size_t row_bytes,
                          int n, float* p, float* acc, float* m_out) {
  for (int j = 0; j < n; j++) p[j] = dot(q, k + j * row_bytes, dt, D) * scale;
  const float sum = exp_from_max(p, n, m_out);
  std::fill(acc, acc + D, 0.0f);
  for (int j = 0; j < n; j++) axpy(p[j], v + j * row_bytes, dt, acc, D);
  return sum;
}

// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w for `rows` rows of n.
void rms_norm(const float* x, const float* w, float eps, int rows, int n, float* y) {
  for (int r = 0; r < rows; r++) {
    const float* xr = x + size_t(r) * n;
    double ss = 0;
    for (int i = 0; i < n; i++) ss += double(xr[i]) * xr[i];
    const float inv = float(1.0 / std::sqrt(ss / n + eps));
    float* yr = y + size_t(r) * n;
    for (int i = 0; i < n; i++) yr[i] = xr[i] * inv * w[i];
  }
}

// cos and sin of each row's positions times each frequency, [rows, dims / 2] each: without left
// padding one table row per position offset + l (rows = L, shared by the batch's rows), with it
// one per (b, l) at position offset - left_padding[b] + l (rows = B * L, mlx-lm's per-row rope
// offsets). Every block of a step asks for the same table (one rope per model), so the last one
// is kept.
struct RopeTable {
  int offset = -1, L = 0, dims = 0;
  float base = 0, scale = 0;
  std::vector<int> left_padding;
  std::vector<float> cos_sin;  // cos rows, then sin rows
};

const RopeTable& rope_table(const BlockSpec& s, int offset, int L) {
  thread_local RopeTable t;
  if (t.offset == offset && t.L == L && t.dims == s.rope_dims && t.base == s.rope_base &&
      t.scale == s.rope_scale && t.left_padding == s.left_padding)
    return t;
  const int half = s.rope_dims / 2;
  const int B = s.left_padding.empty() ? 1 : int(s.left_padding.size());
  const size_t rows = size_t(B) * L;
  t.cos_sin.resize(2 * rows * half);
  for (int i = 0; i < half; i++) {
    const double inv_freq = std::pow(double(s.rope_base), -double(i) / half);
    for (int b = 0; b < B; b++) {
      const int start = offset - (s.left_padding.empty() ? 0 : s.left_padding[b]);
      for (int l = 0; l < L; l++) {
        const size_t row = size_t(b) * L + l;
        const double pos = double(float(start + l) * s.rope_scale);
        t.cos_sin[row * half + i] = float(std::cos(pos * inv_freq));
        t.cos_sin[(rows + row) * half + i] = float(std::sin(pos * inv_freq));
      }
    }
  }
  t.offset = offset;
  t.L = L;
  t.dims = s.rope_dims;
  t.base = s.rope_base;
  t.scale = s.rope_scale;
  t.left_padding = s.left_padding;
  return t;
}

// Rotates the first `dims` elements of every head of rows [B * L, heads * D]
// by the angles of rope_table's rows (cos/sin tables [L or B * L, dims / 2]: per_row for the latter).
void rope(float* x, int B, int L, int heads, int D, const BlockSpec& s, const float* cos_t, const float* sin_t,
          bool per_row) {
  const int half = s.rope_dims / 2;
  for (int b = 0; b < B; b++) {
    for (int l = 0; l < L; l++) {
      const size_t row = per_row ? size_t(b) * L + l : size_t(l);
      const float* c = cos_t + row * half;
      const float* sn = sin_t + row * half;
      for (int h = 0; h < heads; h++) {
        float* v = x + (size_t(b) * L + l) * heads * D + size_t(h) * D;
        for (int i = 0; i < half; i++) {
          const int i1 = s.rope_traditional ? 2 * i : i;
          const int i2 = s.rope_traditional ? 2 * i + 1 : i + half;
          const float x1 = v[i1], x2 = v[i2];
          v[i1] = x1 * c[i] - x2 * sn[i];
          v[i2] = x1 * sn[i] + x2 * c[i];
        }
      }
    }
  }
}

// Rounds n floats to dtype dt (round to nearest even, as MLX's casts).
void narrow(const float* src, Dt dt, void* dst, size_t n) {
  switch (dt) {
    case Dt::F32: std::memcpy(dst, src, n * sizeof(float)); break;
    case Dt::F16:
      for (size_t i = 0; i < n; i++) static_cast<mx::float16_t*>(dst)[i] = static_cast<mx::float16_t>(src[i]);
      break;
    default:
      for (size_t i = 0; i < n; i++) static_cast<mx::bfloat16_t*>(dst)[i] = static_cast<mx::bfloat16_t>(src[i]);
  }
}

size_t dt_size(Dt dt) {
  return dt == Dt::F32 ? 4 : 2;
}

// One block evaluation's operands, as the attention's worker chunks read them.
//
// Chunk = (b, kv head, position range): every query row of every query head in that kv head's
// group, over the range's key and value rows. A group's heads then read those rows from memory
// once and from cache after (a chunk per query head read each kv head's rows from memory once
// per head of its group), and the ranges give the pool enough chunks to balance when kv heads
// are few. Each (query row, range) leaves its softmax part in `parts`; merge_parts combines them.
struct Attention {
  const BlockSpec* spec;
  int B, L, offset, capacity;
  int ranges;          // position ranges per kv head
  int range_positions;  // > 0: range r is a row's positions r * range_positions .. (fixed_ranges)
  const int* left_padding;  // [B]: row b's first position, or null (every row from 0)
  const float* q;      // [B * L, heads * D], roped
  const void* keys;    // the cache [B, kv_heads, capacity, D] of dt, row-contiguous, positions
  const void* values;  // < offset + L written
  Dt dt;
  float* parts;        // [B, heads, L, ranges] of (acc[D], m, sum)
  float* out;          // [B * L, heads * D]
};

// The first position of range r of `ranges` over n positions.
inline int range_start(int n, int r, int ranges) {
  return int(int64_t(n) * r / ranges);
}

void attend_chunk(void* ctx, int chunk) {
  const Attention& a = *static_cast<const Attention*>(ctx);
  const BlockSpec& s = *a.spec;
  const int D = s.head_dim, H = s.heads, Hkv = s.kv_heads, group = H / Hkv, R = a.ranges;
  const int r = chunk % R, kvh = chunk / R % Hkv, b = chunk / R / Hkv;
  const size_t row = size_t(D) * dt_size(a.dt);
  // the row's positions start .. offset + L - 1 (no work on its left padding), cut into R ranges
  const int start = a.left_padding != nullptr ? a.left_padding[b] : 0;
  const int n_row = a.offset + a.L - start;
  int p0, p1;
  if (a.range_positions > 0) {
    p0 = std::min(start + r * a.range_positions, a.offset + a.L);
    p1 = std::min(p0 + a.range_positions, a.offset + a.L);
  } else {
    p0 = start + range_start(n_row, r, R);
    p1 = start + range_start(n_row, r + 1, R);
  }
  const size_t at = ((size_t(s.slot(b)) * Hkv + kvh) * a.capacity + s.base + p0) * row;
  const char* kc = static_cast<const char*>(a.keys) + at;
  const char* vc = static_cast<const char*>(a.values) + at;
  const AttendPart part_kernel = attend_part_for(D, a.dt);
  // a group's rows at one position share their keys and values (attend_rows_t), up to `step` at once
  const int step = part_kernel != nullptr && s.isa == mlxr::Isa::Avx512 ? std::min(group, attention_rows().load()) : 1;
  float* p = mlxr::qmm::thread_scratch(size_t(step) * size_t(std::max(0, p1 - p0)) + 1);
  for (int l = 0; l < a.L; l++) {
    const int n = std::min(p1, a.offset + l + 1) - p0;  // causal: positions up to offset + l
    for (int h0 = kvh * group; h0 < (kvh + 1) * group; h0 += step) {
      const int rows = std::min(step, (kvh + 1) * group - h0);
      float* part[4];
      const float* q[4];
      for (int i = 0; i < rows; i++) {
        part[i] = a.parts + (((size_t(b) * H + h0 + i) * a.L + l) * R + r) * (D + 2);
        q[i] = a.q + (size_t(b) * a.L + l) * H * D + size_t(h0 + i) * D;
        if (n <= 0) {
          part[i][D] = -INFINITY;
          part[i][D + 1] = 0;
        }
      }
      if (n <= 0) continue;
      if (rows > 1) {
        attend_rows_for(D, a.dt, rows)(q, s.attn_scale, kc, vc, row, n, p, part);
        continue;
      }
      part[0][D + 1] = part_kernel != nullptr
                           ? part_kernel(q[0], s.attn_scale, kc, vc, row, n, p, part[0], part[0] + D)
                           : attend_part_generic(q[0], s.attn_scale, kc, vc, a.dt, D, row, n, p, part[0], part[0] + D);
    }
  }
}

// out = each query row's softmax-weighted values, from its ranges' parts: each part's sums
// rescaled from its own maximum to the row's.
void merge_parts(const Attention& a) {
  const BlockSpec& s = *a.spec;
  const int D = s.head_dim, H = s.heads, R = a.ranges;
  for (int b = 0; b < a.B; b++)
    for (int l = 0; l < a.L; l++)
      for (int h = 0; h < H; h++) {
        const float* parts = a.parts + ((size_t(b) * H + h) * a.L + l) * R * (D + 2);
        float* o = a.out + (size_t(b) * a.L + l) * H * D + size_t(h) * D;
        float m = -INFINITY;
        for (int r = 0; r < R; r++) m = std::max(m, parts[r * (D + 2) + D]);
        float sum = 0;
        std::fill(o, o + D, 0.0f);
        for (int r = 0; r < R; r++) {
          const float* part = parts + r * (D + 2);
          if (part[D + 1] == 0) continue;  // no position of this range is visible to the row
          const float w = part[D] == m ? 1.0f : std::exp(part[D] - m);
          sum += part[D + 1] * w;
          for (int d = 0; d < D; d++) o[d] += part[d] * w;
        }
        // A query before its row's first position (the left padding of a batch's first prompt
        // chunk) sees nothing: zeros, not 0 / 0. Any other query's sum is at least 1.
        const float inv = sum > 0 ? 1.0f / sum : 0.0f;
        for (int d = 0; d < D; d++) o[d] *= inv;
      }
}

// Ranges no shorter than this many positions (a range's fixed costs are a few rows' work).
constexpr int kMinRangePositions = 32;

// The 8-bit-activation tier's ranges (fixed_ranges): positions per range, counted from each row's
// first position. A query's parts, and so its output's bytes, then depend only on its own row and
// position: not on the batch's other rows nor on how many of its row's positions came in one call
// (a prompt chunk, a verify round or a decode step), which the adaptive ranges below change.
constexpr int kFixedRangePositions = 512;

// Ranges per kv head for rows spanning `positions` at most, kFixedRangePositions each.
int fixed_ranges(int positions) {
  return std::max(1, (positions + kFixedRangePositions - 1) / kFixedRangePositions);
}

// Position ranges per kv head: two chunks per pool thread where the positions allow.
int attention_ranges(int B, int kv_heads, int positions) {
  const int units = B * kv_heads;
  const int want = (2 * mlxr::qmm::parallel_threads() + units - 1) / units;
  return std::max(1, std::min(want, positions / kMinRangePositions));
}

// Profiling only (dev.mlxring.perf.BatchStepProfile): with MLXR_FAST_BLOCK_PHASES=1 in the
// environment each block adds its phases' wall times here (mlxr_fast_block_phases reads them);
// otherwise a block reads one flag and nothing more.
constexpr int kPhases = 7;  // norm + q/k/v, rope + cache write, attention, o, norm + gate/up, silu, down
std::atomic<long long> phase_ns[kPhases];
std::atomic<long long> phase_blocks;

bool phase_timing() {
  static const bool on = [] {
    const char* v = std::getenv("MLXR_FAST_BLOCK_PHASES");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
}

void run_block(const BlockSpec& s, int offset, const std::vector<mx::array>& in, std::vector<mx::array>& out) {
  using clock = std::chrono::steady_clock;
  const bool timing = phase_timing();
  clock::time_point t0 = timing ? clock::now() : clock::time_point{};
  auto mark = [&](int phase) {
    if (!timing) return;
    const clock::time_point t1 = clock::now();
    phase_ns[phase] += std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    t0 = t1;
  };
  const mx::array& x = in[kX];
  const int B = x.shape(0), L = x.shape(1), Dm = x.shape(2);
  const int M = B * L, H = s.heads, Hkv = s.kv_heads, Dh = s.head_dim;
  const int inter = in[kFirstProj + 3 * kGate].shape(0);
  const Dt act = dt_of(out[0].dtype());
  const int capacity = out[1].shape(2);
  // Reused by every block of every step: a decode step then allocates nothing here.
  thread_local std::vector<float> ns, qs, ks, vs, as, ps, hs, gs, us, ex, ws;
  // The rows the buffers were last grown for: the first call of at most kRetainedRows after a
  // larger one (a batch's prompt chunk) gives the scratch back, once, rather than each block of
  // that chunk freeing and zero-filling it again.
  thread_local int scratch_rows = 0;
  if (M <= kRetainedRows && scratch_rows > kRetainedRows) {
    for (std::vector<float>* v : {&ns, &qs, &ks, &vs, &as, &ps, &hs, &gs, &us, &ex, &ws}) std::vector<float>().swap(*v);
    scratch_rows = 0;
  }
  scratch_rows = std::max(scratch_rows, M);
  std::vector<float> xcopy;
  // Everything but the weights is read as row-contiguous floats.
  const float* X = row_major_floats(x, xcopy);
  auto norm_weight = [&](int input, std::vector<float>& buf) { return row_major_floats(in[input], buf); };
  auto weight = [&](int p, float* y) {
    const mx::array& w = in[kFirstProj + 3 * p];
    const mx::array& sc = in[kFirstProj + 3 * p + 1];
    const mx::array& bi = in[kFirstProj + 3 * p + 2];
    if (!w.flags().row_contiguous || !sc.flags().row_contiguous || !bi.flags().row_contiguous) {
      throw std::logic_error("[FastDecoderBlock] weights must be row-contiguous");
    }
    Weight weight{w.data<uint32_t>(), sc.data<void>(), bi.data<void>(), dt_of(sc.dtype()), w.shape(0), s.bits[p],
                  s.group_size[p], y, Dt::F32};
    if (s.acts == static_cast<int>(Activations::Q8)) {
      const int K = w.shape(1) * 32 / s.bits[p];  // packed words per row to positions
      weight.q8_params = mlxr::fastq8::widened_params(sc, bi, K, s.bits[p], s.group_size[p]);
    }
    return weight;
  };
  // y_i = xin times projection first + i, for the n projections from first on (one pass over the
  // pool where their widths match: q/k/v, gate/up).
  auto mm = [&](int first, int n, const float* xin, int K, float* const* ys) {
    Weight ws[3];
    for (int i = 0; i < n; i++) ws[i] = weight(first + i, ys[i]);
    matmul(xin, M, K, ws, n, s.isa, static_cast<Activations>(s.acts));
    for (int i = 0; i < n; i++) {
      const int p = first + i;
      if (!s.qkv_bias || p > kV) continue;
      std::vector<float> bias;
      const float* bv = row_major_floats(in[s.qkv_bias_input() + p], bias);
      for (int r = 0; r < M; r++)
        for (int c = 0; c < ws[i].N; c++) ys[i][size_t(r) * ws[i].N + c] += bv[c];
    }
  };

  // attention
  std::vector<float> wbuf;
  float* xn = scratch(ns, size_t(M) * Dm);
  rms_norm(X, norm_weight(kInNorm, wbuf), s.norm_eps, M, Dm, xn);
  float* q = scratch(qs, size_t(M) * H * Dh);
  float* k = scratch(ks, size_t(M) * Hkv * Dh);
  float* v = scratch(vs, size_t(M) * Hkv * Dh);
  {
    float* const qkv[3] = {q, k, v};
    mm(kQ, 3, xn, Dm, qkv);
  }
  if (s.qk_norm) {
    std::vector<float> qn, kn;
    rms_norm(q, norm_weight(kQkNorm, qn), s.norm_eps, M * H, Dh, q);
    rms_norm(k, norm_weight(kQkNorm + 1, kn), s.norm_eps, M * Hkv, Dh, k);
  }
  mark(0);
  const bool per_row = !s.left_padding.empty();
  const RopeTable& table = rope_table(s, offset, L);
  const float* cos_t = table.cos_sin.data();
  const float* sin_t = cos_t + size_t(per_row ? M : L) * (s.rope_dims / 2);
  rope(q, B, L, H, Dh, s, cos_t, sin_t, per_row);
  rope(k, B, L, Hkv, Dh, s, cos_t, sin_t, per_row);
  // the new keys and values, [B, L, Hkv, D] -> the cache's [B, Hkv, offset + l, D], in its dtype
  const size_t es = dt_size(act);
  for (int b = 0; b < B; b++)
    for (int l = 0; l < L; l++)
      for (int h = 0; h < Hkv; h++) {
        const size_t src = (size_t(b) * L + l) * Hkv * Dh + size_t(h) * Dh;
        const size_t dst = ((size_t(s.slot(b)) * Hkv + h) * capacity + s.base + offset + l) * Dh;
        narrow(k + src, act, out[1].data<char>() + dst * es, Dh);
        narrow(v + src, act, out[2].data<char>() + dst * es, Dh);
      }
  mark(1);
  float* attn = scratch(as, size_t(M) * H * Dh);
  const int* pads = per_row ? s.left_padding.data() : nullptr;
  const int min_pad = per_row ? *std::min_element(s.left_padding.begin(), s.left_padding.end()) : 0;
  const bool invariant = s.acts == static_cast<int>(Activations::Q8);
  const int ranges = invariant ? fixed_ranges(offset + L - min_pad) : attention_ranges(B, Hkv, offset + L - min_pad);
  float* parts = scratch(ps, size_t(M) * H * ranges * (Dh + 2));
  Attention a{&s,   B,    L, offset, capacity, ranges, invariant ? kFixedRangePositions : 0, pads, q, out[1].data<void>(),
              out[2].data<void>(), act, parts, attn};
  mlxr::qmm::parallel_chunks(B * Hkv * ranges, attend_chunk, &a);
  merge_parts(a);
  mark(2);
  float* h = scratch(hs, size_t(M) * Dm);
  mm(kO, 1, attn, H * Dh, &h);
  for (size_t i = 0; i < size_t(M) * Dm; i++) h[i] += X[i];
  mark(3);

  // MLP
  rms_norm(h, norm_weight(kPostNorm, wbuf), s.norm_eps, M, Dm, xn);
  float* g = scratch(gs, size_t(M) * inter);
  float* u = scratch(us, size_t(M) * inter);
  {
    float* const gate_up[2] = {g, u};
    mm(kGate, 2, xn, Dm, gate_up);
  }
  mark(4);
  silu_times(g, u, g, M * inter, scratch(ex, size_t(M) * inter));
  mark(5);
  float* d = scratch(ws, size_t(M) * Dm);
  mm(kDown, 1, g, inter, &d);
  for (size_t i = 0; i < size_t(M) * Dm; i++) d[i] += h[i];
  narrow(d, act, out[0].data<void>(), size_t(M) * Dm);
  mark(6);
  if (timing) phase_blocks++;
}

}  // namespace

}  // namespace mlxr::fastnum

#endif

extern "C" {

int mlxr_fast_decoder_block_rows(mlxr_array x, mlxr_array keys, mlxr_array values, const mlxr_array* weights,
                                 int n_weights, const int* ints, const float* floats, const int* left_padding,
                                 int n_rows, mlxr_array* out);
int mlxr_fast_decoder_block_slots(mlxr_array x, mlxr_array keys, mlxr_array values, const mlxr_array* weights,
                                  int n_weights, const int* ints, const float* floats, const int* left_padding,
                                  int n_rows, const int* slots, int base, mlxr_array* out);

// The rows of a kv head's group the fast blocks' attention takes at once (1: row by row; up to 4,
// and only where the CPU has AVX-512); rows <= 0 only reads it. Returns the value before the
// call. Every row's bytes are the same at any setting (tests and A/B runs).
int mlxr_fast_attention_rows(int rows) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  std::atomic<int>& at = mlxr::fastnum::attention_rows();
  if (rows <= 0) return at.load();
  return at.exchange(mlxr::cpu_has(mlxr::Isa::Avx512) ? std::min(rows, 4) : 1);
#else
  (void)rows;
  return 1;
#endif
}

// Profiling only: the fast blocks' phase times since the last call (ns[0 .. 6]: norm + q/k/v,
// rope + cache write, attention, o projection, norm + gate/up, silu, down), then zeroed; returns
// the blocks timed, or -1 when MLXR_FAST_BLOCK_PHASES=1 was not set (nothing timed).
long long mlxr_fast_block_phases(long long* ns, int n) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  using namespace mlxr::fastnum;
  if (!phase_timing()) return -1;
  for (int i = 0; i < kPhases; i++) {
    const long long v = phase_ns[i].exchange(0);
    if (i < n) ns[i] = v;
  }
  return phase_blocks.exchange(0);
#else
  (void)ns;
  (void)n;
  return -1;
#endif
}

// The fast tier's fused block (above). weights: input_layernorm.weight,
// post_attention_layernorm.weight, then weight, scales, biases of q, k, v, o,
// gate, up, down (21 arrays), then q_norm, k_norm weights when qk_norm, then
// the q, k, v biases when qkv_bias (no rope frequencies); ints and floats as mlxr_block.h's
// parse_spec reads them (the mask is causal whatever `causal` says: for one
// new row that is no mask). keys / values: the cache buffers [B, kv_heads,
// capacity, head_dim], capacity >= offset + L, of the activations' dtype. out:
// h, and the cache buffers with positions offset .. offset + L - 1 written (the
// inputs' own buffers where nothing else holds them). Every case it does not
// cover is an error naming what: the Java side (FusedBlock) only builds it
// where it applies.
int mlxr_fast_decoder_block(mlxr_array x, mlxr_array keys, mlxr_array values, const mlxr_array* weights,
                            int n_weights, const int* ints, const float* floats, mlxr_array* out) {
  return mlxr_fast_decoder_block_rows(x, keys, values, weights, n_weights, ints, floats, nullptr, 0, out);
}

// The same block over the rows of a batch cache (mlx-lm's BatchKVCache): left_padding [n_rows]
// (n_rows = B) gives each row's first filled position, so row b's rope positions are
// offset - left_padding[b] + l and its attention reads positions left_padding[b] .. offset + l
// only; the new keys and values go to the shared positions offset .. offset + L - 1 of every
// row. Each padding must lie in 0 .. offset + L - 1 (past offset: a batch's first prompt chunk,
// whose queries before their row's first position get zeros). left_padding null (n_rows 0): no
// padding, the single-row block above.
int mlxr_fast_decoder_block_rows(mlxr_array x, mlxr_array keys, mlxr_array values, const mlxr_array* weights,
                                 int n_weights, const int* ints, const float* floats, const int* left_padding,
                                 int n_rows, mlxr_array* out) {
  return mlxr_fast_decoder_block_slots(x, keys, values, weights, n_weights, ints, floats, left_padding, n_rows,
                                       nullptr, 0, out);
}

// mlxr_fast_decoder_block_rows over a batch cache with a row capacity (BatchKvCache's row slots):
// keys and values are buffers [R, kv_heads, capacity, head_dim] with R >= n_rows, row b's
// positions lie in buffer row slots[b] (distinct, 0 .. R - 1), every row's position p at buffer
// position base + p (capacity >= base + offset + L); the other buffer rows are left as they are.
// slots null: row b is buffer row b and base must be 0.
int mlxr_fast_decoder_block_slots(mlxr_array x, mlxr_array keys, mlxr_array values, const mlxr_array* weights,
                                  int n_weights, const int* ints, const float* floats, const int* left_padding,
                                  int n_rows, const int* slots, int base, mlxr_array* out) {
#if !(defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)))
  return mlxr::guard_int([] { throw std::invalid_argument("fast block: x86-64 only"); });
#else
  namespace mx = mlx::core;
  using namespace mlxr::fastnum;
  return mlxr::guard_int([&] {
    BlockSpec s = parse_spec(ints, floats, n_weights, "fast block");
    if (s.rope_freqs) throw std::invalid_argument("fast block: a rope of precomputed frequencies is not covered");
    if (s.layouts) throw std::invalid_argument("fast block: dequantized layouts are not covered");
    for (int p = 0; p < kProjections; p++) {
      if (!covered(s.bits[p], s.group_size[p]))
        throw std::invalid_argument("fast block: projection " + std::to_string(p) + " has " +
                                    std::to_string(s.bits[p]) + " bits, group " + std::to_string(s.group_size[p]));
    }
    if (n_rows < 0 || (n_rows > 0 && left_padding == nullptr))
      throw std::invalid_argument("fast block: no left paddings for " + std::to_string(n_rows) + " rows");
    if (n_rows > 0) s.left_padding.assign(left_padding, left_padding + n_rows);
    if (slots != nullptr && n_rows <= 0) throw std::invalid_argument("fast block: row slots without rows");
    if (slots == nullptr && base != 0) throw std::invalid_argument("fast block: a base without row slots");
    if (slots != nullptr) s.row_slots.assign(slots, slots + n_rows);
    s.base = base;
    s.isa = default_isa();
    auto stream = mx::default_stream(mx::default_device());
    if (!mlxr::fast::on_cpu(stream) || s.isa == mlxr::Isa::None || !mlxr::fast::cpu_has_avx2() ||
        !mlxr::fast::cpu_has_fma())
      throw std::invalid_argument("fast block: needs a CPU stream and a CPU with AVX2 and FMA");
    auto outputs = block_outputs<run_block>(s, offset_of(ints), *static_cast<mx::array*>(x), keys, values, weights,
                                            n_weights, stream, "FastDecoderBlock", "fast block");
    for (int i = 0; i < 3; i++) out[i] = new mx::array(outputs[i]);
  });
#endif
}

}  // extern "C"
