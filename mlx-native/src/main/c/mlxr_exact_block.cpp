// The default (exact) tier's fused decoder block: mlx-lm's llama / qwen2 /
// qwen3 block (mlxr_block.h) as one MLX primitive with the bytes of its graph.
// The task runs, in the graph's order, the very computations the graph's native
// primitives run (mlxr_exact_ops.h), over intermediate arrays it allocates:
//
//     n   = rms_norm(x, w_in)                      NativeRmsNorm
//     q, k, v = n W^T (+ bias)                     NativeQuantizedMatmul or
//                                                  NativeDequantizedMatmul (+ MLX's add)
//     q, k = rms_norm per head (qwen3)             NativeRmsNorm
//     q, k = rope of the heads at offset           NativeRope (heads)
//     cache[..., offset:offset + L, :] = k, v      the two SliceUpdates
//     a   = sdpa(q, cache[..., :offset + L, :])    NativeSdpa (merged heads)
//     h   = x + a W_o^T                            the projection, MLX's add
//     n   = rms_norm(h, w_post)
//     out = h + swiglu(n W_g^T, n W_u^T) W_d^T     the projections, NativeSwiglu, MLX's add
//
// and where a row has a LoRA adapter on a projection (mlx-lm's LoRALinear, which the graph
// builds as y = base(x); z = (x @ a) @ b; y + (scale * z).astype(x.dtype)), its delta added to
// that row's projection output right after the base's (and its bias): each of the two float32
// matmuls as the wheel's reference BLAS sgemm computes an element (row-major NoTrans x NoTrans:
// the column-major 'N','N' loop, a sum from zero in order over k of x * a, one multiply and one
// add per term, no FMA; an element depends on its own row only, so a row computed alone has the
// bytes of the batch's matmul), then scale * z in float32, rounded to the activations' type, and
// MLX's add. mlx-lm's batch runs one adapter over all its rows, the graph of named adapters
// (AdaptableLinear) selects each row's adapter's output; either way a row's bytes are those of
// its own adapter's layer, which is what this computes per row.
// each step's output of the dtype MLX's promotion gives it. A decode step of a batch cache's rows
// (mlxr_exact_decoder_block_rows) is the same task with the graph's two arrays more: the rope at
// the rows' int32 offsets (NativeRope's per-row offsets) and the sdpa under the batch's boolean
// mask (NativeSdpa's array mask), the new keys and values at the shared index `offset`. The activations are
// float32, float16 or bfloat16 (the promotion of x's, the norms' and the group
// parameters' dtypes). MLX's adds (the biases and residuals) are one IEEE add
// per element in float, rounded to the activations' type: for float32 with an
// operand widened first where the graph's promotion widens it; for a half type
// every operand is already of that type (the entry point checks the biases).
// With the projections' dequantized layouts (--dequantized-weights) a half-type
// block reads them, as the graph's projections do; a block whose activations
// are not of the layouts' type leaves them out of its inputs, so they are
// never built for it. The Java side (FusedBlock) builds the block only for the
// cases below; tests hold its bytes to the graph's and mlx-lm's (FusedBlockTest,
// GreedyParityTest).

#include <algorithm>
#include <cstring>
#include <immintrin.h>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "mlx/mlx.h"
#include "mlxr_block.h"
#include "mlxr_dequantized.h"
#include "mlxr_exact_ops.h"
#include "mlxr_fast.h"
#include "mlxr_fast_exp.h"
#include "mlxr_guard.h"
#include "mlxr_isa.h"
#include "mlxr_row_major.h"

