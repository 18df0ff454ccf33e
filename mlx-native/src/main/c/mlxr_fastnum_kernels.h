// The fast tier's kernels (mlxr_fastnum.h), included by mlxr_fastnum_avx2.cpp
// and mlxr_fastnum_avx512.cpp inside an anonymous namespace after their target
// pragma and their vector helpers:
//   kL                      float lanes of vf
//   vf vzero(), vset1(float), vload(const float*), vmul(a, b), vadd(a, b), vfma(a, b, c) = a * b + c
//   void vstore(float*, vf);  float hsum(vf)
//   void decode4(const uint8_t* p, vf& lo, vf& hi)  kL packed bytes: low, high nibbles, minus 8
//   vf decode8(const uint8_t* p)                     kL packed bytes, minus 128
// and, where MLXR_FASTNUM_SCALED_TABLE is defined (AVX-512: a 16-entry permute),
//   void decode4_scaled(const uint8_t* p, vf table, vf& lo, vf& hi)  as decode4, each value
//                           looked up in table (table[q] = s (q - 8), so scaled as well)
// and, where MLXR_FASTNUM_HSUM16 is defined,
//   void hsum_lanes(const vf* v, float* out)  out[i] = the sum of v[i]'s lanes, i < kL, at once
//   vf widen_params(const void* base, Dt, size_t i, int n)  n (<= kL) group parameters as floats, zero past n
//   void store_out(void* out, Dt, size_t i, float v)
//   kMaxRows                rows of activations one pass over a weight row serves at most
//   kScaledRows             from how many rows a pass scales the decoded weights (below)
//   kPairedRows             up to how many rows a scaled pass takes two weight rows (NB = 2)
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

#define MLXR_UNROLL _Pragma("GCC unroll 16")

MLXR_INLINE int fimin(int a, int b) {
  return a < b ? a : b;
}

// Weight rows ahead whose weights a tile, and whose group parameters a chunk, prefetches.
constexpr int kRowsAhead = 4;

struct Job {
  const Problem* p;
  int rows_per_chunk;
  int pass_rows;  // activation rows per tile: kPairedRows, or up to kMaxRows under MLXR_KERNEL_PASS_ROWS
};

// The end of a tile: the bias term b' . X joins each accumulator, then one
// horizontal sum per (row, weight row) into res[j * R + r].
template <int R, int NB>
MLXR_INLINE void finish(const Problem& p, const float* bi, int m0, vf (&acc)[NB][R], float* res) {
  const size_t gs = p.g_stride;
  const float* X = p.xg + size_t(m0) * gs;
  for (size_t g = 0; g < gs; g += kL) {
    MLXR_UNROLL for (int r = 0; r < R; r++) {
      const vf xr = vload(X + r * gs + g);
      MLXR_UNROLL for (int j = 0; j < NB; j++) acc[j][r] = vfma(vload(bi + j * gs + g), xr, acc[j][r]);
    }
  }
#ifdef MLXR_FASTNUM_HSUM16
  if constexpr (NB * R == kL) {
    hsum_lanes(&acc[0][0], res);
    return;
  }
#endif
  MLXR_UNROLL for (int j = 0; j < NB; j++) {
    MLXR_UNROLL for (int r = 0; r < R; r++) res[j * R + r] = hsum(acc[j][r]);
  }
}

