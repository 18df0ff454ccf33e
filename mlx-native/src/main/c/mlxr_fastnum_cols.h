// The fast tier's many-rows kernel (Problem::cols, mlxr_fastnum.h): one vector lane per weight
// row, i.e. per column of the output. Included by mlxr_fastnum_avx2.cpp and mlxr_fastnum_avx512.cpp
// inside their anonymous namespace after mlxr_fastnum_kernels.h; each also provides
//   vi, vseti(int), vandi(vi, vi), vshri<s>(vi), vcvti(vi)   integer lanes, int32 -> float
//   void load_words8(const uint32_t* const* rowp, int w0, vi* out)   out[j]: word w0 + j of kL rows
//   kColRows, kColTiles   the activation rows and lane-wide column tiles of one pass
//   kColSegmentRows       the most rows whose calls walk K in segments (below)
//
// What it computes: the weights of a block of kColTiles * kL weight rows are decoded once per call,
// a segment of K at a time, into a float panel, w[k][c] = s q + b (one fused multiply-add, rounded
// once); then each pass of
// up to kColRows activation rows sums x[m, k] w[k][c] by fused multiply-adds, one lane per
// column, in order within each kColBlock positions of K and the blocks' sums in order. Each activation is broadcast once per pass and used by every column of the
// block, and no horizontal sum ends an output. The row-lane kernels (mlxr_fastnum_kernels.h)
// instead decode every weight once per pass of at most 8 rows and sum lanes over K, loading each
// activation vector from L1/L2 once per two weight rows: from nine rows (AVX-512) those loads and
// decodes, not the fused multiply-adds, were the bound (docs/benchmarks.md). Its error bound is
// FastKernelsTest's, as theirs.

// Up to kColSegmentRows rows (a decode step's or a verify round's) K is walked in segments of
// kColSegment positions: a segment's panel (kColSegment x cols floats, 16 KB on AVX-512) stays in
// L1 while every pass of the call's rows runs over it, and the next segment's words are prefetched
// (one request per row and cache line) before the passes, so the weights' trip from memory
// overlaps the passes' multiply-adds instead of stalling the decode (1.2-1.3x at 9-16 rows with
// cold weights, docs/benchmarks.md). Above it (prompt chunks) one segment spans K: each pass's
// totals then stay in L1, where many rows' totals, reloaded per block, did not. Either way every
// output's sum is the same, in the same order. kColSegment is a multiple of kColBlock and of eight
// words at 4 and 8 bits.
constexpr int kColSegment = 128;

// Positions summed into fresh accumulators before they join an output's running total: a
// sum in order over all of K strays from a float64 rendering of the model as far as MLX's own
// float32 order does (FastNumericsOracleTest measured it further on its tiny models; so did blocks
// of 64), blocks of 32 keep each rounding's share of the sum small.
constexpr int kColBlock = 32;
static_assert(kColSegment % kColBlock == 0 && kColSegment % 64 == 0, "segments end on blocks and on eight words");

// The block's group parameters as [group][column] floats (columns past N repeat the last row);
// the first segment's words are requested from memory one row at a time as its parameters widen.
template <int BITS, int GS>
MLXR_INLINE void block_params(const Problem& p, int n0, const uint32_t** rowp, float* sc, float* bi) {
  constexpr int cols = kColTiles * kL, per_word = 32 / BITS;
  const int G = p.K / GS;
  const int row_words = p.K / per_word;
  const int first_words = fimin(row_words, kColSegment / per_word);
  for (int c = 0; c < cols; c++) {
    const size_t row = size_t(fimin(n0 + c, p.N - 1));
    rowp[c] = p.w + row * row_words;
    for (int w = 0; w < first_words; w += 16) _mm_prefetch(reinterpret_cast<const char*>(rowp[c] + w), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(rowp[c] + first_words - 1), _MM_HINT_T0);
    for (int g = 0; g < G; g++) {
      sc[size_t(g) * cols + c] = param_at(p.scales, p.param, row * G + g);
      bi[size_t(g) * cols + c] = param_at(p.biases, p.param, row * G + g);
    }
  }
}