namespace mlxr::block {

namespace {

// A row-contiguous array of shape and dtype, its buffer fresh (MLX's own CPU code makes its
// temporaries so: an array without a primitive, given data directly).
mx::array fresh(mx::Shape shape, mx::Dtype dtype) {
  mx::array a(std::move(shape), dtype, nullptr, {});
  a.set_data(mx::allocator::malloc(a.nbytes()));
  return a;
}

// A view of `a`'s buffer with shape and element strides (what a reshape or slice gives).
mx::array view(const mx::array& a, mx::Shape shape, mx::Strides strides, bool row_contiguous) {
  mx::array v(std::move(shape), a.dtype(), nullptr, {});
  size_t size = 1;
  for (int d : v.shape()) size *= size_t(d);
  mx::array::Flags flags{};
  flags.contiguous = row_contiguous;
  flags.row_contiguous = row_contiguous;
  flags.col_contiguous = row_contiguous && v.ndim() <= 1;
  v.copy_shared_buffer(a, std::move(strides), flags, row_contiguous ? size : a.data_size(), 0);
  return v;
}

// `a` [rows * n] read as [.., n] rows of the given shape (a reshape of a row-contiguous array).
mx::array reshaped(const mx::array& a, mx::Shape shape) {
  mx::Strides strides(shape.size(), 1);
  for (int i = int(shape.size()) - 2; i >= 0; i--) strides[i] = strides[i + 1] * shape[i + 1];
  return view(a, std::move(shape), std::move(strides), true);
}

// out = a + b, the IEEE sum of the two widened to float, rounded to out's type T; b and out
// row-contiguous of one size, b of type T, a any view of a float dtype that MLX's promotion
// with T gives T (its widening is exact).
template <typename T>
void add_rows(const mx::array& a, const mx::array& b, mx::array& out) {
  std::vector<float> copy;
  const float* av = row_major_floats(a, copy);
  const T* bv = b.data<T>();
  T* o = out.data<T>();
  for (size_t i = 0; i < out.size(); i++) o[i] = T(av[i] + static_cast<float>(bv[i]));
}

// y[r, c] += bias[c] (qwen2's projection biases; MLX's add of the bias, widened for float32).
template <typename T>
void add_bias_rows(mx::array& y, const mx::array& bias) {
  std::vector<float> copy;
  const float* bv = row_major_floats(bias, copy);
  const size_t n = bias.size();
  T* o = y.data<T>();
  for (size_t i = 0; i < y.size(); i++) o[i] = T(static_cast<float>(o[i]) + bv[i % n]);
}

// acc[j] = acc[j] + t * w[j] for j < n: one multiply then one add per element (the BLAS loop's
// C(I,J) = C(I,J) + TEMP*A(I,L)), eight lanes at a time; each lane is its own element, so the
// vector width changes no bytes. The block's entry has checked the CPU has AVX2.
__attribute__((target("avx2"))) void axpy_in_order(float* acc, float t, const float* w, int n) {
  const __m256 tv = _mm256_set1_ps(t);
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    _mm256_storeu_ps(acc + j, _mm256_add_ps(_mm256_loadu_ps(acc + j), _mm256_mul_ps(tv, _mm256_loadu_ps(w + j))));
  }
  for (; j < n; j++) acc[j] = acc[j] + t * w[j];
}

// xa[j] = sum over k in order of x[k] * a[k * r + j], from zero (the BLAS loop over k for each of
// the r columns of lora_a [K, r]), eight columns in one register at a time.
__attribute__((target("avx2"))) void low_rank_down(const float* x, const float* a, int K, int r, float* xa) {
  int j = 0;
  for (; j + 8 <= r; j += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (int k = 0; k < K; k++) {
      acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(x[k]), _mm256_loadu_ps(a + size_t(k) * r + j)));
    }
    _mm256_storeu_ps(xa + j, acc);
  }
  for (; j < r; j++) {
    float acc = 0.0f;
    for (int k = 0; k < K; k++) acc = acc + x[k] * a[size_t(k) * r + j];
    xa[j] = acc;
  }
}

// z[o] = sum over j in order of xa[j] * b[j * n + o], from zero, for o < width (lora_b's
// columns o0 .. o0 + width of b, given at its column o0): the BLAS loop over j for each column,
// 64 columns in registers at a time (so z is not stored and reloaded between the r terms).
__attribute__((target("avx2"))) void low_rank_up(const float* xa, int r, const float* b, int n, int width,
                                                 float* z) {
  int o = 0;
  for (; o + 64 <= width; o += 64) {
    __m256 acc[8];
    for (int i = 0; i < 8; i++) acc[i] = _mm256_setzero_ps();
    for (int j = 0; j < r; j++) {
      const __m256 t = _mm256_set1_ps(xa[j]);
      const float* bj = b + size_t(j) * n + o;
      for (int i = 0; i < 8; i++) acc[i] = _mm256_add_ps(acc[i], _mm256_mul_ps(t, _mm256_loadu_ps(bj + 8 * i)));
    }
    for (int i = 0; i < 8; i++) _mm256_storeu_ps(z + o + 8 * i, acc[i]);
  }
  if (o < width) {
    std::fill(z + o, z + width, 0.0f);
    for (int j = 0; j < r; j++) axpy_in_order(z + o, xa[j], b + size_t(j) * n + o, width - o);
  }
}

