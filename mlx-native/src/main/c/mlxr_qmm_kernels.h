// The quantized-matmul kernels, written once over a vector type: included by
// mlxr_qmm_avx2.cpp (8 float lanes) and mlxr_qmm_avx512.cpp (16 lanes) inside
// their anonymous namespace, after each has defined, for its instruction set:
//   kLanes, tiles_for<R>() (lane-wide column tiles per block for R rows), types vf / vi, and vzero, vset1, vload, vstore,
//   vseti, vand, vor, vshr<bits>, vshl<bits>, vcvt, vmul, round_to<A>, store_lanes<A>,
//   load_words8, gather_word; kPanelMinRows (the rows from which panel_unit runs, 0: never);
//   MLXR_VREG, the asm constraint of a vf; and optionally MLXR_BCAST, the
//   embedded-broadcast suffix of a memory operand (times_x_at).
//
// MLX's _qmm_t computes each output element, in order over K, as
//     w   = T(T(scale * T(q)) + bias)
//     t   = T(x * w)
//     sum = T(sum + t)
// every product and sum in float and rounded to T, no FMA. Here one vector
// lane is one output column: each lane runs exactly that sequence, so only the
// schedule differs from MLX's — lanes across N, blocks of columns across
// threads, and each decoded weight used at once by every row of a pass (up to
// eight rows share one decode at 4 and 8 bits; see every_pass_size).

// Operand order, which decides the sign of a NaN result when both operands
// are NaN (x86 returns the first one). It is not in MLX's source but in how
// GCC allocated registers for the shipped libmlx, measured by probing
// mx.quantized_matmul with opposite-sign NaNs at every position of a group
// (QuantizedMatmulExactnessTest.nanOperandOrderAsMlx repeats the probe):
// float16 computes x * w and t + sum everywhere; float32 computes w * x, and
// sum + t or t + sum depending on the position p in the group as below.
// bfloat16 rounds every NaN to the one encoding 0x7FC0, so its order is moot.
// For 3 and 5 bits (MLX unrolls its loop over a pack of 8 values) the pattern
// is (p & 7) < 2, for 6 bits (packs of 4) (p & 3) < 2, at every group size.
template <Act A, int bits, int group_size>
constexpr bool sum_first(int p) {
  if constexpr (A != Act::F32) {
    return false;
  } else if constexpr (bits == 3 || bits == 5) {
    return (p & 7) < 2;
  } else if constexpr (bits == 6) {
    return (p & 3) < 2;
  } else if constexpr (bits == 8 || (bits == 4 && group_size != 32)) {
    return true;
  } else if constexpr (group_size == 32) {
    return p < 2;
  } else {
    return (p & 3) < 2;
  }
}

// sum_first over a block of four positions as a mask (bit d: position d of
// the block): for the group's first block, and for every later one (each
// pattern above has period 4 after the first block).
template <Act A, int bits, int group_size>
constexpr int sum_first_mask(bool first_block) {
  int mask = 0;
  for (int d = 0; d < 4; d++) mask |= sum_first<A, bits, group_size>(first_block ? d : 4 + d) << d;
  return mask;
}

// a + b and a * b with `a` as the first source operand, which x86 returns
// when both are NaN. Inline assembly because GCC treats vector + and * as
// commutative and may swap the operands of _mm256_add_ps / _mm512_add_ps.
MLXR_INLINE vf add_first(vf a, vf b) {
  vf r;
  asm("vaddps %2, %1, %0" : "=" MLXR_VREG(r) : MLXR_VREG(a), MLXR_VREG(b));
  return r;
}

MLXR_INLINE vf mul_first(vf a, vf b) {
  vf r;
  asm("vmulps %2, %1, %0" : "=" MLXR_VREG(r) : MLXR_VREG(a), MLXR_VREG(b));
  return r;
}

template <Act A>
MLXR_INLINE vf times_x(vf x, vf w) {
  return A == Act::F32 ? mul_first(w, x) : mul_first(x, w);
}

// One term added as MLX adds it: t = T(product), sum = T(sum + t), the sum the
// first operand where `sum_leads` (sum_first's answer for the position).
template <Act A>
MLXR_INLINE vf add_term(vf sum, vf product, bool sum_leads) {
  vf t = round_to<A>(product);
  return round_to<A>(sum_leads ? add_first(sum, t) : add_first(t, sum));
}

