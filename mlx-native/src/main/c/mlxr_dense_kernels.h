// The dense-matmul kernels (out = x @ w.T, w [N, K] row-major), written once
// over a vector type: included by mlxr_qmm_avx2.cpp and mlxr_qmm_avx512.cpp
// after mlxr_qmm_kernels.h, inside their anonymous namespace, and built from
// what those files define for their instruction set (kLanes, vf / vi, vzero,
// vset1, vload, round_to<A>, store_lanes<A>, load_words8) plus the shared
// helpers (transpose8, params8, param_at in mlxr_qmm_x86.h; add_first,
// mul_first, pass_rows in mlxr_qmm_kernels.h).
//
// MLX 0.32.4's CPU Matmul computes every output element as one dot product
// summed in float from zero, in order over K, rounded once to the output type:
//  - float32: reference BLAS sgemm (the wheel's libblas 3.10; `x @ W.T` is
//    row-major NoTrans x Trans, i.e. the column-major 'T','N' loop
//    TEMP = TEMP + A(L,I)*B(L,J) with A = W, then C = ALPHA*TEMP, ALPHA 1);
//  - float16 / bfloat16: simd_gemm<T, float> with simd::max_size 1 on x86:
//    blocks of 16 over K that only reorder the loads, the float accumulator
//    never reset or rounded, the last partial block summed element by
//    element, then static_cast<T>(1.0f * sum).
// One multiply and one add per term, no FMA (the shipped libmlx and libblas
// have none). Here one vector lane is one output column and every lane runs
// that sequence, so only the schedule differs: lanes and threads across N,
// and each weight tile, read and transposed once, used by up to eight rows.
//
// Operand order decides the sign of a NaN where two NaNs meet (x86 returns
// the first source operand). Measured on the shipped binaries by probing
// mx.matmul with opposite-sign NaNs at every position (DenseMatmulExactnessTest
// repeats the probe): float32 computes w * x and sum + t everywhere (the BLAS
// loop); float16 computes x * w and sum + t, except t + sum at the first
// position of every full block of 16, and in the last, partial block of L
// elements (unrolled by four in libmlx) t + sum at positions 0, 1 and then
// 4j+1, 4j+2 of its whole fours, and w * x at its last position when L % 4 is
// 3. bfloat16 writes every NaN as 0x7FC0, so its order is moot (it takes
// float16's).

template <Act A>
constexpr Param dense_weight_param() {
  return A == Act::F32 ? Param::F32 : A == Act::F16 ? Param::F16 : Param::BF16;
}

// Lane-wide column tiles per block for R rows, chosen for the register file
// (R * T accumulators, eight transposed weight vectors of one tile, the
// broadcast activation): 16 ymm with AVX2, 32 zmm with AVX-512. AVX-512 takes
// two at every pass size, as the quantized kernels do: at four rows four
// tiles measured 1.1-1.6x two's time on the Zen 4 with bfloat16 and float16
// weights from memory (scripts/bench/dense_kernel_bench.sh), level with
// float32's.
template <int R>
constexpr int dense_tiles() {
  if constexpr (kLanes == 8) {
    return R <= 2 ? 4 : R == 4 ? 2 : 1;
  } else {
    return 2;
  }
}

// Eight values from k of each of the rows, widened to float and transposed
// to one row per lane (float16 by F16C, exact; bfloat16 shifted). A template
// over the vector type so that each file compiles only its own branch.
// AVX2: each row's eight values widened, then transpose8. AVX-512: rows l
// and l + 8 in the halves of one ymm register, an 8x8 transpose of 16-bit
// values within each half, then each column widened to sixteen floats (half
// the shuffles of widening first, and no trip through memory).
template <Param P, typename V>
MLXR_INLINE void widened8(const void* const* rowp, int k, V* t) {
  if constexpr (sizeof(V) == 32) {
    for (int l = 0; l < 8; l++) t[l] = params8(rowp[l], P, size_t(k));
    x86::transpose8(t);
  } else {
    auto row = [&](int l) {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(rowp[l]) + k));
    };
    __m256i r[8];
    for (int l = 0; l < 8; l++) r[l] = _mm256_inserti128_si256(_mm256_castsi128_si256(row(l)), row(l + 8), 1);
    __m256i a[8], b[8];
    for (int l = 0; l < 8; l += 2) {
      a[l] = _mm256_unpacklo_epi16(r[l], r[l + 1]);
      a[l + 1] = _mm256_unpackhi_epi16(r[l], r[l + 1]);
    }
    for (int h = 0; h < 8; h += 4) {
      b[h] = _mm256_unpacklo_epi32(a[h], a[h + 2]);
      b[h + 1] = _mm256_unpackhi_epi32(a[h], a[h + 2]);
      b[h + 2] = _mm256_unpacklo_epi32(a[h + 1], a[h + 3]);
      b[h + 3] = _mm256_unpackhi_epi32(a[h + 1], a[h + 3]);
    }
    for (int j = 0; j < 4; j++) {
      __m256i lo = _mm256_unpacklo_epi64(b[j], b[j + 4]), hi = _mm256_unpackhi_epi64(b[j], b[j + 4]);
      if constexpr (P == Param::F16) {
        t[2 * j] = _mm512_castps_si512(_mm512_cvtph_ps(lo));
        t[2 * j + 1] = _mm512_castps_si512(_mm512_cvtph_ps(hi));
      } else {
        t[2 * j] = _mm512_slli_epi32(_mm512_cvtepu16_epi32(lo), 16);
        t[2 * j + 1] = _mm512_slli_epi32(_mm512_cvtepu16_epi32(hi), 16);
      }
    }
  }
}