// y = y + t, t = scale * z, for n float32 lanes: MLX's multiply of the scalar by z, then its add
// (one rounding each; the cast to float32 is none).
__attribute__((target("avx2"))) void add_scaled(float* y, float scale, const float* z, int n) {
  const __m256 sv = _mm256_set1_ps(scale);
  int o = 0;
  for (; o + 8 <= n; o += 8) {
    _mm256_storeu_ps(y + o, _mm256_add_ps(_mm256_loadu_ps(y + o), _mm256_mul_ps(sv, _mm256_loadu_ps(z + o))));
  }
  for (; o < n; o++) y[o] = y[o] + scale * z[o];
}

// The lora_b multiply-adds below which a projection's deltas run on the calling thread: the
// pool's hand-off costs a few microseconds (measured: a rank-8 delta over 192 columns took 4 us
// through the pool), a lone row's whole delta about as much.
constexpr size_t kLowRankPoolMacs = 65536;

// One position's low-rank delta: lora_a's r sums xa (made before), lora_b, the scale, the row of y.
template <typename T>
struct LowRankItem {
  const float* xa;
  const float* b;  // lora_b [r, N]
  int r;
  float scale;
  T* y;  // the position's row of y [N]
};

// The deltas of a projection's positions, spread over the kernels' worker pool in chunks of
// kLowRankColumns output columns of one position (each column its own sums, so chunking changes
// no bytes).
template <typename T>
struct LowRankJob {
  static constexpr int kLowRankColumns = 256;
  const std::vector<LowRankItem<T>>* items;
  int n;
  int chunks_per_item;

  static void run(void* ctx, int chunk) {
    const auto& job = *static_cast<const LowRankJob*>(ctx);
    const LowRankItem<T>& it = (*job.items)[chunk / job.chunks_per_item];
    const int o0 = (chunk % job.chunks_per_item) * kLowRankColumns;
    const int width = std::min(kLowRankColumns, job.n - o0);
    alignas(64) float z[kLowRankColumns];
    low_rank_up(it.xa, it.r, it.b + o0, job.n, width, z);
    T* yr = it.y + o0;
    if constexpr (std::is_same_v<T, float>) {
      add_scaled(yr, it.scale, z, width);
    } else {
      for (int o = 0; o < width; o++) {
        const T t = T(it.scale * z[o]);
        yr[o] = T(static_cast<float>(yr[o]) + static_cast<float>(t));
      }
    }
  }
};

// Asks for projection p's low-rank pairs of the call's rows (lora_a, lora_b: float32, read whole
// by add_low_rank) to be brought into the cache while the base projection runs: the projections are
// compute-bound, the pairs' bytes come from memory (a rank-8 adapter over SmolLM2's seven
// projections is ~10 MB a token against ~70 MB of 4-bit weights), so reading them then instead
// of after overlaps the two. Each pair once for consecutive rows that share it.
void prefetch_low_rank(const BlockSpec& s, int p, int B, const std::vector<mx::array>& in) {
  int last = -1;
  for (int b = 0; b < B; b++) {
    const int pair = s.lora_rows[size_t(p) * B + b];
    if (pair < 0 || pair == last) continue;
    last = pair;
    for (int i = 0; i < 2; i++) {
      const mx::array& w = in[s.lora_input() + 2 * pair + i];
      const char* base = w.data<char>();
      for (size_t off = 0; off < w.nbytes(); off += 64) _mm_prefetch(base + off, _MM_HINT_T1);
    }
  }
}