// res[j * R + r] = out[m0 + r, n + j] for r < R, j < NB, from the NB weight
// rows at wrow (row_bytes apart) with their widened scales sc and centred
// biases bi (g_stride per row each, zero past G).
//
// Few rows (R < kScaledRows, NB = 1): per group, D = sum x (q - c) in one
// vector per row, then acc += s D (one FMA per row and group). Many rows: the
// decoded weights are scaled once (s (q - c), one multiply per vector shared
// by the R rows) and FMA'd straight into each row's accumulator, and NB = 2
// weight rows share each activation load (an FMA's other operand comes from
// memory; with one weight row per pass the loads, not the FMAs, were the
// bound). Two weight rows per pass measured slower for few rows (8 bits).
// Past kPairedRows rows (only under MLXR_KERNEL_PASS_ROWS, mlxr_fastnum.h) a
// pass takes one weight row (R accumulators fill the register file) and each
// FMA loads its activations: every weight group is decoded once for up to 16
// rows, but the loads, one per FMA from L1/L2, cost more than the second
// decode they save (measured 10-40% slower at 16 rows on AVX-512).
// Every loop over rows, weight rows and a group's vectors has a constant trip
// count and is unrolled, so the accumulators stay in registers.
template <int R, int NB, int BITS, int GS>
MLXR_INLINE void tile(const Problem& p, const uint8_t* wrow, size_t row_bytes, const float* sc, const float* bi,
                      int m0, float* res) {
  const int G = p.K / GS;
  const size_t gs = p.g_stride;
  constexpr int gbytes = GS * BITS / 8;
  const size_t ks = p.k_stride;
  const float* x = p.xp + size_t(m0) * ks;
  vf acc[NB][R];
  MLXR_UNROLL for (int j = 0; j < NB; j++) {
    MLXR_UNROLL for (int r = 0; r < R; r++) acc[j][r] = vzero();
  }
  if constexpr (R >= kScaledRows) {
    for (int g = 0; g < G; g++) {
      const float* xg = x + size_t(g) * GS;
      // kRowsAhead weight rows ahead, each line once (rows are contiguous): without it a pass
      // waited on every cold line of its weights (a step's weights come from L3 or memory).
      MLXR_UNROLL for (int j = 0; j < NB; j++) {
        MLXR_UNROLL for (int c = 0; c < gbytes; c += 64) {
          if (gbytes >= 64 || (size_t(g) * gbytes + c) % 64 == 0) {
            __builtin_prefetch(wrow + (j + kRowsAhead) * row_bytes + size_t(g) * gbytes + c, 0, 3);
          }
        }
      }
      vf s[NB];
      MLXR_UNROLL for (int j = 0; j < NB; j++) s[j] = vset1(sc[j * gs + g]);
#ifdef MLXR_FASTNUM_SCALED_TABLE
      // s (q - c) for q = 0 .. 15, once per group: each decoded vector is then one table
      // lookup, the same products as decoding and scaling it.
      vf st[NB];
      if constexpr (BITS == 4) {
        MLXR_UNROLL for (int j = 0; j < NB; j++) st[j] = vmul(centred_table(), s[j]);
      }
#endif
      MLXR_UNROLL for (int c = 0; c < gbytes; c += kL) {
        if constexpr (BITS == 4) {
          vf lo[NB], hi[NB];
          MLXR_UNROLL for (int j = 0; j < NB; j++) {
#ifdef MLXR_FASTNUM_SCALED_TABLE
            decode4_scaled(wrow + j * row_bytes + size_t(g) * gbytes + c, st[j], lo[j], hi[j]);
#else
            decode4(wrow + j * row_bytes + size_t(g) * gbytes + c, lo[j], hi[j]);
            lo[j] = vmul(lo[j], s[j]);
            hi[j] = vmul(hi[j], s[j]);
#endif
          }
          MLXR_UNROLL for (int r = 0; r < R; r++) {
            const vf xl = vload(xg + r * ks + 2 * c);
            const vf xh = vload(xg + r * ks + 2 * c + kL);
            MLXR_UNROLL for (int j = 0; j < NB; j++) {
              acc[j][r] = vfma(lo[j], xl, acc[j][r]);
              acc[j][r] = vfma(hi[j], xh, acc[j][r]);
            }
          }
        } else {
          vf w[NB];
          MLXR_UNROLL for (int j = 0; j < NB; j++) {
            w[j] = vmul(decode8(wrow + j * row_bytes + size_t(g) * gbytes + c), s[j]);
          }
          MLXR_UNROLL for (int r = 0; r < R; r++) {
            const vf xv = vload(xg + r * ks + c);
            MLXR_UNROLL for (int j = 0; j < NB; j++) acc[j][r] = vfma(w[j], xv, acc[j][r]);
          }
        }
      }
    }
  } else {
    static_assert(NB == 1, "the few-rows pass takes one weight row");
    for (int g = 0; g < G; g++) {
      vf dot[R];
      MLXR_UNROLL for (int r = 0; r < R; r++) dot[r] = vzero();
      const uint8_t* wg = wrow + size_t(g) * gbytes;
      const float* xg = x + size_t(g) * GS;
      // kRowsAhead weight rows ahead, each line once (rows are contiguous).
      MLXR_UNROLL for (int c = 0; c < gbytes; c += 64) {
        if (gbytes >= 64 || (size_t(g) * gbytes + c) % 64 == 0) __builtin_prefetch(wg + kRowsAhead * row_bytes + c, 0, 3);
      }
      MLXR_UNROLL for (int c = 0; c < gbytes; c += kL) {
        if constexpr (BITS == 4) {
          vf lo, hi;
          decode4(wg + c, lo, hi);
          MLXR_UNROLL for (int r = 0; r < R; r++) {
            dot[r] = vfma(lo, vload(xg + r * ks + 2 * c), dot[r]);
            dot[r] = vfma(hi, vload(xg + r * ks + 2 * c + kL), dot[r]);
          }
        } else {
          vf w = decode8(wg + c);
          MLXR_UNROLL for (int r = 0; r < R; r++) dot[r] = vfma(w, vload(xg + r * ks + c), dot[r]);
        }
      }
      vf s = vset1(sc[g]);
      MLXR_UNROLL for (int r = 0; r < R; r++) acc[0][r] = vfma(s, dot[r], acc[0][r]);
    }
  }
  finish<R, NB>(p, bi, m0, acc, res);
}

