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

namespace mlx::core {
class array;
}

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
  // Optional: the group parameters widened ahead by widen_params (null: each call widens its own).
  const float* params = nullptr;
};

// The group parameters as the kernels read them, widened once ahead of the calls: per block of
// fastnum::kColParamColumns weight rows, the scales as [group][column] floats, then the centred
// biases b + 2^(bits-1) s (one fused multiply-add) alike; columns past N repeat row N - 1. The
// floats each call would otherwise widen itself, so every output keeps its bytes. Writes
// fastnum::cols_params_floats(N, K, group_size) floats. Needs F16C (defined in mlxr_fastq8_avx2.cpp).
void widen_params(const void* scales, const void* biases, Dt param, int N, int K, int bits, int group_size, float* dst);

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

// Widened parameters kept per weight (mlxr_fastnum.cpp): at one row of activations, widening a
// block's parameters in the call (two float16 conversions and a fused multiply-add per group and
// row, scalar) took about a third of a 4-bit call's time, more than its integer products; kept
// once per weight they cost 8 bytes per group and row beside the stored 4 (docs/architecture.md).
// On unless MLXR_FASTQ8_WIDE_PARAMS=0 or set_widened_params(false) (for A/B runs and tests; the
// outputs are the same bytes either way).
void set_widened_params(bool on);
bool widened_params_on();
// The widened parameters of the weight whose row-contiguous group parameters are these arrays
// (N = scales.shape(0)), made on the first call for it and kept while both arrays' buffers live;
// null when widened parameters are off. Thread-safe.
const float* widened_params(const mlx::core::array& scales, const mlx::core::array& biases, int K, int bits, int group_size);
// Bytes of widened parameters held now.
size_t widened_params_bytes();
// Frees the widened parameters of weights whose buffers are gone (a closed model's); returns the
// bytes freed. Each widening of a new weight does the same first.
size_t release_widened_params();

// How many blocks on a block of the kernels requests the weights of while it computes
// (mlxr_fastnum_x86.h, block_ahead): the pool's thread count unless MLXR_FASTQ8_AHEAD_BLOCKS=n
// (0: none) or set_ahead_blocks says otherwise (A/B runs; the outputs are the same bytes at any
// setting). set_ahead_blocks clamps to 0 .. kMaxAheadBlocks and returns the setting before.
constexpr int kMaxAheadBlocks = 64;
int ahead_blocks();
int set_ahead_blocks(int blocks);

}  // namespace mlxr::fastq8