// y[b] += (scale * ((xin[b] @ lora_a) @ lora_b)).astype(T) for every row b that has a low-rank
// pair on projection p (BlockSpec::lora_rows), as the graph's LoRALinear computes it (above):
// xin [B, L, K] any view of T, y [B, L, N] row-contiguous, lora_a [K, r] and lora_b [r, N] float32.
// The r sums of x @ lora_a on this thread, then lora_b, the scale and the add over the pool.
template <typename T>
void add_low_rank(const BlockSpec& s, int p, const mx::array& xin, const std::vector<mx::array>& in, mx::array& y) {
  const int B = xin.shape(0), L = xin.shape(1), K = xin.shape(2), N = y.shape(2);
  std::vector<float> xcopy;
  const float* xv = nullptr;
  T* yv = y.data<T>();
  std::vector<int> xa_at;  // each item's offset in xas
  std::vector<float> xas;
  std::vector<LowRankItem<T>> items;
  for (int b = 0; b < B; b++) {
    const int pair = s.lora_rows[size_t(p) * B + b];
    if (pair < 0) continue;
    if (xv == nullptr) xv = row_major_floats(xin, xcopy);
    const mx::array& la = in[s.lora_input() + 2 * pair];
    const mx::array& lb = in[s.lora_input() + 2 * pair + 1];
    const int r = la.shape(1);
    for (int l = 0; l < L; l++) {
      const size_t row = size_t(b) * L + l;
      xa_at.push_back(int(xas.size()));
      xas.resize(xas.size() + size_t(r));
      low_rank_down(xv + row * K, la.data<float>(), K, r, xas.data() + xa_at.back());
      items.push_back({nullptr, lb.data<float>(), r, s.lora_scales[pair], yv + row * N});
    }
  }
  if (items.empty()) return;
  size_t macs = 0;
  for (size_t i = 0; i < items.size(); i++) {
    items[i].xa = xas.data() + xa_at[i];
    macs += size_t(items[i].r) * N;
  }
  LowRankJob<T> job{&items, N, (N + LowRankJob<T>::kLowRankColumns - 1) / LowRankJob<T>::kLowRankColumns};
  const int chunks = int(items.size()) * job.chunks_per_item;
  if (macs < kLowRankPoolMacs) {
    // a lone row's delta is a few microseconds of work: less than handing it to the pool costs
    for (int c = 0; c < chunks; c++) LowRankJob<T>::run(&job, c);
  } else {
    qmm::parallel_chunks(chunks, &LowRankJob<T>::run, &job);
  }
}

template <typename T>
void run_exact_block_of(const BlockSpec& s, int offset, const std::vector<mx::array>& in,
                        std::vector<mx::array>& out);

void run_exact_block(const BlockSpec& s, int offset, const std::vector<mx::array>& in, std::vector<mx::array>& out) {
  switch (out[0].dtype()) {
    case mx::float32: run_exact_block_of<float>(s, offset, in, out); break;
    case mx::float16: run_exact_block_of<mx::float16_t>(s, offset, in, out); break;
    default: run_exact_block_of<mx::bfloat16_t>(s, offset, in, out); break;  // the entry point checks
  }
}