// times_x<A>(broadcast *x, w). Where the file defines MLXR_BCAST (AVX-512's
// embedded broadcast), float32 reads *x as the multiply's memory operand, its
// second source as in mul_first(w, x), so a pass keeps no register per row.
template <Act A>
MLXR_INLINE vf times_x_at(const float* x, vf w) {
#ifdef MLXR_BCAST
  if constexpr (A == Act::F32) {
    vf r;
    asm("vmulps %2" MLXR_BCAST ", %1, %0" : "=" MLXR_VREG(r) : MLXR_VREG(w), "m"(*x));
    return r;
  }
#endif
  return times_x<A>(vset1(*x), w);
}

// The start of a pass of R rows from m0, `rows` of them real (the rest repeat
// the last, so no lane reads past the activations): each row's activations
// over K, and the pass's R x T sums at zero.
template <int R, int T>
MLXR_INLINE void pass_start(const float* x, int K, int m0, int rows, const float* (&xr)[R], vf (&acc)[R][T]) {
  for (int i = 0; i < R; i++) xr[i] = x + size_t(m0 + imin(i, rows - 1)) * K;
#pragma GCC unroll 8
  for (int i = 0; i < R; i++) {
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) acc[i][t] = vzero();
  }
}

// T(T(scale * q) + bias): q is never NaN; the product goes first.
template <Act A>
MLXR_INLINE vf dequantized(vf scale, vf q, vf bias) {
  return round_to<A>(add_first(round_to<A>(vmul(scale, q)), bias));
}

// Positions k .. k+3 of the word `v` for R rows x T tiles: each tile's
// weight is decoded once and used at once by every row. Bit d of `order`
// says whether position k+d adds the sum first. The R*T sums are independent
// chains, which hides the add (and rounding) latency.
//
// Two ways to decode position `pos` (0 .. 32/bits - 1) of the word, chosen
// per block (`pre`):
//  - shifting: q = T(word & mask), then word >>= bits, times the group's scale;
//  - pre-shifted (pre = true): q' = T(word & (mask << bits*pos)) = q * 2^(bits*pos),
//    an exact float (below 2^31; the word's top position is word >> (32 -
//    bits) instead), times the scale pre-multiplied by 2^-(bits*pos) (`sp`,
//    filled per group by scaled_scales). The real product is the same,
//    q * scale, so its rounding is too, whenever scale * 2^-(bits*pos) is
//    exact: zero, Inf, NaN or |scale| >= 2^-98 (no underflow; block_rows
//    checks the block's scales). That saves the shift, which on the Zen 4
//    measured cost a third of the decode.
template <Act A, int bits, int R, int T, int order, int e, bool pre>
MLXR_INLINE void block4(vi (&v)[T], vf (&acc)[R][T], vi mask, const float* s, const float* b,
                        const float* sp, const float* const (&xr)[R], int k) {
  constexpr int per_word = 32 / bits;
#pragma GCC unroll 4
  for (int d = 0; d < 4; d++) {
    vf xk[R];
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) xk[i] = vset1(xr[i][k + d]);
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) {
      vf q, scale;
      if constexpr (pre) {
        const int pos = e + d;
        if (pos == per_word - 1) {
          q = vcvt(vshr<32 - bits>(v[t]));
        } else {
          q = vcvt(vand(v[t], vseti(((1 << bits) - 1) << (bits * pos))));
        }
        scale = pos == 0 || pos == per_word - 1 ? vload(s + t * kLanes) : vload(sp + (pos * T + t) * kLanes);
      } else {
        q = vcvt(vand(v[t], mask));
        v[t] = vshr<bits>(v[t]);
        scale = vload(s + t * kLanes);
      }
      vf w = dequantized<A>(scale, q, vload(b + t * kLanes));
#pragma GCC unroll 8
      for (int i = 0; i < R; i++) {
        acc[i][t] = add_term<A>(acc[i][t], times_x<A>(xk[i], w), (order >> d) & 1);
      }
    }
  }
}

// sp[pos][tile] = the group's scales times 2^-(bits*pos), for the positions
// of a word that the pre-shifted decode reads with a shifted mask (exact: the
// caller checked that no scale underflows).
template <int bits, int T>
MLXR_INLINE void scaled_scales(const float* s, float* sp) {
  constexpr int per_word = 32 / bits;
#pragma GCC unroll 16
  for (int pos = 1; pos < per_word - 1; pos++) {
    const vf f = vset1(__builtin_ldexpf(1.0f, -bits * pos));
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) vstore(sp + (pos * T + t) * kLanes, vmul(vload(s + t * kLanes), f));
  }
}