// Words w_begin .. w_end - 1 of the block's rows as the panel [k - k_begin][cols],
// k_begin = w_begin * 32 / BITS: eight words of each row at a time, transposed so that a lane holds
// one row's word, each of its 32 / BITS values decoded by a mask and a shift.
// Not inlined: its mask constant, hoisted out of cols_block's segment loop, took the sixteenth
// AVX2 register from the passes, which then kept an accumulator on the stack (2.5x slower passes).
template <int BITS, int GS>
__attribute__((noinline)) void pack_cols(const uint32_t* const* rowp, int w_begin, int w_end, const float* sc, const float* bi,
                           float* panel) {
  constexpr int T = kColTiles, cols = T * kL, per_word = 32 / BITS;
  const vi mask = vseti((1 << BITS) - 1);
  int w0 = w_begin;
  for (; w0 + 8 <= w_end; w0 += 8) {
    vi tw[T][8];
    MLXR_UNROLL for (int t = 0; t < T; t++) load_words8(rowp + t * kL, w0, tw[t]);
    for (int j = 0; j < 8; j++) {
      const int k0 = (w0 + j) * per_word;
      const size_t g = size_t(k0 / GS);
      float* dst = panel + size_t(k0 - w_begin * per_word) * cols;
      MLXR_UNROLL for (int t = 0; t < T; t++) {
        vi v = tw[t][j];
        const vf s = vload(sc + g * cols + t * kL), b = vload(bi + g * cols + t * kL);
        MLXR_UNROLL for (int pos = 0; pos < per_word; pos++) {
          vstore(dst + size_t(pos) * cols + t * kL, vfma(s, vcvti(vandi(v, mask)), b));
          v = vshri<BITS>(v);
        }
      }
    }
  }
  for (; w0 < w_end; w0++) {  // the words that do not fill eight, one lane at a time
    const int k0 = w0 * per_word;
    const size_t g = size_t(k0 / GS);
    float* dst = panel + size_t(k0 - w_begin * per_word) * cols;
    for (int c = 0; c < cols; c++) {
      uint32_t v = rowp[c][w0];
      const float s = sc[g * cols + c], b = bi[g * cols + c];
      for (int pos = 0; pos < per_word; pos++) {
        dst[size_t(pos) * cols + c] = __builtin_fmaf(s, float(v & ((1u << BITS) - 1)), b);
        v >>= BITS;
      }
    }
  }
}

// Rows m0 .. m0 + R - 1 times the segment's panel (positions k_begin .. k_end - 1): R x kColTiles
// accumulators in registers over each kColBlock positions, added in order to the rows' totals
// (totals[r][cols], L1), which the segment at k_begin = 0 starts and the one ending K stores to
// out[m, n0 ..].
template <int R>
MLXR_INLINE void cols_pass(const Problem& p, const float* panel, int n0, int k_begin, int k_end, int m0, float* totals) {
  constexpr int T = kColTiles, cols = T * kL;
  const float* xr[R];
  MLXR_UNROLL for (int r = 0; r < R; r++) xr[r] = p.xp + size_t(m0 + r) * p.k_stride;
  vf acc[R][T];
  for (int k0 = k_begin; k0 < k_end; k0 += kColBlock) {
    MLXR_UNROLL for (int r = 0; r < R; r++) {
      MLXR_UNROLL for (int t = 0; t < T; t++) acc[r][t] = vzero();
    }
    const int k1 = fimin(k_end, k0 + kColBlock);
    const float* wk = panel + size_t(k0 - k_begin) * cols;
    for (int k = k0; k < k1; k++, wk += cols) {
      vf w[T];
      MLXR_UNROLL for (int t = 0; t < T; t++) w[t] = vload(wk + t * kL);
      MLXR_UNROLL for (int r = 0; r < R; r++) {
        const vf xv = vset1(xr[r][k]);
        MLXR_UNROLL for (int t = 0; t < T; t++) acc[r][t] = vfma(w[t], xv, acc[r][t]);
      }
    }
    MLXR_UNROLL for (int r = 0; r < R; r++) {
      MLXR_UNROLL for (int t = 0; t < T; t++) {
        float* tot = totals + size_t(r) * cols + t * kL;
        vstore(tot, k0 == 0 ? acc[r][t] : vadd(vload(tot), acc[r][t]));
      }
    }
  }
  if (k_end < p.K) return;
  MLXR_UNROLL for (int r = 0; r < R; r++) {
    MLXR_UNROLL for (int t = 0; t < T; t++) {
      const int n = n0 + t * kL;
      if (n >= p.N) break;
      const float* tot = totals + size_t(r) * cols + t * kL;
      const size_t at = size_t(m0 + r) * p.N + n;
      if (p.out_dt == Dt::F32 && n + kL <= p.N) {
        vstore(static_cast<float*>(p.out) + at, vload(tot));
      } else {
        for (int i = 0; i < kL && n + i < p.N; i++) store_out(p.out, p.out_dt, at + i, tot[i]);
      }
    }
  }
}

