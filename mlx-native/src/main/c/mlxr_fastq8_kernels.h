// The 8-bit-activation kernels (mlxr_fastq8.h), included by mlxr_fastq8_avx2.cpp and
// mlxr_fastq8_avx512.cpp inside their anonymous namespace after their target pragma and helpers:
//   kL                          int32 / float lanes of vi / vf
//   vf vzero(), vset1(float), vload(const float*), vmul(a, b), vfma(a, b, c) = a * b + c
//   void vstore(float*, vf);    vf vcvti(vi)   int32 -> float
//   vi vzeroi(), vset1i(int), vsubi(a, b), vandi(a, b), vshr4(vi), vloadi(const void*)
//   void vstorei(void*, vi)
//   template <int BITS> vi dot4(vi acc, vi w, vi x)   acc + per lane the sum of w's four unsigned
//                               bytes times x's four signed ones (w's bytes below 2^BITS)
//   void load_words8(const uint32_t* const* rowp, int w0, vi* out)   out[j]: word w0 + j of kL rows
//   kQ8Rows, kQ8Tiles           activation rows and lane-wide column tiles of one pass
//   kQ8DirectRows               calls of up to this many rows read the words without a panel
// and mlxr_fastnum_x86.h's param_at, store_out and block_ahead, and mlxr_qmm.h's pool.
//
// Schedule: the columns (weight rows) are cut into blocks of kQ8Tiles * kL, spread over the pool.
// A block's weights are decoded once into a panel of byte quads [K / 4][cols] (lane = column:
// each int32 four of that column's weights as bytes, q itself, not centred), then each pass of up
// to kQ8Rows activation rows walks the blocks of 32 positions: eight quad products per row and
// column into integer accumulators, then one conversion, centring and fused multiply-add into the
// float accumulator (mlxr_fastq8.h gives the order); the bias terms end it.

#define MLXR_UNROLL _Pragma("GCC unroll 16")

MLXR_INLINE int q8min(int a, int b) {
  return a < b ? a : b;
}

// Words ahead of w0 that the block's rows request from memory before reading w0 .. w0 + 7: each
// row is its own stream, too many at once for the hardware's prefetchers (perf, one row per call:
// the loads of the words were half the kernel's samples without it).
constexpr int kQ8WordsAhead = 64;

MLXR_INLINE void q8_prefetch(const uint32_t* const* rowp, int w0, int row_words) {
  constexpr int cols = kQ8Tiles * kL;
  const int ahead = w0 + kQ8WordsAhead;
  if (ahead >= row_words || (w0 & 15) != 0) return;  // one request per row and cache line
  for (int c = 0; c < cols; c++) _mm_prefetch(reinterpret_cast<const char*>(rowp[c] + ahead), _MM_HINT_T0);
}

// The words, and the widened group parameters when the weight keeps them, of the block ahead
// (mlxr_fastnum_x86.h, block_ahead).
struct Q8Ahead {
  BlockAhead words, params;
};

// The block's rows (columns past N repeat the last row), their first words requested from memory.
template <int BITS>
MLXR_INLINE void q8_rows(const Problem& p, int n0, const uint32_t** rowp) {
  constexpr int cols = kQ8Tiles * kL, per_word = 32 / BITS;
  const int row_words = p.K / per_word;
  for (int c = 0; c < cols; c++) {
    rowp[c] = p.w + size_t(q8min(n0 + c, p.N - 1)) * row_words;
    for (int w = 0; w < kQ8WordsAhead && w < row_words; w += 16) {
      _mm_prefetch(reinterpret_cast<const char*>(rowp[c] + w), _MM_HINT_T0);
    }
  }
}