template <Act A, int bits, int R, int T, int order, int e, bool pre>
MLXR_INLINE void positions_from(vi (&v)[T], vf (&acc)[R][T], vi mask, const float* s, const float* b,
                                const float* sp, const float* const (&xr)[R], int k) {
  if constexpr (e < 32 / bits) {
    block4<A, bits, R, T, order, e, pre>(v, acc, mask, s, b, sp, xr, k + e);
    positions_from<A, bits, R, T, order, e + 4, pre>(v, acc, mask, s, b, sp, xr, k);
  }
}

// The 32 / bits positions held by word `wi` of each lane's packed row, in
// MLX's order over K (each word's low bits first).
template <Act A, int bits, int group_size, int R, int T, bool pre>
MLXR_INLINE void word_step(vi (&v)[T], vf (&acc)[R][T], vi mask, const float* sc, const float* bi,
                           float* sp, const float* const (&xr)[R], int wi) {
  constexpr int per_word = 32 / bits;
  constexpr int words_per_group = group_size / per_word;
  constexpr int first = sum_first_mask<A, bits, group_size>(true);
  constexpr int later = sum_first_mask<A, bits, group_size>(false);
  const size_t g = size_t(wi / words_per_group);
  const float* s = sc + g * (T * kLanes);
  const float* b = bi + g * (T * kLanes);
  const int k = wi * per_word;
  const bool group_start = wi % words_per_group == 0;
  if constexpr (pre) {
    if (group_start) scaled_scales<bits, T>(s, sp);
  }
  if constexpr (first != later) {
    if (group_start) {
      block4<A, bits, R, T, first, 0, pre>(v, acc, mask, s, b, sp, xr, k);
      positions_from<A, bits, R, T, later, 4, pre>(v, acc, mask, s, b, sp, xr, k);
      return;
    }
  }
  positions_from<A, bits, R, T, later, 0, pre>(v, acc, mask, s, b, sp, xr, k);
}

// ---- widths whose values straddle words: 3, 5 and 6 bits --------------------
//
// MLX packs these as one little-endian bit stream per weight row (value i in
// bits [bits*i, bits*i + bits) of the row's words, which is what its byte-wise
// extract_bits reads: 8 values per 3 or 5 bytes, 4 per 3 bytes). A pack of
// pack_words() 32-bit words holds pack_values() whole values (3 words: 32
// 3-bit or 16 6-bit values; 5 words: 32 5-bit values), and a group is a whole
// number of packs at group sizes 32, 64 and 128. A value that straddles two
// words is assembled from both as an exact integer before the conversion, so
// each element's arithmetic is the other widths': w = T(T(scale * T(q)) +
// bias), t = T(x * w), sum = T(sum + t). These widths use the shifting decode
// only (no pre-shifted scales), so no scale is too small for them.
template <int bits>
constexpr bool straddles() {
  return bits == 3 || bits == 5 || bits == 6;
}

template <int bits>
constexpr int pack_words() {
  return bits == 6 ? 3 : straddles<bits>() ? bits : 1;
}

template <int bits>
constexpr int pack_values() {
  return pack_words<bits>() * 32 / bits;
}

// Value i of a pack (v: its words, one lane per weight row) as an integer.
template <int bits, int i>
MLXR_INLINE vi pack_value(const vi* v) {
  constexpr int at = bits * i, w = at / 32, s = at % 32, mask = (1 << bits) - 1;
  if constexpr (s + bits > 32) {
    return vor(vshr<s>(v[w]), vand(vshl<32 - s>(v[w + 1]), vseti(mask)));
  } else if constexpr (s + bits == 32) {
    return vshr<s>(v[w]);
  } else if constexpr (s == 0) {
    return vand(v[w], vseti(mask));
  } else {
    return vand(vshr<s>(v[w]), vseti(mask));
  }
}

// Values i .. pack_values() - 1 of one pack for R rows x T tiles, in MLX's
// order over K (k: the pack's first position), each decoded weight used at
// once by every row, as block4 does.
template <Act A, int bits, int group_size, int R, int T, int i>
MLXR_INLINE void pack_from(const vi* const (&v)[T], vf (&acc)[R][T], const float* s, const float* b,
                           const float* const (&xr)[R], int k) {
  if constexpr (i < pack_values<bits>()) {
    // The position in the group, which sum_first reads modulo 8, is i modulo 8.
    static_assert(pack_values<bits>() % 8 == 0 || bits == 6, "sum_first's period divides a pack");
    vf xk[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) xk[r] = vset1(xr[r][k + i]);
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) {
      vf w = dequantized<A>(vload(s + t * kLanes), vcvt(pack_value<bits, i>(v[t])), vload(b + t * kLanes));
#pragma GCC unroll 8
      for (int r = 0; r < R; r++) {
        acc[r][t] = add_term<A>(acc[r][t], times_x<A>(xk[r], w), sum_first<A, bits, group_size>(i));
      }
    }
    pack_from<A, bits, group_size, R, T, i + 1>(v, acc, s, b, xr, k);
  }
}