template <typename T>
void run_exact_block_of(const BlockSpec& s, int offset, const std::vector<mx::array>& in,
                        std::vector<mx::array>& out) {
  const mx::array& x = in[kX];
  const int B = x.shape(0), L = x.shape(1);
  const int H = s.heads, Hkv = s.kv_heads, Dh = s.head_dim;
  const mx::Dtype act = out[0].dtype();  // T's
  const int capacity = out[1].shape(2);

  // y = xin W_p^T (+ bias), [B, L, N] of the activations' dtype.
  auto project = [&](int p, const mx::array& xin) {
    const mx::array& w = in[kFirstProj + 3 * p];
    mx::array y = fresh({B, L, w.shape(0)}, act);
    if (s.lora_pairs > 0) prefetch_low_rank(s, p, B, in);
    if (s.layouts) {
      qmm::dequantized_matmul_into(xin, in[s.layouts_input() + p], w.shape(0), s.isa, y);
    } else {
      qmm::quantized_matmul_into(xin, w, in[kFirstProj + 3 * p + 1], in[kFirstProj + 3 * p + 2], s.group_size[p],
                                 s.bits[p], s.isa, y);
    }
    if (s.qkv_bias && p <= kV) add_bias_rows<T>(y, in[s.qkv_bias_input() + p]);
    if (s.lora_pairs > 0) add_low_rank<T>(s, p, xin, in, y);
    return y;
  };
  // rms_norm(a, weight) over a's last axis, of MLX's result type.
  auto norm = [&](const mx::array& a, int weight) {
    mx::array y = fresh(a.shape(), mx::promote_types(a.dtype(), in[weight].dtype()));
    fast::rms_norm_into(a, in[weight], s.norm_eps, y);
    return y;
  };

  // attention
  mx::array n = norm(x, kInNorm);
  mx::array q = project(kQ, n);
  mx::array k = project(kK, n);
  mx::array v = project(kV, n);
  if (s.qk_norm) {
    // qwen3: the norms run on [B, L, heads, D]; the rope then reads their output's heads
    q = reshaped(norm(reshaped(q, {B, L, H, Dh}), kQkNorm), {B, L, H * Dh});
    k = reshaped(norm(reshaped(k, {B, L, Hkv, Dh}), kQkNorm + 1), {B, L, Hkv * Dh});
  }
  mx::array qr = fresh({B, H, L, Dh}, q.dtype());
  mx::array kr = fresh({B, Hkv, L, Dh}, k.dtype());
  const mx::array* freqs = s.rope_freqs ? &in[s.rope_freqs_input()] : nullptr;
  if (s.batch_rows) {
    // a batch cache's rows: the rope at each row's offset, the graph's offsets array
    const mx::array& offsets = in[s.row_offsets_input()];
    fast::rope_heads_into(q, H, s.rope_dims, s.rope_traditional, s.rope_base, s.rope_scale, offsets, freqs, qr);
    fast::rope_heads_into(k, Hkv, s.rope_dims, s.rope_traditional, s.rope_base, s.rope_scale, offsets, freqs, kr);
  } else {
    fast::rope_heads_into(q, H, s.rope_dims, s.rope_traditional, s.rope_base, s.rope_scale, offset, freqs, qr);
    fast::rope_heads_into(k, Hkv, s.rope_dims, s.rope_traditional, s.rope_base, s.rope_scale, offset, freqs, kr);
  }
  // the cache's slice updates: keys [B, Hkv, L, D] and values [B, L, Hkv, D] (the view
  // transpose(reshape(v)), read as it lies) at positions offset .. offset + L - 1
  {
    const T* kp = kr.data<T>();
    const T* vp = v.data<T>();
    T* kc = out[1].data<T>();
    T* vc = out[2].data<T>();
    const size_t row = size_t(Dh) * sizeof(T);
    for (int b = 0; b < B; b++)
      for (int h = 0; h < Hkv; h++)
        for (int l = 0; l < L; l++) {
          const size_t dst = ((size_t(s.slot(b)) * Hkv + h) * capacity + s.base + offset + l) * Dh;
          std::memcpy(kc + dst, kp + ((size_t(b) * Hkv + h) * L + l) * Dh, row);
          std::memcpy(vc + dst, vp + ((size_t(b) * L + l) * Hkv + h) * Dh, row);
        }
  }
  // update_and_fetch's keys[..., :offset + L, :] (the whole buffer when full: the same elements)
  const int S = offset + L;
  const mx::Strides cache_strides = {int64_t(Hkv) * capacity * Dh, int64_t(capacity) * Dh, Dh, 1};
  // (row slots: a view of the first B rows' shape over the buffer, which the attention reads at
  // each row's slot and the base)
  const bool slotted = !s.row_slots.empty();
  const bool full = S == capacity && !slotted;
  mx::array keys = view(out[1], {B, Hkv, S, Dh}, cache_strides, full);
  mx::array values = view(out[2], {B, Hkv, S, Dh}, cache_strides, full);
  mx::array attn = fresh({B, L, H * Dh}, act);
  if (s.batch_rows) {
    fast::sdpa_merged_into(qr, keys, values, s.attn_scale, in[s.row_offsets_input() + 1], attn,
                           slotted ? s.row_slots.data() : nullptr, s.base);
  } else {
    fast::sdpa_merged_into(qr, keys, values, s.attn_scale, s.causal, attn);
  }
  mx::array o = project(kO, attn);
  mx::array h = fresh(o.shape(), act);
  add_rows<T>(x, o, h);

  // MLP
  n = norm(h, kPostNorm);
  mx::array g = project(kGate, n);
  mx::array u = project(kUp, n);
  fast::swiglu_into(g, u, g);  // in place, as NativeSwiglu takes its donated gate
  mx::array d = project(kDown, g);
  add_rows<T>(h, d, out[0]);
}

// The exact block's entry: rows_offsets and rows_mask both null (a single-row cache: the scalar
// offset, `causal`) or both given (a batch cache's rows); errors name `who`.
// The low-rank deltas' arguments (mlxr_exact_decoder_block_lora): none when pairs is 0.
struct LowRankArgs {
  const mlxr_array* arrays = nullptr;  // lora_a, lora_b per pair
  int pairs = 0;
  const int* rows = nullptr;      // [7 * B]
  const float* scales = nullptr;  // [pairs]
};

