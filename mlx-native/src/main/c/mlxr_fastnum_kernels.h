// The fast tier's kernels (mlxr_fastnum.h), included by mlxr_fastnum_avx2.cpp
// and mlxr_fastnum_avx512.cpp inside an anonymous namespace after their target
// pragma and their vector helpers:
//   kL                      float lanes of vf
//   vf vzero(), vset1(float), vload(const float*), vfma(a, b, c) = a * b + c
//   void vstore(float*, vf);  float hsum(vf)
//   void decode4(const uint8_t* p, vf& lo, vf& hi)  kL packed bytes: low, high nibbles, minus 8
//   vf decode8(const uint8_t* p)                     kL packed bytes, minus 128
//   vf widen_params(const void* base, Dt, size_t i)  kL group parameters as floats
//   float param_at(const void* base, Dt, size_t i)
//   void store_out(void* out, Dt, size_t i, float v)
//   kMaxRows                rows of activations one pass over a weight row serves
// and the pool of mlxr_qmm.h (parallel_chunks, parallel_threads, thread_scratch).
//
// Centred weights: the kernels sum x (q - c) with c = 2^(bits-1) and use the
// bias b' = b + c s (one correctly rounded FMA per group), the same value
// s (q - c) + b'. Quantization sets b near -c s, so with q itself the two
// group terms s D and b X are each up to c times the result and cancel, and
// their roundings with them (measured: the factored form then strays further
// from a float64 rendering of the model than MLX's own float32 order does);
// with q - c both terms are of the result's size.
//
// Schedule: N is cut into chunks of rows_per_chunk weight rows spread over the
// pool. A chunk widens its rows' group parameters once, then for each tile of
// up to kMaxRows activation rows walks its weight rows: each packed group is
// decoded once into vectors and fused-multiply-added into every row's group
// sum D (lanes over K), which one more FMA scales into the row's accumulator;
// the bias term b . X joins the same accumulator, and one horizontal sum per
// (row, column) ends it. The tile's activations (kMaxRows * K floats) and the
// chunk's weights stay in L1/L2 across the tile.

MLXR_INLINE int fimin(int a, int b) {
  return a < b ? a : b;
}

struct Job {
  const Problem* p;
  int rows_per_chunk;
};

// res[r] = out[m0 + r, n] for r < R, from weight row `wrow` with its widened
// scales `sc` (G) and biases `bi` (g_stride, zero past G).
template <int R, int BITS>
MLXR_INLINE void tile(const Problem& p, const uint8_t* wrow, const float* sc, const float* bi, int m0,
                      float* res) {
  const int G = p.K / p.group_size;
  const int gbytes = p.group_size * BITS / 8;
  const size_t ks = p.k_stride;
  const float* x = p.xp + size_t(m0) * ks;
  vf acc[R];
  for (int r = 0; r < R; r++) acc[r] = vzero();
  for (int g = 0; g < G; g++) {
    vf dot[R];
    for (int r = 0; r < R; r++) dot[r] = vzero();
    const uint8_t* wg = wrow + size_t(g) * gbytes;
    const float* xg = x + size_t(g) * p.group_size;
    for (int c = 0; c < gbytes; c += kL) {
      if constexpr (BITS == 4) {
        vf lo, hi;
        decode4(wg + c, lo, hi);
        for (int r = 0; r < R; r++) {
          dot[r] = vfma(lo, vload(xg + r * ks + 2 * c), dot[r]);
          dot[r] = vfma(hi, vload(xg + r * ks + 2 * c + kL), dot[r]);
        }
      } else {
        vf w = decode8(wg + c);
        for (int r = 0; r < R; r++) dot[r] = vfma(w, vload(xg + r * ks + c), dot[r]);
      }
    }
    vf s = vset1(sc[g]);
    for (int r = 0; r < R; r++) acc[r] = vfma(s, dot[r], acc[r]);
  }
  const float* X = p.xg + size_t(m0) * p.g_stride;
  for (size_t g = 0; g < p.g_stride; g += kL) {
    vf b = vload(bi + g);
    for (int r = 0; r < R; r++) acc[r] = vfma(b, vload(X + r * p.g_stride + g), acc[r]);
  }
  for (int r = 0; r < R; r++) res[r] = hsum(acc[r]);
}

