// The fast tier's many-rows kernel (Problem::cols, mlxr_fastnum.h): one vector lane per weight
// row, i.e. per column of the output. Included by mlxr_fastnum_avx2.cpp and mlxr_fastnum_avx512.cpp
// inside their anonymous namespace after mlxr_fastnum_kernels.h; each also provides
//   vi, vseti(int), vandi(vi, vi), vshri<s>(vi), vcvti(vi)   integer lanes, int32 -> float
//   void load_words8(const uint32_t* const* rowp, int w0, vi* out)   out[j]: word w0 + j of kL rows
//   kColRows, kColTiles   the activation rows and lane-wide column tiles of one pass
//
// What it computes: the weights of a block of kColTiles * kL weight rows are decoded once per call
// into a float panel, w[k][c] = s q + b (one fused multiply-add, rounded once); then each pass of
// up to kColRows activation rows sums x[m, k] w[k][c] by fused multiply-adds, one lane per
// column, in order within each kColBlock positions of K and the blocks' sums in order. Each activation is broadcast once per pass and used by every column of the
// block, and no horizontal sum ends an output. The row-lane kernels (mlxr_fastnum_kernels.h)
// instead decode every weight once per pass of at most 8 rows and sum lanes over K, loading each
// activation vector from L1/L2 once per two weight rows: from nine rows (AVX-512) those loads and
// decodes, not the fused multiply-adds, were the bound (docs/benchmarks.md). Its error bound is
// FastKernelsTest's, as theirs.

// The block's group parameters as [group][column] floats (columns past N repeat the last row),
// then its weights as the panel [K][cols]: eight words of each row at a time, transposed so that
// a lane holds one row's word, each of its 32 / BITS values decoded by a mask and a shift.
template <int BITS, int GS>
MLXR_INLINE void pack_cols(const Problem& p, int n0, float* panel, float* sc, float* bi) {
  constexpr int T = kColTiles, cols = T * kL, per_word = 32 / BITS;
  const int G = p.K / GS;
  const int row_words = p.K / per_word;
  const uint32_t* rowp[cols];
  for (int c = 0; c < cols; c++) {
    const size_t row = size_t(fimin(n0 + c, p.N - 1));
    rowp[c] = p.w + row * row_words;
    for (int g = 0; g < G; g++) {
      sc[size_t(g) * cols + c] = param_at(p.scales, p.param, row * G + g);
      bi[size_t(g) * cols + c] = param_at(p.biases, p.param, row * G + g);
    }
  }
  const vi mask = vseti((1 << BITS) - 1);
  int w0 = 0;
  for (; w0 + 8 <= row_words; w0 += 8) {
    vi tw[T][8];
    MLXR_UNROLL for (int t = 0; t < T; t++) load_words8(rowp + t * kL, w0, tw[t]);
    for (int j = 0; j < 8; j++) {
      const int k0 = (w0 + j) * per_word;
      const size_t g = size_t(k0 / GS);
      MLXR_UNROLL for (int t = 0; t < T; t++) {
        vi v = tw[t][j];
        const vf s = vload(sc + g * cols + t * kL), b = vload(bi + g * cols + t * kL);
        MLXR_UNROLL for (int pos = 0; pos < per_word; pos++) {
          vstore(panel + size_t(k0 + pos) * cols + t * kL, vfma(s, vcvti(vandi(v, mask)), b));
          v = vshri<BITS>(v);
        }
      }
    }
  }
  for (; w0 < row_words; w0++) {  // the words that do not fill eight, one lane at a time
    const int k0 = w0 * per_word;
    const size_t g = size_t(k0 / GS);
    for (int c = 0; c < cols; c++) {
      uint32_t v = rowp[c][w0];
      const float s = sc[g * cols + c], b = bi[g * cols + c];
      for (int pos = 0; pos < per_word; pos++) {
        panel[size_t(k0 + pos) * cols + c] = __builtin_fmaf(s, float(v & ((1u << BITS) - 1)), b);
        v >>= BITS;
      }
    }
  }
}

// Positions summed into fresh accumulators before they join an output's running total: a
// sum in order over all of K strays from a float64 rendering of the model as far as MLX's own
// float32 order does (FastNumericsOracleTest measured it further on its tiny models), blocks of
// 64 keep each rounding's share of the sum small.
constexpr int kColBlock = 32;

// Rows m0 .. m0 + R - 1 times the block's panel into out[m, n0 ..]: R x kColTiles accumulators in
// registers over each kColBlock positions of K, added to totals kept in L1.
template <int R>
MLXR_INLINE void cols_pass(const Problem& p, const float* panel, int n0, int m0) {
  constexpr int T = kColTiles, cols = T * kL;
  const float* xr[R];
  MLXR_UNROLL for (int r = 0; r < R; r++) xr[r] = p.xp + size_t(m0 + r) * p.k_stride;
  alignas(64) float total[R][T][kL];
  vf acc[R][T];
  for (int k0 = 0; k0 < p.K; k0 += kColBlock) {
    MLXR_UNROLL for (int r = 0; r < R; r++) {
      MLXR_UNROLL for (int t = 0; t < T; t++) acc[r][t] = vzero();
    }
    const int k1 = fimin(p.K, k0 + kColBlock);
    for (int k = k0; k < k1; k++) {
      const float* wk = panel + size_t(k) * cols;
      vf w[T];
      MLXR_UNROLL for (int t = 0; t < T; t++) w[t] = vload(wk + t * kL);
      MLXR_UNROLL for (int r = 0; r < R; r++) {
        const vf xv = vset1(xr[r][k]);
        MLXR_UNROLL for (int t = 0; t < T; t++) acc[r][t] = vfma(w[t], xv, acc[r][t]);
      }
    }
    MLXR_UNROLL for (int r = 0; r < R; r++) {
      MLXR_UNROLL for (int t = 0; t < T; t++) {
        vstore(total[r][t], k0 == 0 ? acc[r][t] : vadd(vload(total[r][t]), acc[r][t]));
      }
    }
  }
  MLXR_UNROLL for (int r = 0; r < R; r++) {
    MLXR_UNROLL for (int t = 0; t < T; t++) {
      const int n = n0 + t * kL;
      if (n >= p.N) break;
      const size_t at = size_t(m0 + r) * p.N + n;
      if (p.out_dt == Dt::F32 && n + kL <= p.N) {
        vstore(static_cast<float*>(p.out) + at, vload(total[r][t]));
      } else {
        for (int i = 0; i < kL && n + i < p.N; i++) store_out(p.out, p.out_dt, at + i, total[r][t][i]);
      }
    }
  }
}

template <int BITS, int GS>
void cols_block(const Problem& p, int block) {
  constexpr int cols = kColTiles * kL;
  const int n0 = block * cols;
  const int G = p.K / GS;
  float* panel = thread_scratch(size_t(p.K) * cols + size_t(2) * G * cols);
  float* sc = panel + size_t(p.K) * cols;
  float* bi = sc + size_t(G) * cols;
  pack_cols<BITS, GS>(p, n0, panel, sc, bi);
  for (int m0 = 0; m0 < p.M; m0 += kColRows) {
    switch (fimin(kColRows, p.M - m0)) {
#define MLXR_FASTNUM_COLS(R)                     \
  case R:                                        \
    if constexpr (R <= kColRows) {               \
      cols_pass<R>(p, panel, n0, m0);            \
    }                                            \
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