// Pack number `pack` of each lane's row (v[t]: tile t's pack_words() words).
template <Act A, int bits, int group_size, int R, int T>
MLXR_INLINE void pack_step(const vi* const (&v)[T], vf (&acc)[R][T], const float* sc, const float* bi,
                           const float* const (&xr)[R], int pack) {
  constexpr int packs_per_group = group_size / pack_values<bits>();
  static_assert(group_size % pack_values<bits>() == 0, "a group is a whole number of packs");
  const size_t g = size_t(pack / packs_per_group);
  pack_from<A, bits, group_size, R, T, 0>(v, acc, sc + g * (T * kLanes), bi + g * (T * kLanes), xr,
                                          pack * pack_values<bits>());
}

// Whether every scale of the block (the widened [group][column] floats) can be
// scaled by 2^-(32 - 2*bits) exactly (see block4): zero, Inf, NaN or at least
// 2^-98 in magnitude. Float16 scales always can (their smallest is 2^-24).
inline bool scales_shift_exactly(const Problem& p, const float* sc, size_t count) {
  if (p.param == Param::F16) return true;
  bool ok = true;
  for (size_t i = 0; i < count; i++) {
    float a = __builtin_fabsf(sc[i]);
    ok &= !(a < 0x1p-98f) || a == 0.0f;
  }
  return ok;
}

// The `cols` weight rows from n0 (rows past N repeat the last): where each
// row's words start, and its offset in words from n0's row (gather_word's).
// The next block's weights (the rows right after these, none past N) and their
// group parameters are prefetched while this one computes, the weights spread
// over its eight-word steps (mlxr_spread_prefetch.h): the hardware prefetchers
// alone left a single thread reading cold weights at a quarter of the
// machine's bandwidth.
template <int cols>
struct BlockRows {
  const uint32_t* rowp[cols];
  alignas(64) int offsets[cols];
  const uint32_t* base;
  SpreadPrefetch<3> next;  // into L1

  MLXR_INLINE BlockRows(const Problem& p, int n0, int groups, int row_words) {
    for (int c = 0; c < cols; c++) {
      int r = imin(n0 + c, p.N - 1);
      rowp[c] = p.w + size_t(r) * row_words;
      offsets[c] = (r - n0) * row_words;
    }
    base = p.w + size_t(n0) * row_words;
    const int next_rows = imin(cols, p.N - (n0 + cols));
    if (next_rows <= 0) return;
    next = SpreadPrefetch<3>(p.w + size_t(n0 + cols) * row_words, size_t(next_rows) * row_words * 4, row_words / 8);
    const int param_bytes = p.param == Param::F32 ? 4 : 2;
    const size_t at = size_t(n0 + cols) * groups * param_bytes, len = size_t(next_rows) * groups * param_bytes;
    for (size_t o = 0; o < len; o += 64) {
      __builtin_prefetch(static_cast<const char*>(p.scales) + at + o, 0, 3);
      __builtin_prefetch(static_cast<const char*>(p.biases) + at + o, 0, 3);
    }
  }

  // One eight-word step's share of the next block's weights.
  MLXR_INLINE void prefetch_step() { next.step(); }
};