// out[j] = w[row l][k + j] as float in lane l, j < 8, for the kLanes rows at
// rowp: eight values of each row, transposed in registers.
template <Act A>
MLXR_INLINE void weights8(const void* const* rowp, int k, vf* out) {
  vi t[8];
  if constexpr (A == Act::F32) {
    load_words8(reinterpret_cast<const uint32_t* const*>(rowp), k, t);
  } else {
    widened8<dense_weight_param<A>()>(rowp, k, t);
  }
#pragma GCC unroll 8
  for (int j = 0; j < 8; j++) out[j] = __builtin_bit_cast(vf, t[j]);
}

// sum = sum + x * w for positions k .. k+7 of R rows x T tiles, in MLX's
// operand order (see the top of this file); `block_start`: k starts one of
// simd_gemm's full blocks of 16.
template <Act A, int R, int T, bool block_start>
MLXR_INLINE void dense_chunk8(const void* const* rowp, const float* const (&xr)[R], int k, vf (&acc)[R][T]) {
#pragma GCC unroll 4
  for (int t = 0; t < T; t++) {
    vf w[8];
    weights8<A>(rowp + t * kLanes, k, w);
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
#pragma GCC unroll 8
      for (int i = 0; i < R; i++) {
        vf xk = vset1(xr[i][k + j]);
        if constexpr (A == Act::F32) {
          acc[i][t] = add_first(acc[i][t], mul_first(w[j], xk));
        } else if (block_start && j == 0) {
          acc[i][t] = add_first(mul_first(xk, w[j]), acc[i][t]);
        } else {
          acc[i][t] = add_first(acc[i][t], mul_first(xk, w[j]));
        }
      }
    }
  }
}

// The last K % 16 positions (simd_gemm's partial block; none in the models'
// shapes), one at a time: each lane's weight read on its own.
template <Act A, int R, int T>
__attribute__((noinline)) void dense_tail(const void* const* rowp, const float* const (&xr)[R], int k0, int K,
                                          vf (&acc)[R][T]) {
  const int L = K - k0;
  for (int r = 0; r < L; r++) {
    const int k = k0 + r;
    const bool w_first = A == Act::F32 || (L % 4 == 3 && r == L - 1);
    const bool t_first = A != Act::F32 && r < L / 4 * 4 && (r < 4 ? r < 2 : (r % 4 == 1 || r % 4 == 2));
    alignas(64) float wl[T * kLanes];
    for (int c = 0; c < T * kLanes; c++) wl[c] = param_at(rowp[c], dense_weight_param<A>(), size_t(k));
    for (int t = 0; t < T; t++) {
      vf w = vload(wl + t * kLanes);
      for (int i = 0; i < R; i++) {
        vf xk = vset1(xr[i][k]);
        vf prod = w_first ? mul_first(w, xk) : mul_first(xk, w);
        acc[i][t] = t_first ? add_first(prod, acc[i][t]) : add_first(acc[i][t], prod);
      }
    }
  }
}