#ifdef MLXR_FASTNUM_WORD_LANES
// Few rows in the word-lane layout (Problem::word_lanes), where the kernel
// file provides
//   vi load_words(const uint8_t* p, int count)     count (<= kL) packed words, zero past them
//   vi word_prep<BITS>(vi words)                   once per load (8 bits: flips each byte's top bit)
//   vf word_value<BITS>(vi words, int v, vf table) each lane's value v, minus 2^(BITS-1), as float
//   vf centred_table()                             q - 8 for q = 0 .. 15 (the 4-bit lookup)
//   vf lane_scales<PW, GS>(const float* s, int n)  lane i: s[PW i / GS], of the n given
// Lane i of a block holds packed word i (32 / BITS consecutive weights, low
// bits first) of kL consecutive words, so value v of every lane is one or two
// shifts (4 bits: a shift and a table lookup, the permute reading only the low
// four bits of each lane's index) and one FMA into the activations prepared in
// the same order, where the byte-wise decode above widens, masks, centres and
// converts every vector. Each row's sums run in C independent chains and NB = 2
// weight rows share each activation load: a single chain was bound by the FMA's
// latency, and one weight row per pass by the per-row work (parameters, the
// horizontal sum). A lane's partial sum stays within one group, and is scaled
// by that group's scale once per block.
template <int R, int NB, int BITS, int GS>
MLXR_INLINE void tile_words(const Problem& p, const uint8_t* wrow, size_t row_bytes, const float* sc,
                            const float* bi, int m0, float* res) {
  constexpr int per_word = 32 / BITS;
  constexpr int block = per_word * kL;
  static_assert(GS % per_word == 0 && (block % GS == 0 || GS % block == 0), "a lane's values share one group");
  constexpr int groups_per_block = block >= GS ? block / GS : 1;
  constexpr int C = R == 1 ? 4 : R == 2 ? 2 : 1;
  static_assert(per_word % C == 0, "every chain gets the same number of values");
  const int G = p.K / GS;
  const int words = p.K / per_word;
  const size_t ks = p.k_stride, gs = p.g_stride;
  const float* x = p.xp + size_t(m0) * ks;
  const vf table = centred_table();
  vf acc[NB][R];
  MLXR_UNROLL for (int j = 0; j < NB; j++) {
    MLXR_UNROLL for (int r = 0; r < R; r++) acc[j][r] = vzero();
  }
  for (int b = 0; b * kL < words; b++) {
    const int count = fimin(kL, words - b * kL);
    // kRowsAhead weight rows ahead (rows are contiguous): one line per row and block, as read.
    MLXR_UNROLL for (int j = 0; j < NB; j++) {
      __builtin_prefetch(wrow + (j + kRowsAhead) * row_bytes + size_t(b) * kL * 4, 0, 3);
    }
    vi wv[NB];
    MLXR_UNROLL for (int j = 0; j < NB; j++) {
      wv[j] = word_prep<BITS>(load_words(wrow + j * row_bytes + size_t(b) * kL * 4, count));
    }
    const float* xb = x + size_t(b) * block;
    vf dot[NB][R][C];
    MLXR_UNROLL for (int j = 0; j < NB; j++) {
      MLXR_UNROLL for (int r = 0; r < R; r++) {
        MLXR_UNROLL for (int c = 0; c < C; c++) dot[j][r][c] = vzero();
      }
    }
    MLXR_UNROLL for (int v = 0; v < per_word; v++) {
      vf q[NB];
      MLXR_UNROLL for (int j = 0; j < NB; j++) q[j] = word_value<BITS>(wv[j], v, table);
      MLXR_UNROLL for (int r = 0; r < R; r++) {
        const vf xv = vload(xb + r * ks + v * kL);
        MLXR_UNROLL for (int j = 0; j < NB; j++) dot[j][r][v % C] = vfma(q[j], xv, dot[j][r][v % C]);
      }
    }
    const int g0 = b * block / GS;
    const int ng = fimin(groups_per_block, G - g0);
    MLXR_UNROLL for (int j = 0; j < NB; j++) {
      const vf s = lane_scales<per_word, GS>(sc + j * gs + g0, ng);
      MLXR_UNROLL for (int r = 0; r < R; r++) {
        vf d = dot[j][r][0];
        MLXR_UNROLL for (int c = 1; c < C; c++) d = vadd(d, dot[j][r][c]);
        acc[j][r] = vfma(s, d, acc[j][r]);
      }
    }
  }
  finish<R, NB>(p, bi, m0, acc, res);
}
#endif