// Rows m0 .. m0+rows-1 (rows <= R; a pass of R rows with fewer real ones
// repeats the last and stores only the real ones) times the T * kLanes
// weight rows from n0. Weights are read as eight contiguous words of each
// row, transposed in registers to one word per lane (load_words8; AVX2
// gathers cost more than all the arithmetic on the machines measured), and
// a row's last words that do not fill eight are gathered.
// `pre`: the pre-shifted decode (see block4), when the block's scales allow it.
template <Act A, int bits, int group_size, int R, int T, bool pre>
__attribute__((noinline)) void block_compute(const Problem& p, int n0, int m0, int rows, const float* sc,
                                             const float* bi) {
  constexpr int cols = T * kLanes;
  const int groups = p.K / group_size;
  const int row_words = p.K * bits / 32;
  alignas(64) float sp[pre ? 32 / bits * cols : 1];
  BlockRows<cols> wr(p, n0, groups, row_words);
  const float* xr[R];
  vf acc[R][T];
  pass_start(p.x, p.K, m0, rows, xr, acc);
  const vi mask = vseti((1 << bits) - 1);
  if constexpr (straddles<bits>()) {
    // Eight packs at a time, read as pack_words() eight-word loads (whole
    // packs in whole loads); a row's last packs that do not fill eight are gathered.
    constexpr int P = pack_words<bits>(), chunk = 8 * P;
    int w0 = 0;
    for (; w0 + chunk <= row_words; w0 += chunk) {
      vi tw[T][chunk];
      for (int c = 0; c < chunk; c += 8) {
        wr.prefetch_step();
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) load_words8(wr.rowp + t * kLanes, w0 + c, tw[t] + c);
      }
      for (int j = 0; j < 8; j++) {
        const vi* v[T];
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) v[t] = tw[t] + j * P;
        pack_step<A, bits, group_size, R, T>(v, acc, sc, bi, xr, w0 / P + j);
      }
    }
    for (; w0 < row_words; w0 += P) {
      vi tv[T][P];
      const vi* v[T];
#pragma GCC unroll 4
      for (int t = 0; t < T; t++) {
        for (int q = 0; q < P; q++) tv[t][q] = gather_word(wr.base, wr.offsets + t * kLanes, w0 + q);
        v[t] = tv[t];
      }
      pack_step<A, bits, group_size, R, T>(v, acc, sc, bi, xr, w0 / P);
    }
  } else {
    int w0 = 0;
    for (; w0 + 8 <= row_words; w0 += 8) {
      wr.prefetch_step();
      vi tw[T][8];
#pragma GCC unroll 4
      for (int t = 0; t < T; t++) load_words8(wr.rowp + t * kLanes, w0, tw[t]);
      for (int j = 0; j < 8; j++) {
        vi v[T];
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) v[t] = tw[t][j];
        word_step<A, bits, group_size, R, T, pre>(v, acc, mask, sc, bi, sp, xr, w0 + j);
      }
    }
    for (; w0 < row_words; w0++) {
      vi v[T];
#pragma GCC unroll 4
      for (int t = 0; t < T; t++) v[t] = gather_word(wr.base, wr.offsets + t * kLanes, w0);
      word_step<A, bits, group_size, R, T, pre>(v, acc, mask, sc, bi, sp, xr, w0);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; t++) {
    int n = n0 + t * kLanes;
    if (n >= p.N) break;
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) {
      if (i < rows) store_lanes<A>(p.out, size_t(m0 + i) * p.N + n, acc[i][t], imin(kLanes, p.N - n));
    }
  }
}

// The shifting decode for a block whose scales cannot be pre-shifted (rare:
// float32 or bfloat16 scales below 2^-98), one row at a time in one-row
// blocks: each output's arithmetic does not depend on the pass, so the bytes
// are the same, and only one pass size is compiled for this path.
template <Act A, int bits, int group_size>
__attribute__((noinline)) void block_rows_shifting(const Problem& p, int n0, int cols, int m0, int rows) {
  constexpr int T1 = tiles_for<1>(), cols1 = T1 * kLanes;
  const int groups = p.K / group_size;
  float* sc = thread_scratch(size_t(2) * cols1 * groups);
  float* bi = sc + size_t(cols1) * groups;
  for (int c = 0; c < cols && n0 + c < p.N; c += cols1) {
    block_params(p, n0 + c, cols1, groups, sc, bi);
    for (int i = 0; i < rows; i++) block_compute<A, bits, group_size, 1, T1, false>(p, n0 + c, m0 + i, 1, sc, bi);
  }
}

template <Act A, int bits, int group_size, int R, int T>
void block_rows(const Problem& p, int n0, int m0, int rows) {
  constexpr int cols = T * kLanes;
  const int groups = p.K / group_size;
  float* sc = thread_scratch(size_t(2) * cols * groups);
  float* bi = sc + size_t(cols) * groups;
  block_params(p, n0, cols, groups, sc, bi);
  if constexpr (straddles<bits>()) {
    block_compute<A, bits, group_size, R, T, false>(p, n0, m0, rows, sc, bi);
  } else if (scales_shift_exactly(p, sc, size_t(cols) * groups)) {
    block_compute<A, bits, group_size, R, T, true>(p, n0, m0, rows, sc, bi);
  } else {
    block_rows_shifting<A, bits, group_size>(p, n0, cols, m0, rows);
  }
}