// Rows m0 .. m0+rows-1 (rows <= R; a pass with fewer real rows repeats the
// last and stores only the real ones) times the T * kLanes weight rows from
// n0 (rows past N repeat the last and are not stored).
template <Act A, int R, int T>
__attribute__((noinline)) void dense_block(const DenseProblem& p, int n0, int m0, int rows) {
  constexpr int cols = T * kLanes;
  constexpr size_t elem = A == Act::F32 ? 4 : 2;
  const void* rowp[cols];
  for (int c = 0; c < cols; c++) {
    rowp[c] = static_cast<const char*>(p.w) + size_t(imin(n0 + c, p.N - 1)) * p.K * elem;
  }
  const float* xr[R];
  vf acc[R][T];
  pass_start(p.x, p.K, m0, rows, xr, acc);
  // The next block's weights (the rows right after these, one contiguous
  // range) are prefetched while this one computes, spread over the loop
  // (mlxr_spread_prefetch.h): the hardware prefetchers alone left one thread
  // reading cold weights at a quarter of the machine's bandwidth (as for the
  // quantized kernels).
  const size_t next_row = size_t(imin(n0 + cols, p.N)), end_row = size_t(imin(n0 + 2 * cols, p.N));
  SpreadPrefetch<3> next(static_cast<const char*>(p.w) + next_row * p.K * elem, (end_row - next_row) * p.K * elem,
                         p.K / 16);
  const int full = p.K / 16 * 16;
  for (int k = 0; k < full; k += 16) {
    next.step();
    dense_chunk8<A, R, T, true>(rowp, xr, k, acc);
    dense_chunk8<A, R, T, false>(rowp, xr, k + 8, acc);
  }
  if (full < p.K) dense_tail<A, R, T>(rowp, xr, full, p.K, acc);
#pragma GCC unroll 4
  for (int t = 0; t < T; t++) {
    int n = n0 + t * kLanes;
    if (n >= p.N) break;
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) {
      if (i < rows) store_lanes<A>(p.out, size_t(m0 + i) * p.N + n, round_to<A>(acc[i][t]), imin(kLanes, p.N - n));
    }
  }
}

template <Act A, int R>
void dense_rows_over_unit(const DenseProblem& p, int n_begin, int n_end, int m0, int rows) {
  constexpr int T = dense_tiles<R>();
  for (int n0 = n_begin; n0 < n_end; n0 += T * kLanes) dense_block<A, R, T>(p, n0, m0, rows);
}

// Columns per unit of work: the widest block any pass size uses for M rows.
inline int dense_unit_cols(int M) {
  int cols = 0;
  for (int m0 = 0; m0 < M;) {
    int R = pass_rows(M - m0);
    int c = (R == 8 ? dense_tiles<8>() : R == 4 ? dense_tiles<4>() : R == 2 ? dense_tiles<2>() : dense_tiles<1>()) *
            kLanes;
    cols = cols > c ? cols : c;
    m0 += R;
  }
  return cols;
}

// Rows m_begin .. m_end-1 times one unit of columns: passes of pass_rows()
// rows, the unit's weights staying in L1/L2 between passes.
template <Act A>
void dense_unit(const DenseProblem& p, int n_begin, int n_end, int m_begin, int m_end) {
  for (int m0 = m_begin; m0 < m_end;) {
    int left = m_end - m0;
    int R = pass_rows(left);
    int rows = imin(R, left);
    switch (R) {
      case 8: dense_rows_over_unit<A, 8>(p, n_begin, n_end, m0, rows); break;
      case 4: dense_rows_over_unit<A, 4>(p, n_begin, n_end, m0, rows); break;
      case 2: dense_rows_over_unit<A, 2>(p, n_begin, n_end, m0, rows); break;
      default: dense_rows_over_unit<A, 1>(p, n_begin, n_end, m0, rows); break;
    }
    m0 += rows;
  }
}

// Rows of activations per slab: prefill runs every unit over one slab of 64
// rows (64 x K floats, which stay in L2) before the next, so the activations
// are not streamed from memory once per unit.
constexpr int kDenseSlabRows = 64;

template <Act A>
void run_dense_typed(const DenseProblem& p) {
  struct Work {
    const DenseProblem* p;
    int cols, units, chunks;
  };
  const int cols = dense_unit_cols(imin(p.M, kDenseSlabRows));
  const int units = (p.N + cols - 1) / cols;
  // A few chunks per thread so a descheduled thread's share is picked up by the others.
  Work work{&p, cols, units, imin(units, parallel_threads() * 4)};
  parallel_chunks(work.chunks, [](void* ctx, int chunk) {
    const Work& w = *static_cast<const Work*>(ctx);
    int lo = int(int64_t(w.units) * chunk / w.chunks), hi = int(int64_t(w.units) * (chunk + 1) / w.chunks);
    for (int m0 = 0; m0 < w.p->M; m0 += kDenseSlabRows) {
      int m1 = imin(m0 + kDenseSlabRows, w.p->M);
      for (int u = lo; u < hi; u++) dense_unit<A>(*w.p, u * w.cols, imin((u + 1) * w.cols, w.p->N), m0, m1);
    }
  }, &work);
}

inline void run_dense_any(const DenseProblem& p, Act act) {
  switch (act) {
    case Act::F32: run_dense_typed<Act::F32>(p); break;
    case Act::F16: run_dense_typed<Act::F16>(p); break;
    default: run_dense_typed<Act::BF16>(p); break;
  }
}