// One tile of `rows` (1..kMaxRows) activation rows against `nb` weight rows
// (2 only when kScaledRows <= rows <= kPairedRows or in the word-lane layout).
template <int BITS, int GS>
inline void tile_rows(const Problem& p, int rows, int nb, const uint8_t* wrow, size_t row_bytes, const float* sc,
                      const float* bi, int m0, float* res) {
#ifdef MLXR_FASTNUM_WORD_LANES
  if (p.word_lanes) {
#define MLXR_FASTNUM_WORDS(R)                                                        \
  case R:                                                                            \
    if (nb == 2) {                                                                   \
      tile_words<R, 2, BITS, GS>(p, wrow, row_bytes, sc, bi, m0, res);               \
    } else {                                                                         \
      tile_words<R, 1, BITS, GS>(p, wrow, row_bytes, sc, bi, m0, res);               \
    }                                                                                \
    return;
    static_assert(kWordLaneRows == 4, "the cases below cover every row count of a word-lane call");
    switch (rows) {
      MLXR_FASTNUM_WORDS(1)
      MLXR_FASTNUM_WORDS(2)
      MLXR_FASTNUM_WORDS(3)
      default: break;
    }
#undef MLXR_FASTNUM_WORDS
  }
#endif
  switch (rows) {
#define MLXR_FASTNUM_TILE(R)                                                                 \
  case R:                                                                                    \
    if constexpr (R <= kMaxRows) {                                                           \
      if constexpr (R >= kScaledRows && R <= kPairedRows) {                                  \
        if (nb == 2) {                                                                       \
          tile<R, 2, BITS, GS>(p, wrow, row_bytes, sc, bi, m0, res);                         \
          break;                                                                             \
        }                                                                                    \
      }                                                                                      \
      tile<R, 1, BITS, GS>(p, wrow, row_bytes, sc, bi, m0, res);                             \
    }                                                                                        \
    break;
    MLXR_FASTNUM_TILE(1)
    MLXR_FASTNUM_TILE(2)
    MLXR_FASTNUM_TILE(3)
    MLXR_FASTNUM_TILE(4)
    MLXR_FASTNUM_TILE(5)
    MLXR_FASTNUM_TILE(6)
    MLXR_FASTNUM_TILE(7)
    MLXR_FASTNUM_TILE(8)
    MLXR_FASTNUM_TILE(9)
    MLXR_FASTNUM_TILE(10)
    MLXR_FASTNUM_TILE(11)
    MLXR_FASTNUM_TILE(12)
    MLXR_FASTNUM_TILE(13)
    MLXR_FASTNUM_TILE(14)
    MLXR_FASTNUM_TILE(15)
    MLXR_FASTNUM_TILE(16)
#undef MLXR_FASTNUM_TILE
    default: break;
  }
}