// Widths that get every pass size (8, 4, 2 and 1 rows): 4 and 8 bits, mlx-lm's
// quantizations (4-bit group 64 its default). Every pass size is a full copy
// of the kernel per activation type and group size, and the other widths'
// copies (2, 3, 5 and 6 bits unroll two to eight times as many positions per
// word) made these two files most of the shim's compile time; those widths
// take one-row passes (block_rows_one_by_one), whose arithmetic per output is
// the same, so the bytes are too: decoding (M = 1) runs the code it always
// did, and only M > 1 decodes each weight once per row.
template <int bits>
constexpr bool every_pass_size() {
  return bits == 4 || bits == 8;
}

// Rows m0 .. m0+rows-1, one at a time, times the tiles_for<1>() * kLanes
// weight rows from n0: the block's parameters are widened once and its
// weights stay in cache for every row.
template <Act A, int bits, int group_size>
void block_rows_one_by_one(const Problem& p, int n0, int m0, int rows) {
  constexpr int T1 = tiles_for<1>(), cols1 = T1 * kLanes;
  const int groups = p.K / group_size;
  float* sc = thread_scratch(size_t(2) * cols1 * groups);
  float* bi = sc + size_t(cols1) * groups;
  block_params(p, n0, cols1, groups, sc, bi);
  if constexpr (straddles<bits>()) {
    for (int i = 0; i < rows; i++) block_compute<A, bits, group_size, 1, T1, false>(p, n0, m0 + i, 1, sc, bi);
  } else if (scales_shift_exactly(p, sc, size_t(cols1) * groups)) {
    for (int i = 0; i < rows; i++) block_compute<A, bits, group_size, 1, T1, true>(p, n0, m0 + i, 1, sc, bi);
  } else {
    for (int i = 0; i < rows; i++) block_compute<A, bits, group_size, 1, T1, false>(p, n0, m0 + i, 1, sc, bi);
  }
}

// Rows of the next pass when `left` rows remain: 8, 4, 2 or 1; 7 or 3 take
// the next size up with a repeated row (one more row of arithmetic costs
// less than another pass that decodes every weight again).
MLXR_INLINE int pass_rows(int left) {
  return left >= 7 ? 8 : left >= 3 ? 4 : left;
}

// ---- more rows than one pass: each weight decoded once -----------------------
//
// With more rows than one pass the passes above would each decode every
// weight of the unit again (a pass's decode costs about as much as its first
// rows' arithmetic), and an 8-row pass that decodes as it goes spills.
// Instead the unit's weights are decoded kPanelWords words of each weight row
// at a time into a float panel ([position][column], in L1), every element
// w = T(T(scale * T(q)) + bias) as block4's shifting decode computes it (the
// same value as the pre-shifted one), and passes of up to eight rows read the
// panel: t = T(x * w), sum = T(sum + t) in K order with the same operand
// order, so each output's arithmetic, and its bytes, are unchanged. A pass's
// sums wait in a [row][column] buffer between panels.
constexpr int kPanelWords = 16;

// The 32 / bits positions of word v (one lane per weight row, T tiles) into
// the panel's rows from `panel` (each `cols` floats), with the group's
// parameters s and b.
template <Act A, int bits, int T>
MLXR_INLINE void decode_word(vi (&v)[T], vi mask, const float* s, const float* b, float* panel) {
  constexpr int cols = T * kLanes;
#pragma GCC unroll 8
  for (int d = 0; d < 32 / bits; d++) {
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) {
      vf q = vcvt(vand(v[t], mask));
      v[t] = vshr<bits>(v[t]);
      vstore(panel + d * cols + t * kLanes, dequantized<A>(vload(s + t * kLanes), q, vload(b + t * kLanes)));
    }
  }
}

// Positions k .. k+3 of the panel for R rows x T tiles, as block4 (bit d of
// `order`: whether position k+d adds the sum first).
template <Act A, int R, int T, int order>
MLXR_INLINE void panel4(vf (&acc)[R][T], const float* panel, const float* const (&xr)[R], int k) {
  constexpr int cols = T * kLanes;
#pragma GCC unroll 4
  for (int d = 0; d < 4; d++) {
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) {
      vf w = vload(panel + (k + d) * cols + t * kLanes);
#pragma GCC unroll 8
      for (int i = 0; i < R; i++) {
        acc[i][t] = add_term<A>(acc[i][t], times_x_at<A>(xr[i] + k + d, w), (order >> d) & 1);
      }
    }
  }
}

