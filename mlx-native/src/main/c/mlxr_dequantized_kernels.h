// The quantized-matmul kernels over dequantized weights (mlxr_dequantized.h),
// written once over a vector type: included by mlxr_qmm_avx2.cpp and
// mlxr_qmm_avx512.cpp after mlxr_qmm_kernels.h, inside their anonymous
// namespace, built from what those define (kLanes, vf, vzero, vset1,
// round_to<A>, store_lanes<A>, add_first, mul_first, pass_rows, imin).
//
// MLX's _qmm_t computes each output element, in order over K, as
//     w   = T(T(scale * q) + bias)
//     t   = T(x * w)
//     sum = T(sum + t)
// The first line depends on the weight alone, so the layout holds its result
// (mlxr_dequantized.cpp builds it with MLX's own conversions), and each lane
// here runs the last two lines exactly as the quantized kernels' half-type
// path does: x * w, then t + sum (operand order fixes a NaN's sign, see
// mlxr_qmm_kernels.h), rounded to T after each. So the bytes are theirs and
// MLX's (QuantizedMatmulExactnessTest), at 14 vector operations per 16
// weights against 26, over four times the packed weights' bytes.

// Lane-wide tiles of a 32-column block per pass of R rows, for the register
// file (R * T accumulators, T weight vectors, the broadcast activation and the
// rounding's constants): 16 ymm with AVX2, 32 zmm with AVX-512.
template <int R>
constexpr int dequantized_tiles() {
  if constexpr (kLanes == 8) {
    return R <= 2 ? 4 : R == 4 ? 2 : 1;
  } else {
    return 2;
  }
}

// kLanes values of T widened to float (exact). A template over the vector
// type so that each file compiles only its own branch.
template <Act A, typename V = vf>
MLXR_INLINE V load_halves(const uint16_t* p) {
  if constexpr (sizeof(V) == 32) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if constexpr (A == Act::F16) {
      return _mm256_cvtph_ps(h);
    } else {
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
  } else {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    if constexpr (A == Act::F16) {
      return _mm512_cvtph_ps(h);
    } else {
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
  }
}

// How far ahead of the step being computed the weights are prefetched, in
// values of T (64 steps: 4 KiB). The weights are 4x the packed ones and cold
// at every step; on the 2-core Emerald Rapids the hardware prefetchers alone
// read them at about half the rate this reaches (docs/benchmarks.md, stop 28's
// probe).
constexpr int kPrefetchAhead = 64 * kDequantizedCols;

// Rows m0 .. m0+rows-1 (rows <= R; a pass of R rows with fewer real ones
// repeats the last and stores only the real ones) times tiles t0 .. t0+T-1 of
// block `block`.
template <Act A, int R, int T>
__attribute__((noinline)) void dequantized_pass(const DequantizedProblem& p, int block, int t0, int m0, int rows) {
  const uint16_t* w = p.w + size_t(block) * p.K * kDequantizedCols + t0 * kLanes;
  const float* xr[R];
  vf acc[R][T];
  pass_start(p.x, p.K, m0, rows, xr, acc);
  for (int k = 0; k < p.K; k++, w += kDequantizedCols) {
    __builtin_prefetch(w + kPrefetchAhead, 0, 3);
    vf wk[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) wk[t] = load_halves<A>(w + t * kLanes);
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) {
      const vf xk = vset1(xr[i][k]);
#pragma GCC unroll 4
      for (int t = 0; t < T; t++) {
        const vf tk = round_to<A>(mul_first(xk, wk[t]));
        acc[i][t] = round_to<A>(add_first(tk, acc[i][t]));
      }
    }
  }
  const int n_block = block * kDequantizedCols + t0 * kLanes;
#pragma GCC unroll 4
  for (int t = 0; t < T; t++) {
    const int n = n_block + t * kLanes;
    if (n >= p.N) break;
#pragma GCC unroll 8
    for (int i = 0; i < rows; i++) store_lanes<A>(p.out, size_t(m0 + i) * p.N + n, acc[i][t], imin(kLanes, p.N - n));
  }
}

template <Act A, int R>
void dequantized_rows(const DequantizedProblem& p, int block, int m0, int rows) {
  constexpr int T = dequantized_tiles<R>();
  for (int t0 = 0; t0 < kDequantizedCols / kLanes; t0 += T) {
    if (block * kDequantizedCols + t0 * kLanes >= p.N) break;
    dequantized_pass<A, R, T>(p, block, t0, m0, rows);
  }
}

// Every row times one block, in passes of pass_rows() rows over the block's
// weights (K * 64 bytes, which stay in L2 between passes).
template <Act A>
void dequantized_block(const DequantizedProblem& p, int block) {
  for (int m0 = 0; m0 < p.M;) {
    const int left = p.M - m0;
    const int R = pass_rows(left);
    const int rows = imin(R, left);
    switch (R) {
      case 8: dequantized_rows<A, 8>(p, block, m0, rows); break;
      case 4: dequantized_rows<A, 4>(p, block, m0, rows); break;
      case 2: dequantized_rows<A, 2>(p, block, m0, rows); break;
      default: dequantized_rows<A, 1>(p, block, m0, rows); break;
    }
    m0 += rows;
  }
}

template <Act A>
void run_dequantized_typed(const DequantizedProblem& p) {
  struct Work {
    const DequantizedProblem* p;
    int blocks, chunks;
  };
  const int blocks = (p.N + kDequantizedCols - 1) / kDequantizedCols;
  // A few chunks per thread so a descheduled thread's share is picked up by the others.
  Work work{&p, blocks, imin(blocks, parallel_threads() * 4)};
  parallel_chunks(work.chunks, [](void* ctx, int chunk) {
    const Work& w = *static_cast<const Work*>(ctx);
    const int lo = int(int64_t(w.blocks) * chunk / w.chunks), hi = int(int64_t(w.blocks) * (chunk + 1) / w.chunks);
    for (int b = lo; b < hi; b++) dequantized_block<A>(*w.p, b);
  }, &work);
}

inline void run_dequantized_any(const DequantizedProblem& p, Act act) {
  if (act == Act::F16) {
    run_dequantized_typed<Act::F16>(p);
  } else {
    run_dequantized_typed<Act::BF16>(p);
  }
}