template <int BITS, int GS>
void cols_block(const Problem& p, int block) {
  constexpr int cols = kColTiles * kL, per_word = 32 / BITS;
  const int n0 = block * cols;
  const int G = p.K / GS;
  const int row_words = p.K / per_word;
  const int segment = p.M <= kColSegmentRows ? kColSegment : p.K;
  float* panel = thread_scratch(size_t(segment) * cols + size_t(2) * G * cols + size_t(p.M) * cols);
  float* sc = panel + size_t(segment) * cols;
  float* bi = sc + size_t(G) * cols;
  float* totals = bi + size_t(G) * cols;
  const uint32_t* rowp[cols];
  block_params<BITS, GS>(p, n0, rowp, sc, bi);
  for (int k_begin = 0; k_begin < p.K; k_begin += segment) {
    const int k_end = fimin(p.K, k_begin + segment);
    const int w_end = k_end / per_word;
    const int next_words = fimin(row_words, w_end + segment / per_word) - w_end;
    pack_cols<BITS, GS>(rowp, k_begin / per_word, w_end, sc, bi, panel);
    if (next_words > 0) {
      for (int c = 0; c < cols; c++) {
        for (int w = 0; w < next_words; w += 16) _mm_prefetch(reinterpret_cast<const char*>(rowp[c] + w_end + w), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(rowp[c] + w_end + next_words - 1), _MM_HINT_T0);
      }
    }
    for (int m0 = 0; m0 < p.M; m0 += kColRows) {
      float* tot = totals + size_t(m0) * cols;
      switch (fimin(kColRows, p.M - m0)) {
#define MLXR_FASTNUM_COLS(R)                                    \
  case R:                                                       \
    if constexpr (R <= kColRows) {                              \
      cols_pass<R>(p, panel, n0, k_begin, k_end, m0, tot);      \
    }                                                           \
    break;
        MLXR_FASTNUM_COLS(1)
        MLXR_FASTNUM_COLS(2)
        MLXR_FASTNUM_COLS(3)
        MLXR_FASTNUM_COLS(4)
        MLXR_FASTNUM_COLS(5)
        MLXR_FASTNUM_COLS(6)
        MLXR_FASTNUM_COLS(7)
        MLXR_FASTNUM_COLS(8)
        MLXR_FASTNUM_COLS(9)
        MLXR_FASTNUM_COLS(10)
        MLXR_FASTNUM_COLS(11)
        MLXR_FASTNUM_COLS(12)
#undef MLXR_FASTNUM_COLS
        default: break;
      }
    }
  }
}

// Several problems of one width and group size (as run_any): each keeps its own blocks,
// numbered one after the other, spread over the pool in one pass.
struct ColsJob {
  const Problem* ps;
  int first_block[kMaxProblems + 1];
  int n;
};

template <int BITS, int GS>
void run_cols_block(void* ctx, int block) {
  const ColsJob& job = *static_cast<const ColsJob*>(ctx);
  int i = 0;
  while (block >= job.first_block[i + 1]) i++;
  cols_block<BITS, GS>(job.ps[i], block - job.first_block[i]);
}

inline bool run_cols(const Problem* ps, int n) {
  static_assert(kColRows <= 12, "cols_block's cases cover every pass of up to 12 rows");
  if (n < 1 || n > kMaxProblems) return false;
  const Problem& p = ps[0];
  const bool groups_ok = p.group_size == 32 || p.group_size == 64 || p.group_size == 128;
  if (!groups_ok || (p.bits != 4 && p.bits != 8) || p.K % p.group_size != 0) return false;
  constexpr int cols = kColTiles * kL;
  ColsJob job;
  job.ps = ps;
  job.n = n;
  job.first_block[0] = 0;
  for (int i = 0; i < n; i++) {
    if (!ps[i].cols || ps[i].bits != p.bits || ps[i].group_size != p.group_size || ps[i].K != p.K || ps[i].M != p.M) {
      return false;
    }
    job.first_block[i + 1] = job.first_block[i] + (ps[i].N + cols - 1) / cols;
  }
  void (*body)(void*, int) = p.bits == 4 ? (p.group_size == 32   ? run_cols_block<4, 32>
                                            : p.group_size == 64 ? run_cols_block<4, 64>
                                                                 : run_cols_block<4, 128>)
                                         : (p.group_size == 32   ? run_cols_block<8, 32>
                                            : p.group_size == 64 ? run_cols_block<8, 64>
                                                                 : run_cols_block<8, 128>);
  parallel_chunks(job.first_block[n], body, &job);
  return true;
}