// Rows m0 .. m0+rows-1 (rows <= R, the rest repeating the last as in
// pass_start) over the panel's `positions` positions from k0: the sums start
// at zero (first) or from `sums`, and end in the output (last) or in `sums`.
template <Act A, int bits, int group_size, int R, int T>
__attribute__((noinline)) void panel_pass(const Problem& p, int n0, int m0, int rows, const float* panel, int k0,
                                          int positions, float* sums, bool first, bool last) {
  constexpr int cols = T * kLanes;
  constexpr int first_block = sum_first_mask<A, bits, group_size>(true);
  constexpr int later = sum_first_mask<A, bits, group_size>(false);
  const float* xr[R];
  vf acc[R][T];
  pass_start(p.x + k0, p.K, m0, rows, xr, acc);
  if (!first) {
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) {
#pragma GCC unroll 4
      for (int t = 0; t < T; t++) acc[i][t] = vload(sums + size_t(imin(i, rows - 1)) * cols + t * kLanes);
    }
  }
  for (int k = 0; k < positions; k += 4) {
    if (first_block != later && (k0 + k) % group_size == 0) {
      panel4<A, R, T, first_block>(acc, panel, xr, k);
    } else {
      panel4<A, R, T, later>(acc, panel, xr, k);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; t++) {
    const int n = n0 + t * kLanes;
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) {
      if (i >= rows) break;
      if (!last) {
        vstore(sums + size_t(i) * cols + t * kLanes, acc[i][t]);
      } else if (n < p.N) {
        store_lanes<A>(p.out, size_t(m0 + i) * p.N + n, acc[i][t], imin(kLanes, p.N - n));
      }
    }
  }
}

// Every row times the tiles_for<8>() * kLanes weight rows from n0 through
// panels (see kPanelWords): at 4 and 8 bits, for M >= kPanelMinRows.
template <Act A, int bits, int group_size>
__attribute__((noinline)) void panel_unit(const Problem& p, int n0) {
  constexpr int T = tiles_for<8>(), cols = T * kLanes, per_word = 32 / bits;
  const int groups = p.K / group_size;
  const int row_words = p.K * bits / 32;
  // [group][column] scales and biases, the panel, then each row's sums (all multiples of 16 floats).
  float* sc = thread_scratch(size_t(2) * cols * groups + size_t(kPanelWords) * per_word * cols + size_t(p.M) * cols);
  float* bi = sc + size_t(cols) * groups;
  float* panel = bi + size_t(cols) * groups;
  float* sums = panel + size_t(kPanelWords) * per_word * cols;
  block_params(p, n0, cols, groups, sc, bi);
  BlockRows<cols> wr(p, n0, groups, row_words);
  const vi mask = vseti((1 << bits) - 1);
  for (int w0 = 0; w0 < row_words; w0 += kPanelWords) {
    const int words = imin(kPanelWords, row_words - w0);
    int w = 0;
    for (; w + 8 <= words; w += 8) {
      wr.prefetch_step();
      vi tw[T][8];
#pragma GCC unroll 4
      for (int t = 0; t < T; t++) load_words8(wr.rowp + t * kLanes, w0 + w, tw[t]);
      for (int j = 0; j < 8; j++) {
        vi v[T];
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) v[t] = tw[t][j];
        const size_t g = size_t((w0 + w + j) * per_word / group_size);
        decode_word<A, bits, T>(v, mask, sc + g * cols, bi + g * cols, panel + size_t(w + j) * per_word * cols);
      }
    }
    for (; w < words; w++) {
      vi v[T];
#pragma GCC unroll 4
      for (int t = 0; t < T; t++) v[t] = gather_word(wr.base, wr.offsets + t * kLanes, w0 + w);
      const size_t g = size_t((w0 + w) * per_word / group_size);
      decode_word<A, bits, T>(v, mask, sc + g * cols, bi + g * cols, panel + size_t(w) * per_word * cols);
    }
    const bool first = w0 == 0, last = w0 + words == row_words;
    for (int m0 = 0; m0 < p.M;) {
      const int left = p.M - m0, R = pass_rows(left), rows = imin(R, left);
      float* s = sums + size_t(m0) * cols;
      switch (R) {
        case 8: panel_pass<A, bits, group_size, 8, T>(p, n0, m0, rows, panel, w0 * per_word, words * per_word, s, first, last); break;
        case 4: panel_pass<A, bits, group_size, 4, T>(p, n0, m0, rows, panel, w0 * per_word, words * per_word, s, first, last); break;
        case 2: panel_pass<A, bits, group_size, 2, T>(p, n0, m0, rows, panel, w0 * per_word, words * per_word, s, first, last); break;
        default: panel_pass<A, bits, group_size, 1, T>(p, n0, m0, rows, panel, w0 * per_word, words * per_word, s, first, last); break;
      }
      m0 += rows;
    }
  }
}

