// Scalar helpers of the fast tiers' kernel files (mlxr_fastnum_avx2.cpp, mlxr_fastnum_avx512.cpp,
// mlxr_fastq8_avx2.cpp, mlxr_fastq8_avx512.cpp), included inside each file's anonymous namespace
// after its target pragma so each gets its own copy.

// One group parameter widened exactly to float.
MLXR_INLINE float param_at(const void* base, Dt dt, size_t i) {
  switch (dt) {
    case Dt::F32: return static_cast<const float*>(base)[i];
    case Dt::F16: return _cvtsh_ss(static_cast<const uint16_t*>(base)[i]);
    default: {
      uint32_t u = uint32_t(static_cast<const uint16_t*>(base)[i]) << 16;
      float f;
      __builtin_memcpy(&f, &u, sizeof f);
      return f;
    }
  }
}

// out[i] = v rounded to nearest even in dt (a NaN stays a quiet NaN).
MLXR_INLINE void store_out(void* out, Dt dt, size_t i, float v) {
  switch (dt) {
    case Dt::F32: static_cast<float*>(out)[i] = v; break;
    case Dt::F16: static_cast<uint16_t*>(out)[i] = _cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT); break;
    default: {
      uint32_t u;
      __builtin_memcpy(&u, &v, sizeof u);
      uint16_t h = v != v ? uint16_t(0x7fc0) : uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
      static_cast<uint16_t*>(out)[i] = h;
      break;
    }
  }
}

#include "mlxr_spread_prefetch.h"

// What the block of `cols` weight rows that a thread of the pool runs after this one will read,
// requested while this one computes. fast-q8's kernels walk a block's rows as that many short
// streams, which the hardware's prefetchers do not follow, so a block whose words nobody
// requested starts by waiting on memory; the pool hands out blocks one at a time in order, so
// with t threads a thread's next block is about t on (fastq8::ahead_blocks()). The fast tier's
// many-rows kernel requests each next segment of its own block instead; the block ahead (into L1,
// its parameters too) gained its prompt chunks nothing (docs/benchmarks.md).
// Into L2 (T1), not L1: with T0 the block ahead's requests held the L1's few miss buffers and
// the prefetch instructions themselves stalled (18% of the kernel's samples); T1 and the widened
// group parameters ahead as well took a one-row forward from 0.84-0.96x to 0.67-0.69x the time
// with none (docs/benchmarks.md). The block's own first words are requested into L1 (T0) when it
// starts, from L2 by then.
using BlockAhead = SpreadPrefetch<2>;

// The weight words of rows n0 + ahead * cols .. (none past N), one contiguous run of MLX's
// row-major words, requested over `steps` steps.
MLXR_INLINE BlockAhead block_ahead(const uint32_t* w, int N, int K, int bits, int n0, int cols, int ahead, int steps) {
  const int first = n0 + ahead * cols;
  if (ahead < 1 || first >= N) return BlockAhead{};
  const size_t row_bytes = size_t(K) * size_t(bits) / 8;
  const int rows = N - first < cols ? N - first : cols;
  return BlockAhead(reinterpret_cast<const char*>(w) + size_t(first) * row_bytes, size_t(rows) * row_bytes, steps);
}