int exact_block_entry(mlxr_array x, mlxr_array keys, mlxr_array values, const mlxr_array* weights, int n_weights,
                      const int* ints, const float* floats, mlxr_array rows_offsets, mlxr_array rows_mask,
                      const LowRankArgs& low_rank, mlxr_array* out, const char* who, const int* slots = nullptr,
                      int n_slots = 0, int base = 0) {
  return mlxr::guard_int([&] {
    const std::string w(who);
    BlockSpec s = parse_spec(ints, floats, n_weights, who);
    if (n_slots < 0 || (n_slots > 0 && (slots == nullptr || rows_offsets == nullptr)))
      throw std::invalid_argument(w + ": row slots are for a batch's rows (with their offsets and mask)");
    if (n_slots > 0) s.row_slots.assign(slots, slots + n_slots);
    s.base = base;
    for (int p = 0; p < kProjections; p++) {
      if (!mlxr::qmm::shape_supported(s.bits[p], s.group_size[p]))
        throw std::invalid_argument(w + ": projection " + std::to_string(p) + " has " + std::to_string(s.bits[p]) +
                                    " bits, group " + std::to_string(s.group_size[p]));
    }
    if (s.rope_freqs) {
      const auto& f = *static_cast<mx::array*>(weights[s.rope_freqs_input() - kInNorm]);
      if (f.ndim() != 1 || f.shape(0) != s.rope_dims / 2 || !mlxr::is_float(f.dtype()))
        throw std::invalid_argument(w + ": rope frequencies must be a float [rope_dims / 2] array");
    }
    s.isa = mlxr::default_isa();
    auto stream = mx::default_stream(mx::default_device());
    if (!mlxr::fast::on_cpu(stream) || s.isa == mlxr::Isa::None || !mlxr::fast::cpu_has_avx2() ||
        !mlxr::fast::cpu_has_fma())
      throw std::invalid_argument(w + ": needs a CPU stream and a CPU with AVX2, F16C and FMA");
    const auto& xa = *static_cast<mx::array*>(x);
    const mx::Dtype act = activations_dtype(xa, weights);
    if (!mlxr::is_float(act)) throw std::invalid_argument(w + ": float32, float16 or bfloat16 activations only");
    auto weight = [&](int input) -> const mx::array& { return *static_cast<mx::array*>(weights[input - kInNorm]); };
    if (s.qkv_bias && act != mx::float32) {
      for (int p = kQ; p <= kV; p++) {
        if (weight(s.qkv_bias_input() + p).dtype() != act)
          throw std::invalid_argument(w + ": q/k/v biases must be of the half-type activations' dtype");
      }
    }
    if (s.layouts && weight(s.layouts_input()).dtype() != act) {
      s.layouts = false;  // unused, so not an input (never built for this block)
      n_weights -= kProjections;
    }
    for (int p = 0; s.layouts && p < kProjections; p++) {
      const mx::array& l = weight(s.layouts_input() + p);
      const mx::array& wp = weight(kFirstProj + 3 * p);
      if (l.dtype() != act || l.ndim() != 3 || wp.ndim() != 2 ||
          l.shape(0) != (wp.shape(0) + mlxr::qmm::kDequantizedCols - 1) / mlxr::qmm::kDequantizedCols ||
          int64_t(l.shape(1)) * s.bits[p] != int64_t(wp.shape(1)) * 32 || l.shape(2) != mlxr::qmm::kDequantizedCols)
        throw std::invalid_argument(w + ": projection " + std::to_string(p) +
                                    "'s layout is not the dequantized layout of its weight");
    }
    std::vector<mlxr_array> inputs(weights, weights + n_weights);
    if ((rows_offsets == nullptr) != (rows_mask == nullptr))
      throw std::invalid_argument(w + ": a batch's rows need both their rope offsets and their mask");
    if (rows_offsets != nullptr) {
      // the graph's rope and sdpa take these natively only so (else they run MLX's ops, whose
      // bytes this block does not reproduce): refused rather than computed differently
      const auto& offs = *static_cast<mx::array*>(rows_offsets);
      const auto& mask = *static_cast<mx::array*>(rows_mask);
      const int B = xa.ndim() == 3 ? xa.shape(0) : 0;
      if (xa.ndim() != 3 || xa.shape(1) < 1)
        throw std::invalid_argument(w + ": a batch's rows take x [B, L, D], L >= 1");
      if (offs.dtype() != mx::int32 || offs.ndim() != 1 || (offs.shape(0) != B && offs.shape(0) != 1))
        throw std::invalid_argument(w + ": the rows' rope offsets must be int32 [B]");
      const int L = xa.shape(1);
      const mx::Shape scores = {B, s.heads, L, offset_of(ints) + L};
      if (!mlxr::fast::sdpa_mask_covered(mask, scores))
        throw std::invalid_argument(w + ": the rows' mask must be a boolean array broadcastable to [B, heads, " +
                                    std::to_string(L) + ", " + std::to_string(offset_of(ints) + L) + "]");
      s.batch_rows = true;
      s.causal = false;
      inputs.push_back(rows_offsets);
      inputs.push_back(rows_mask);
    }
    if (low_rank.pairs < 0 || (low_rank.pairs > 0 && (low_rank.arrays == nullptr || low_rank.rows == nullptr ||
                                                        low_rank.scales == nullptr)))
      throw std::invalid_argument(w + ": low-rank pairs without their arrays, rows or scales");
    if (low_rank.pairs > 0) {
      // per projection its input's and output's widths: lora_a [in, r], lora_b [r, out]
      const int B = xa.shape(0);
      const int D = xa.shape(2);
      auto in_dims = [&](int p) {
        return p == kO ? s.heads * s.head_dim : p == kDown ? weight(kFirstProj + 3 * kGate).shape(0) : D;
      };
      for (int i = 0; i < kProjections * B; i++) {
        const int pair = low_rank.rows[i];
        if (pair < -1 || pair >= low_rank.pairs)
          throw std::invalid_argument(w + ": a row names low-rank pair " + std::to_string(pair) + " of " +
                                      std::to_string(low_rank.pairs));
        if (pair < 0) continue;
        const int p = i / B;
        const auto& la = *static_cast<mx::array*>(low_rank.arrays[2 * pair]);
        const auto& lb = *static_cast<mx::array*>(low_rank.arrays[2 * pair + 1]);
        const int out_dims = weight(kFirstProj + 3 * p).shape(0);
        if (la.dtype() != mx::float32 || lb.dtype() != mx::float32 || la.ndim() != 2 || lb.ndim() != 2 ||
            la.shape(0) != in_dims(p) || lb.shape(0) != la.shape(1) || lb.shape(1) != out_dims ||
            !la.flags().row_contiguous || !lb.flags().row_contiguous)
          throw std::invalid_argument(w + ": low-rank pair " + std::to_string(pair) + " on projection " +
                                      std::to_string(p) + " must be row-contiguous float32 lora_a [" +
                                      std::to_string(in_dims(p)) + ", r] and lora_b [r, " +
                                      std::to_string(out_dims) + "]");
      }
      s.lora_pairs = low_rank.pairs;
      s.lora_rows.assign(low_rank.rows, low_rank.rows + kProjections * B);
      s.lora_scales.assign(low_rank.scales, low_rank.scales + low_rank.pairs);
      for (int i = 0; i < 2 * low_rank.pairs; i++) inputs.push_back(low_rank.arrays[i]);
    }
    auto outputs = block_outputs<run_exact_block>(s, offset_of(ints), xa, keys, values, inputs.data(),
                                                  int(inputs.size()), stream, "ExactDecoderBlock", who);
    for (int i = 0; i < 3; i++) out[i] = new mx::array(outputs[i]);
  });
}

}  // namespace
}  // namespace mlxr::block