template <Act A, int bits, int group_size, int R>
void rows_over_unit(const Problem& p, int n_begin, int n_end, int m0, int rows) {
  constexpr int T = tiles_for<R>();
  for (int n0 = n_begin; n0 < n_end; n0 += T * kLanes) block_rows<A, bits, group_size, R, T>(p, n0, m0, rows);
}

constexpr int block_cols(int R) {
  return R == 8 ? tiles_for<8>() * kLanes : R == 4 ? tiles_for<4>() * kLanes
         : R == 2 ? tiles_for<2>() * kLanes : tiles_for<1>() * kLanes;
}

// Columns per unit of work for M rows: the widest block its passes use, so
// each pass covers the unit in whole blocks, and no wider (units are what the
// threads share out, and the cache holds one between passes).
inline int unit_cols(int M) {
  if (kPanelMinRows > 0 && M >= kPanelMinRows) return tiles_for<8>() * kLanes;  // panel_unit's
  int cols = 0;
  for (int m0 = 0; m0 < M;) {
    int R = pass_rows(M - m0);
    cols = cols > block_cols(R) ? cols : block_cols(R);
    m0 += R;
  }
  return cols;
}

// One unit of columns for every row: passes of pass_rows() rows over its
// weights, which stay in L1/L2 between passes.
template <Act A, int bits, int group_size>
void run_unit(const Problem& p, int n_begin, int n_end) {
  if constexpr (!every_pass_size<bits>()) {
    for (int n0 = n_begin; n0 < n_end; n0 += block_cols(1)) block_rows_one_by_one<A, bits, group_size>(p, n0, 0, p.M);
  } else {
    if constexpr (kPanelMinRows > 0) {
      if (p.M >= kPanelMinRows) {
        for (int n0 = n_begin; n0 < n_end; n0 += tiles_for<8>() * kLanes) panel_unit<A, bits, group_size>(p, n0);
        return;
      }
    }
    for (int m0 = 0; m0 < p.M;) {
      int left = p.M - m0;
      int R = pass_rows(left);
      int rows = imin(R, left);
      switch (R) {
        case 8: rows_over_unit<A, bits, group_size, 8>(p, n_begin, n_end, m0, rows); break;
        case 4: rows_over_unit<A, bits, group_size, 4>(p, n_begin, n_end, m0, rows); break;
        case 2: rows_over_unit<A, bits, group_size, 2>(p, n_begin, n_end, m0, rows); break;
        default: rows_over_unit<A, bits, group_size, 1>(p, n_begin, n_end, m0, rows); break;
      }
      m0 += rows;
    }
  }
}

template <Act A, int bits, int group_size>
void run_typed(const Problem& p) {
  struct Work {
    const Problem* p;
    int cols, units, chunks;
  };
  const int cols = every_pass_size<bits>() ? unit_cols(p.M) : block_cols(1);
  const int units = (p.N + cols - 1) / cols;
  // A few chunks per thread so a descheduled thread's share is picked up by the others.
  Work work{&p, cols, units, imin(units, parallel_threads() * 4)};
  parallel_chunks(work.chunks, [](void* ctx, int chunk) {
    const Work& w = *static_cast<const Work*>(ctx);
    int lo = int(int64_t(w.units) * chunk / w.chunks), hi = int(int64_t(w.units) * (chunk + 1) / w.chunks);
    for (int u = lo; u < hi; u++) run_unit<A, bits, group_size>(*w.p, u * w.cols, imin((u + 1) * w.cols, w.p->N));
  }, &work);
}

template <Act A, int bits>
bool run_bits(const Problem& p, int group_size) {
  switch (group_size) {
    case 32: run_typed<A, bits, 32>(p); return true;
    case 64: run_typed<A, bits, 64>(p); return true;
    case 128: run_typed<A, bits, 128>(p); return true;
    default: return false;
  }
}

template <Act A>
bool run_act(const Problem& p, int bits, int group_size) {
  switch (bits) {
    case 2: return run_bits<A, 2>(p, group_size);
    case 3: return run_bits<A, 3>(p, group_size);
    case 4: return run_bits<A, 4>(p, group_size);
    case 5: return run_bits<A, 5>(p, group_size);
    case 6: return run_bits<A, 6>(p, group_size);
    case 8: return run_bits<A, 8>(p, group_size);
    default: return false;
  }
}

inline bool run_any(const Problem& p, Act act, int bits, int group_size) {
  switch (act) {
    case Act::F32: return run_act<Act::F32>(p, bits, group_size);
    case Act::F16: return run_act<Act::F16>(p, bits, group_size);
    default: return run_act<Act::BF16>(p, bits, group_size);
  }
}