// The group parameters of weight rows n0 .. n0 + cols - 1 as [group][column] floats at `stride`
// floats a group: the scales, and the centred biases b + c s (one fused multiply-add); columns
// past N repeat the last row, as its words do. Per call (q8_params) or once per weight
// (widen_params, mlxr_fastq8.h).
MLXR_INLINE void q8_widen(const void* scales, const void* biases, Dt param, int N, int G, int bits, int n0, int cols,
                          size_t stride, float* sc, float* bc) {
  const float centre = float(1 << (bits - 1));
  for (int c = 0; c < cols; c++) {
    const size_t row = size_t(q8min(n0 + c, N - 1));
    for (int g = 0; g < G; g++) {
      const float s = param_at(scales, param, row * G + g);
      sc[size_t(g) * stride + c] = s;
      bc[size_t(g) * stride + c] = __builtin_fmaf(centre, s, param_at(biases, param, row * G + g));
    }
  }
}

// The block's group parameters widened in this call, when the weight has none kept
// (Problem::params).
template <int BITS, int GS>
MLXR_INLINE void q8_params(const Problem& p, int n0, float* sc, float* bc) {
  constexpr int cols = kQ8Tiles * kL;
  q8_widen(p.scales, p.biases, p.param, p.N, p.K / GS, BITS, n0, cols, cols, sc, bc);
}

// The block's weights as byte quads: quad i of a column holds its positions 4i .. 4i + 3, for
// 4-bit weights the permuted ones (mlxr_fastq8.h, Acts::xq): word w's low nibbles are quad 2w,
// its high nibbles quad 2w + 1.
template <int BITS>
MLXR_INLINE void q8_panel(const uint32_t* const* rowp, int row_words, Q8Ahead ahead, uint32_t* panel) {
  constexpr int cols = kQ8Tiles * kL, quads_per_word = BITS == 4 ? 2 : 1;
  const vi nibbles = vset1i(0x0F0F0F0F);
  int w0 = 0;
  for (; w0 + 8 <= row_words; w0 += 8) {
    q8_prefetch(rowp, w0, row_words);
    ahead.words.step();
    ahead.params.step();
    MLXR_UNROLL for (int t = 0; t < kQ8Tiles; t++) {
      vi tw[8];
      load_words8(rowp + t * kL, w0, tw);
      MLXR_UNROLL for (int j = 0; j < 8; j++) {
        uint32_t* dst = panel + size_t(w0 + j) * quads_per_word * cols + t * kL;
        if constexpr (BITS == 4) {
          vstorei(dst, vandi(tw[j], nibbles));
          vstorei(dst + cols, vandi(vshr4(tw[j]), nibbles));
        } else {
          vstorei(dst, tw[j]);
        }
      }
    }
  }
  for (; w0 < row_words; w0++) {  // words that do not fill eight, a column at a time
    uint32_t* dst = panel + size_t(w0) * quads_per_word * cols;
    for (int c = 0; c < cols; c++) {
      const uint32_t v = rowp[c][w0];
      if constexpr (BITS == 4) {
        dst[c] = v & 0x0F0F0F0Fu;
        dst[cols + c] = (v >> 4) & 0x0F0F0F0Fu;
      } else {
        dst[c] = v;
      }
    }
  }
}

// The end of an output: the bias terms in group order, then the store.
template <int R>
MLXR_INLINE void q8_finish(const Problem& p, const float* bc, size_t ps, int n0, int m0, int G, vf (&acc)[R][kQ8Tiles]) {
  constexpr int T = kQ8Tiles;
  for (int g = 0; g < G; g++) {
    MLXR_UNROLL for (int t = 0; t < T; t++) {
      const vf bv = vload(bc + size_t(g) * ps + t * kL);
      MLXR_UNROLL for (int r = 0; r < R; r++) acc[r][t] = vfma(bv, vset1(p.xg[size_t(m0 + r) * G + g]), acc[r][t]);
    }
  }
  MLXR_UNROLL for (int r = 0; r < R; r++) {
    MLXR_UNROLL for (int t = 0; t < T; t++) {
      const int n = n0 + t * kL;
      if (n >= p.N) break;
      const size_t at = size_t(m0 + r) * p.N + n;
      if (p.out_dt == Dt::F32 && n + kL <= p.N) {
        vstore(static_cast<float*>(p.out) + at, acc[r][t]);
      } else {
        alignas(64) float lanes[kL];
        vstore(lanes, acc[r][t]);
        for (int i = 0; i < kL && n + i < p.N; i++) store_out(p.out, p.out_dt, at + i, lanes[i]);
      }
    }
  }
}