template <int BITS, int GS>
void run_chunk(void* ctx, int chunk) {
  const Job& job = *static_cast<const Job*>(ctx);
  const Problem& p = *job.p;
  const int n0 = chunk * job.rows_per_chunk;
  const int n1 = fimin(p.N, n0 + job.rows_per_chunk);
  const int G = p.K / p.group_size;
  const int gs = int(p.g_stride);
  const size_t row_bytes = size_t(p.K) * BITS / 8;
  // Per weight row, gs (G rounded up to whole vectors, zero past G) widened
  // scales, then as many centred biases, each row's widened by the first
  // pass over it just before its tile, while the parameters of the rows
  // ahead are prefetched: widening the whole chunk up front waited on every
  // parameter line's first load with no arithmetic to overlap it.
  float* sc = thread_scratch(size_t(n1 - n0) * 2 * gs);
  float* bi = sc + size_t(n1 - n0) * gs;
  const vf centre = vset1(float(1 << (BITS - 1)));
  const Dt param = p.param;
  const size_t param_row_bytes = size_t(G) * (param == Dt::F32 ? 4 : 2);
  const auto widen_row = [&](int n) {
    float* s = sc + size_t(n - n0) * gs;
    float* b = bi + size_t(n - n0) * gs;
    for (int g = 0; g < gs; g += kL) {
      const int count = fimin(kL, G - g);
      const vf sv = widen_params(p.scales, param, size_t(n) * G + g, count);
      vstore(s + g, sv);
      vstore(b + g, vfma(centre, sv, widen_params(p.biases, param, size_t(n) * G + g, count)));
    }
  };
  // Every line of weight row n's group parameters (a row's may straddle two).
  const auto prefetch_params = [&](int n) {
    if (n >= p.N) return;
    const char* s = static_cast<const char*>(p.scales) + size_t(n) * param_row_bytes;
    const char* b = static_cast<const char*>(p.biases) + size_t(n) * param_row_bytes;
    for (size_t o = 0; o < param_row_bytes; o += 64) {
      __builtin_prefetch(s + o, 0, 3);
      __builtin_prefetch(b + o, 0, 3);
    }
    __builtin_prefetch(s + param_row_bytes - 1, 0, 3);
    __builtin_prefetch(b + param_row_bytes - 1, 0, 3);
  };
  for (int n = n0; n < fimin(n1, n0 + kRowsAhead); n++) prefetch_params(n);
  const uint8_t* w = reinterpret_cast<const uint8_t*>(p.w);
  float res[2 * kMaxRows];
  const int pass_rows = job.pass_rows;
  for (int m0 = 0; m0 < p.M; m0 += pass_rows) {
    const int rows = fimin(pass_rows, p.M - m0);
    for (int n = n0; n < n1;) {
      const int nb = ((rows >= kScaledRows && rows <= kPairedRows) || p.word_lanes) && n + 1 < n1 ? 2 : 1;
      if (m0 == 0) {
        for (int j = 0; j < nb; j++) {
          prefetch_params(n + j + kRowsAhead);
          widen_row(n + j);
        }
      }
      tile_rows<BITS, GS>(p, rows, nb, w + size_t(n) * row_bytes, row_bytes, sc + size_t(n - n0) * gs,
                          bi + size_t(n - n0) * gs, m0, res);
      for (int j = 0; j < nb; j++) {
        for (int r = 0; r < rows; r++) store_out(p.out, p.out_dt, size_t(m0 + r) * p.N + n + j, res[j * rows + r]);
      }
      n += nb;
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

// Several problems of one width and group size (the fused block's q/k/v, or
// gate/up, over the same activations) in one pass over the pool: each keeps
// its own chunks, numbered one after the other, so the pool is woken and
// joined once and the threads balance over all of them.
struct ManyJob {
  Job jobs[kMaxProblems];
  int first_chunk[kMaxProblems + 1];
  int n;
};

template <int BITS, int GS>
void run_many_chunk(void* ctx, int chunk) {
  const ManyJob& many = *static_cast<const ManyJob*>(ctx);
  int i = 0;
  while (chunk >= many.first_chunk[i + 1]) i++;
  run_chunk<BITS, GS>(const_cast<Job*>(&many.jobs[i]), chunk - many.first_chunk[i]);
}

inline bool run_any(const Problem* ps, int n) {
  if (n < 1 || n > kMaxProblems) return false;
  const Problem& p = ps[0];
  const bool groups_ok = p.group_size == 32 || p.group_size == 64 || p.group_size == 128;
  if (!groups_ok || (p.bits != 4 && p.bits != 8) || p.K % p.group_size != 0) return false;
  ManyJob many;
  many.n = n;
  many.first_chunk[0] = 0;
  for (int i = 0; i < n; i++) {
    if (ps[i].bits != p.bits || ps[i].group_size != p.group_size || ps[i].K != p.K || ps[i].M != p.M) return false;
    many.jobs[i] = Job{&ps[i], rows_per_chunk(ps[i].N, parallel_threads()), pass_rows_cap() > 0 ? fimin(kMaxRows, pass_rows_cap()) : kPairedRows};
    many.first_chunk[i + 1] = many.first_chunk[i] + (ps[i].N + many.jobs[i].rows_per_chunk - 1) / many.jobs[i].rows_per_chunk;
  }
  void (*body)(void*, int) = p.bits == 4 ? (p.group_size == 32   ? run_many_chunk<4, 32>
                                            : p.group_size == 64 ? run_many_chunk<4, 64>
                                                                 : run_many_chunk<4, 128>)
                                         : (p.group_size == 32   ? run_many_chunk<8, 32>
                                            : p.group_size == 64 ? run_many_chunk<8, 64>
                                                                 : run_many_chunk<8, 128>);
  parallel_chunks(many.first_chunk[n], body, &many);
  return true;
}