// One tile of `rows` (1..kMaxRows) activation rows against weight row n.
template <int BITS>
inline void tile_rows(const Problem& p, int rows, const uint8_t* wrow, const float* sc, const float* bi, int m0,
                      float* res) {
  switch (rows) {
#define MLXR_FASTNUM_TILE(R) \
  case R:                    \
    if constexpr (R <= kMaxRows) tile<R, BITS>(p, wrow, sc, bi, m0, res); \
    break;
    MLXR_FASTNUM_TILE(1)
    MLXR_FASTNUM_TILE(2)
    MLXR_FASTNUM_TILE(3)
    MLXR_FASTNUM_TILE(4)
    MLXR_FASTNUM_TILE(5)
    MLXR_FASTNUM_TILE(6)
    MLXR_FASTNUM_TILE(7)
    MLXR_FASTNUM_TILE(8)
#undef MLXR_FASTNUM_TILE
    default: break;
  }
}

// Row `n`'s `count` group parameters from element `i`, widened to floats.
inline void widen_row(const void* base, Dt dt, size_t i, int count, float* dst) {
  int g = 0;
  for (; g + kL <= count; g += kL) vstore(dst + g, widen_params(base, dt, i + g));
  for (; g < count; g++) dst[g] = param_at(base, dt, i + g);
}

template <int BITS>
void run_chunk(void* ctx, int chunk) {
  const Job& job = *static_cast<const Job*>(ctx);
  const Problem& p = *job.p;
  const int n0 = chunk * job.rows_per_chunk;
  const int n1 = fimin(p.N, n0 + job.rows_per_chunk);
  const int G = p.K / p.group_size;
  const int gs = int(p.g_stride);
  const size_t row_bytes = size_t(p.K) * BITS / 8;
  // kL floats past the scales: the last row's centring reads a vector past its G.
  float* sc = thread_scratch(size_t(n1 - n0) * (G + gs) + kL);
  float* bi = sc + size_t(n1 - n0) * G + kL;
  const vf centre = vset1(float(1 << (BITS - 1)));
  for (int n = n0; n < n1; n++) {
    const float* s = sc + size_t(n - n0) * G;
    widen_row(p.scales, p.param, size_t(n) * G, G, sc + size_t(n - n0) * G);
    float* b = bi + size_t(n - n0) * gs;
    widen_row(p.biases, p.param, size_t(n) * G, G, b);
    for (int g = 0; g < G; g += kL) vstore(b + g, vfma(centre, vload(s + g), vload(b + g)));
    for (int g = G; g < gs; g++) b[g] = 0.0f;
  }
  const uint8_t* w = reinterpret_cast<const uint8_t*>(p.w);
  float res[kMaxRows];
  for (int m0 = 0; m0 < p.M; m0 += kMaxRows) {
    const int rows = fimin(kMaxRows, p.M - m0);
    for (int n = n0; n < n1; n++) {
      tile_rows<BITS>(p, rows, w + size_t(n) * row_bytes, sc + size_t(n - n0) * G, bi + size_t(n - n0) * gs, m0,
                      res);
      for (int r = 0; r < rows; r++) store_out(p.out, p.out_dt, size_t(m0 + r) * p.N + n, res[r]);
    }
  }
}

// Weight rows per chunk: about eight chunks per thread, so a late or
// preempted worker's share is small, but at most 64 rows (the chunk's widened
// parameters stay small) and at least 4 (claiming a chunk costs an atomic).
inline int rows_per_chunk(int N, int threads) {
  int want = (N + threads * 8 - 1) / (threads * 8);
  return want < 4 ? 4 : want > 64 ? 64 : want;
}

inline bool run_any(const Problem& p) {
  const bool groups_ok = p.group_size == 32 || p.group_size == 64 || p.group_size == 128;
  if (!groups_ok || (p.bits != 4 && p.bits != 8) || p.K % p.group_size != 0) return false;
  Job job{&p, rows_per_chunk(p.N, parallel_threads())};
  const int chunks = (p.N + job.rows_per_chunk - 1) / job.rows_per_chunk;
  parallel_chunks(chunks, p.bits == 4 ? run_chunk<4> : run_chunk<8>, &job);
  return true;
}