// Rows m0 .. m0 + R - 1 of the block's columns n0 .. (mlxr_fastq8.h gives the order of the sums).
template <int BITS, int GS, int R>
MLXR_INLINE void q8_pass(const Problem& p, const uint32_t* panel, const float* sc, const float* bc, size_t ps, int n0, int m0) {
  constexpr int T = kQ8Tiles, cols = T * kL, centre = 1 << (BITS - 1);
  const int blocks = p.K / kBlock, G = p.K / GS;
  const int8_t* xr[R];
  MLXR_UNROLL for (int r = 0; r < R; r++) xr[r] = p.xq + size_t(m0 + r) * p.K;
  vf acc[R][T];
  MLXR_UNROLL for (int r = 0; r < R; r++) {
    MLXR_UNROLL for (int t = 0; t < T; t++) acc[r][t] = vzero();
  }
  for (int b = 0; b < blocks; b++) {
    vi ai[R][T];
    MLXR_UNROLL for (int r = 0; r < R; r++) {
      MLXR_UNROLL for (int t = 0; t < T; t++) ai[r][t] = vzeroi();
    }
    const uint32_t* pq = panel + size_t(b) * (kBlock / 4) * cols;
    MLXR_UNROLL for (int qi = 0; qi < kBlock / 4; qi++) {
      vi w[T];
      MLXR_UNROLL for (int t = 0; t < T; t++) w[t] = vloadi(pq + size_t(qi) * cols + t * kL);
      MLXR_UNROLL for (int r = 0; r < R; r++) {
        int32_t quad;
        __builtin_memcpy(&quad, xr[r] + size_t(b) * kBlock + qi * 4, sizeof quad);
        const vi xv = vset1i(quad);
        MLXR_UNROLL for (int t = 0; t < T; t++) ai[r][t] = dot4<BITS>(ai[r][t], w[t], xv);
      }
    }
    const size_t g = size_t(b) * kBlock / GS;
    vf s[T];
    MLXR_UNROLL for (int t = 0; t < T; t++) s[t] = vload(sc + g * ps + t * kL);
    MLXR_UNROLL for (int r = 0; r < R; r++) {
      const size_t at = size_t(m0 + r) * blocks + b;
      const vi corr = vset1i(centre * p.sq[at]);
      const vf dv = vset1(p.d[at]);
      MLXR_UNROLL for (int t = 0; t < T; t++) {
        acc[r][t] = vfma(vcvti(vsubi(ai[r][t], corr)), vmul(s[t], dv), acc[r][t]);
      }
    }
  }
  q8_finish<R>(p, bc, ps, n0, m0, G, acc);
}

