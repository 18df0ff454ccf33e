// The fast tier's 8-bit-activation variant (--numerics fast-q8): the activations of every affine
// 4- or 8-bit quantized matmul are rounded to 8-bit integers per block of 32 (llama.cpp's q8
// blocks), and each block's product with the weights' integers is summed exactly in 32-bit
// integers (AVX-512 VNNI's vpdpbusd; on AVX2, vpmaddubsw and vpmaddwd); only the scaling and the
// sum over blocks are in float32. Shared by mlxr_fastnum.cpp (which calls it for weights that
// ask for it) and the kernel files mlxr_fastq8_avx2.cpp and mlxr_fastq8_avx512.cpp, both including
// mlxr_fastq8_kernels.h.
//
// What it computes, for an affine weight w[n, k] = s[n, g] q[n, k] + b[n, g] (g = k / group_size),
// c = 2^(bits-1), and the activations of row m in blocks j of 32 positions:
//     amax[m, j] = max |x[m, k]| over the block
//     d[m, j]    = amax / 127,   inv = 127 / amax   (float32 divisions; 0 and 0 when amax is 0)
//     xq[m, k]   = rint(x[m, k] * inv)   (float32 product, rounded to nearest even, |xq| <= 127)
//     I[m, n, j] = sum_{k in j} (q[n, k] - c) xq[m, k]          (exact, in integers)
//     X[m, g]    = sum_{k in g} x[m, k]                          (float32, the unrounded x)
//     acc        = 0; for each block j in order: acc = fma(float(I), s[n, g(j)] * d[m, j], acc)
//     out[m, n]  = then for each group g in order: acc = fma(b[n, g] + c s[n, g], X[m, g], acc)
// with b + c s one correctly rounded fused multiply-add. The integers make every instruction set
// compute the same bytes (the float steps are the same per output whatever the lane width).
// Not MLX's bytes and not the fast tier's: its oracle is a float64 rendering of the formula above
// (FastQ8OracleTest); its error against the unrounded model is llama.cpp's q8 activations'.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "mlxr_fastnum.h"

namespace mlxr::fastq8 {

using fastnum::Dt;

// Positions per block of activations sharing one scale.
constexpr int kBlock = 32;

// A call's activations, quantized (quantize below) into buffers the calling thread reuses.
struct Acts {
  // xq[m * K + k']: row m's bytes; for 4-bit weights permuted within each eight positions as
  // (0, 2, 4, 6, 1, 3, 5, 7), the order in which a packed word's nibbles meet them (its low
  // nibbles are masked out as four bytes, then its high ones); for 8-bit weights in order.
  std::vector<int8_t> xq;
  std::vector<float> d;      // [M, K / kBlock] the blocks' scales
  std::vector<int32_t> sq;   // [M, K / kBlock] the sums of the blocks' xq (for the centring)
  std::vector<float> xg;     // [M, K / group_size] X
};

struct Problem {
  const int8_t* xq;
  const float* d;
  const int32_t* sq;
  const float* xg;
  const uint32_t* w;  // [N, K * bits / 32], row-contiguous
  const void* scales;  // [N, G] of param
  const void* biases;  // [N, G] of param
  Dt param;
  void* out;  // [M, N] of out_dt
  Dt out_dt;
  int M, N, K, bits, group_size;
};

// Whether the kernels take (bits, group_size) at width K: 4 or 8 bits, groups of 32, 64 or 128.
bool covered(int bits, int group_size);

// x[M, K] (row-contiguous floats) into out, for weights of `bits`, by AVX2 (every CPU that runs
// the fast tier has it). K must be a multiple of kBlock and group_size of kBlock.
void quantize_avx2(const float* x, int M, int K, int bits, int group_size, Acts& out);

// Every row and column of the n problems (one bits, group size, K and M; n <= fastnum::kMaxProblems)
// over mlxr::qmm's pool; false when not covered. run_avx512 needs AVX-512 F/BW/VL with VNNI.
bool run_avx2(const Problem* ps, int n);
bool run_avx512(const Problem* ps, int n);

// Whether this CPU has AVX-512 VNNI as well as the fast tier's AVX-512 set.
bool cpu_has_avx512_vnni();

}  // namespace mlxr::fastq8