extern "C" {

// 1 when mlxr_exact_decoder_block runs here: a CPU default stream (and a shim not built with
// its native ops off) on a CPU with the exact kernels' instruction set, AVX2 and FMA.
int mlxr_exact_block_available() {
  namespace mx = mlx::core;
  int ok = 0;
  mlxr::guard_int([&] {
    ok = mlxr::fast::on_cpu(mx::default_stream(mx::default_device())) && mlxr::default_isa() != mlxr::Isa::None &&
         mlxr::fast::cpu_has_avx2() && mlxr::fast::cpu_has_fma();
  });
  return ok;
}


// The exact fused block (above), with mlxr_fast_decoder_block's arguments
// (mlxr_block.h's parse_spec; `causal` chooses the attention's mask; with
// rope_freqs the rope's frequencies follow the biases, base unused; with
// layouts the seven projections' dequantized layouts come last, in the
// projections' order). Covered: every projection's (bits, group size) one the
// exact kernels take; float32, float16 or bfloat16 activations (the promotion
// of x's, the norms' and the group parameters' dtypes), for a half type with
// the biases of that type; a CPU stream of a CPU with the kernels' instruction
// set; anything else is an error naming what.
int mlxr_exact_decoder_block(mlxr_array x, mlxr_array keys, mlxr_array values, const mlxr_array* weights,
                             int n_weights, const int* ints, const float* floats, mlxr_array* out) {
  return mlxr::block::exact_block_entry(x, keys, values, weights, n_weights, ints, floats, nullptr, nullptr, {}, out,
                                        "exact block");
}

// The exact block over L new positions of a batch cache's rows (mlx-lm's BatchKVCache), x [B, L, D]
// (a decode step: L = 1; a speculative verification round: L = K + 1), with the graph's bytes: the
// rope of row b's q and k at offsets[b] + l (the int32 [B] array the graph's rope takes), the new
// keys and values written at the shared index `offset` of every row (update_and_fetch's slice
// updates), the attention over keys[..., :offset + L, :] under `mask` (the batch's boolean mask,
// broadcastable to [B, heads, L, offset + L], which the graph's sdpa takes), then as
// mlxr_exact_decoder_block (whose `causal` is ignored). Covered as
// mlxr_exact_decoder_block; other shapes of x, offsets or mask are errors naming what.
int mlxr_exact_decoder_block_rows(mlxr_array x, mlxr_array keys, mlxr_array values, const mlxr_array* weights,
                                  int n_weights, const int* ints, const float* floats, mlxr_array offsets,
                                  mlxr_array mask, mlxr_array* out) {
  if (offsets == nullptr || mask == nullptr) {
    return mlxr::guard_int([] { throw std::invalid_argument("exact block rows: no rope offsets or mask"); });
  }
  return mlxr::block::exact_block_entry(x, keys, values, weights, n_weights, ints, floats, offsets, mask, {}, out,
                                        "exact block rows");
}

// The exact block (mlxr_exact_decoder_block, or with offsets and mask given,
// mlxr_exact_decoder_block_rows) with LoRA deltas on rows' projections, as mlx-lm's LoRALinear adds
// them: `pairs` (lora_a, lora_b) float32 pairs in `lora` (lora_a [in, r], lora_b [r, out] of the
// projection they are on), `rows` [7 * B] the pair each row adds to each projection (projection
// major, in the weights' order q, k, v, o, gate, up, down; -1 none), `scales` each pair's
// lora_parameters scale. Anything else is an error naming what.
int mlxr_exact_decoder_block_lora(mlxr_array x, mlxr_array keys, mlxr_array values, const mlxr_array* weights,
                                  int n_weights, const int* ints, const float* floats, mlxr_array offsets,
                                  mlxr_array mask, const mlxr_array* lora, int pairs, const int* rows,
                                  const float* scales, mlxr_array* out) {
  mlxr::block::LowRankArgs low_rank{lora, pairs, rows, scales};
  return mlxr::block::exact_block_entry(x, keys, values, weights, n_weights, ints, floats, offsets, mask, low_rank,
                                        out, offsets == nullptr ? "exact block" : "exact block rows");
}

// mlxr_exact_decoder_block_lora over a batch cache with a row capacity (BatchKvCache's row
// slots): keys and values are buffers [R, kv_heads, capacity, head_dim] with R >= B, row b's
// positions lie in buffer row slots[b] (n_slots = B distinct slots in 0 .. R - 1), every row's
// position p at buffer position base + p (capacity >= base + offset + L). The other buffer rows
// are left as they are. Slots need the offsets and mask; pairs may be 0. The bytes of each row are
// those of the same call over buffers holding the rows in order from position 0. slots null
// (n_slots 0, base 0): mlxr_exact_decoder_block_lora.
int mlxr_exact_decoder_block_slots(mlxr_array x, mlxr_array keys, mlxr_array values, const mlxr_array* weights,
                                   int n_weights, const int* ints, const float* floats, mlxr_array offsets,
                                   mlxr_array mask, const mlxr_array* lora, int pairs, const int* rows,
                                   const float* scales, const int* slots, int n_slots, int base, mlxr_array* out) {
  if ((slots == nullptr) != (n_slots == 0) || (slots == nullptr && base != 0)) {
    return mlxr::guard_int([] { throw std::invalid_argument("exact block slots: a base or count without slots"); });
  }
  mlxr::block::LowRankArgs low_rank{lora, pairs, rows, scales};
  return mlxr::block::exact_block_entry(x, keys, values, weights, n_weights, ints, floats, offsets, mask, low_rank,
                                        out,
                                        slots != nullptr ? "exact block slots"
                                        : offsets == nullptr ? "exact block"
                                                             : "exact block rows",
                                        slots, n_slots, base);
}

}  // extern "C"