// The same sums as q8_pass for a call of R <= kQ8DirectRows rows, straight from the transposed words
// in registers, with no panel written and read back (a decode step's one row).
template <int BITS, int GS, int R>
MLXR_INLINE void q8_direct(const Problem& p, const uint32_t* const* rowp, Q8Ahead ahead, const float* sc, const float* bc,
                           size_t ps, int n0) {
  constexpr int T = kQ8Tiles, centre = 1 << (BITS - 1);
  constexpr int blocks_per_load = BITS == 4 ? 2 : 1;  // eight words: 64 or 32 positions
  constexpr int words_per_block = 8 / blocks_per_load;
  const int blocks = p.K / kBlock, G = p.K / GS, row_words = p.K * BITS / 32;
  const vi nibbles = vset1i(0x0F0F0F0F);
  vf acc[R][T];
  MLXR_UNROLL for (int r = 0; r < R; r++) {
    MLXR_UNROLL for (int t = 0; t < T; t++) acc[r][t] = vzero();
  }
  for (int w0 = 0; w0 < row_words; w0 += 8) {
    q8_prefetch(rowp, w0, row_words);
    ahead.words.step();
    ahead.params.step();
    vi tw[T][8];
    MLXR_UNROLL for (int t = 0; t < T; t++) load_words8(rowp + t * kL, w0, tw[t]);
    MLXR_UNROLL for (int h = 0; h < blocks_per_load; h++) {
      const int b = w0 / words_per_block + h;
      vi ai[R][T];
      MLXR_UNROLL for (int r = 0; r < R; r++) {
        MLXR_UNROLL for (int t = 0; t < T; t++) ai[r][t] = vzeroi();
      }
      MLXR_UNROLL for (int j = 0; j < words_per_block; j++) {
        const int word = h * words_per_block + j;
        const int quad = BITS == 4 ? 2 * (w0 + word) : w0 + word;  // the word's first quad
        MLXR_UNROLL for (int r = 0; r < R; r++) {
          const int8_t* xq = p.xq + size_t(r) * p.K + size_t(quad) * 4;
          int32_t q0;
          __builtin_memcpy(&q0, xq, sizeof q0);
          const vi x0 = vset1i(q0);
          if constexpr (BITS == 4) {
            int32_t q1;
            __builtin_memcpy(&q1, xq + 4, sizeof q1);
            const vi x1 = vset1i(q1);
            MLXR_UNROLL for (int t = 0; t < T; t++) {
              ai[r][t] = dot4<BITS>(ai[r][t], vandi(tw[t][word], nibbles), x0);
              ai[r][t] = dot4<BITS>(ai[r][t], vandi(vshr4(tw[t][word]), nibbles), x1);
            }
          } else {
            MLXR_UNROLL for (int t = 0; t < T; t++) ai[r][t] = dot4<BITS>(ai[r][t], tw[t][word], x0);
          }
        }
      }
      const size_t g = size_t(b) * kBlock / GS;
      MLXR_UNROLL for (int r = 0; r < R; r++) {
        const size_t at = size_t(r) * blocks + b;
        const vi corr = vset1i(centre * p.sq[at]);
        const vf dv = vset1(p.d[at]);
        MLXR_UNROLL for (int t = 0; t < T; t++) {
          acc[r][t] = vfma(vcvti(vsubi(ai[r][t], corr)), vmul(vload(sc + g * ps + t * kL), dv), acc[r][t]);
        }
      }
    }
  }
  q8_finish<R>(p, bc, ps, n0, 0, G, acc);
}

template <int BITS, int GS>
void q8_block(const Problem& p, int block) {
  constexpr int cols = kQ8Tiles * kL, per_word = 32 / BITS;
  const int n0 = block * cols;
  const int G = p.K / GS, row_words = p.K / per_word;
  const size_t panel_words = size_t(p.K / 4) * cols;
  float* scratch = thread_scratch(panel_words + size_t(2) * G * cols);
  uint32_t* panel = reinterpret_cast<uint32_t*>(scratch);
  const uint32_t* rowp[cols];
  q8_rows<BITS>(p, n0, rowp);
  const float* sc;
  const float* bc;
  size_t ps;
  if (p.params != nullptr) {
    sc = p.params + size_t(n0 / fastnum::kColParamColumns) * 2 * G * fastnum::kColParamColumns + n0 % fastnum::kColParamColumns;
    bc = sc + size_t(G) * fastnum::kColParamColumns;
    ps = fastnum::kColParamColumns;
  } else {
    float* wsc = scratch + panel_words;
    float* wbc = wsc + size_t(G) * cols;
    q8_params<BITS, GS>(p, n0, wsc, wbc);
    sc = wsc;
    bc = wbc;
    ps = cols;
  }
  const int dist = ahead_blocks();
  Q8Ahead ahead;
  ahead.words = block_ahead(p.w, p.N, p.K, BITS, n0, cols, dist, row_words / 8);
  if (p.params != nullptr && dist > 0 && n0 + dist * cols < p.N) {
    // The widened parameters of the 32 weight rows holding the block ahead's first (one run).
    constexpr int C = fastnum::kColParamColumns;
    ahead.params = BlockAhead(p.params + size_t((n0 + dist * cols) / C) * 2 * G * C, size_t(2) * G * C * sizeof(float),
                              row_words / 8);
  }
  if (p.M <= kQ8DirectRows && row_words % 8 == 0) {
    if (p.M == 1) {
      q8_direct<BITS, GS, 1>(p, rowp, ahead, sc, bc, ps, n0);
    } else if constexpr (kQ8DirectRows >= 2) {
      q8_direct<BITS, GS, 2>(p, rowp, ahead, sc, bc, ps, n0);
    }
    return;
  }
  q8_panel<BITS>(rowp, row_words, ahead, panel);
  for (int m0 = 0; m0 < p.M; m0 += kQ8Rows) {
    switch (q8min(kQ8Rows, p.M - m0)) {
#define MLXR_FASTQ8_PASS(R)                                 \
  case R:                                                   \
    if constexpr (R <= kQ8Rows) {                           \
      q8_pass<BITS, GS, R>(p, panel, sc, bc, ps, n0, m0);   \
    }                                                       \
    break;
      MLXR_FASTQ8_PASS(1)
      MLXR_FASTQ8_PASS(2)
      MLXR_FASTQ8_PASS(3)
      MLXR_FASTQ8_PASS(4)
      MLXR_FASTQ8_PASS(5)
      MLXR_FASTQ8_PASS(6)
      MLXR_FASTQ8_PASS(7)
      MLXR_FASTQ8_PASS(8)
#undef MLXR_FASTQ8_PASS
      default: break;
    }
  }
}

// Several problems of one width, group size, K and M: each keeps its own column blocks, numbered
// one after the other, spread over the pool in one pass.
struct Q8Job {
  const Problem* ps;
  int first_block[fastnum::kMaxProblems + 1];
};

template <int BITS, int GS>
void q8_run_block(void* ctx, int block) {
  const Q8Job& job = *static_cast<const Q8Job*>(ctx);
  int i = 0;
  while (block >= job.first_block[i + 1]) i++;
  q8_block<BITS, GS>(job.ps[i], block - job.first_block[i]);
}

inline bool q8_run(const Problem* ps, int n) {
  static_assert(kQ8Rows <= 8, "q8_block's cases cover every pass of up to 8 rows");
  if (n < 1 || n > fastnum::kMaxProblems) return false;
  const Problem& p = ps[0];
  if (!covered(p.bits, p.group_size) || p.K % p.group_size != 0) return false;
  constexpr int cols = kQ8Tiles * kL;
  Q8Job job;
  job.ps = ps;
  job.first_block[0] = 0;
  for (int i = 0; i < n; i++) {
    if (ps[i].bits != p.bits || ps[i].group_size != p.group_size || ps[i].K != p.K || ps[i].M != p.M) return false;
    job.first_block[i + 1] = job.first_block[i] + (ps[i].N + cols - 1) / cols;
  }
  void (*body)(void*, int) = p.bits == 4 ? (p.group_size == 32   ? q8_run_block<4, 32>
                                            : p.group_size == 64 ? q8_run_block<4, 64>
                                                                 : q8_run_block<4, 128>)
                                         : (p.group_size == 32   ? q8_run_block<8, 32>
                                            : p.group_size == 64 ? q8_run_block<8, 64>
                                                                 : q8_run_block<8, 128>);
  mlxr::qmm::parallel_chunks(job.first_block[n], body, &job);
  return true;
}
