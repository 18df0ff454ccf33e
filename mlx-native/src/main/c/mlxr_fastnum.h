// The fast numerics tier's quantized matmul (--numerics fast), shared by
// mlxr_fastnum.cpp (the MLX primitive, the activations' preparation, the
// choice of instruction set; baseline x86-64) and the kernel files
// mlxr_fastnum_avx2.cpp (AVX2 + FMA) and mlxr_fastnum_avx512.cpp (AVX-512),
// each compiled for its instruction set by a file-wide pragma and both
// including mlxr_fastnum_kernels.h. As in mlxr_qmm.h: no standard-library
// templates in the kernel files (a weak symbol instantiated under an ISA
// pragma may be the one the linker keeps for the whole shim).
//
// What it computes, for an affine weight w[n, k] = s[n, g] q[n, k] + b[n, g]
// (g = k / group_size) and c = 2^(bits-1):
//     out[m, n] = sum_g ( s[n, g] * D[m, n, g] + (b[n, g] + c s[n, g]) * X[m, g] ),
//     D[m, n, g] = sum_{k in g} x[m, k] (q[n, k] - c),   X[m, g] = sum_{k in g} x[m, k],
// in float32 with fused multiply-adds, D by vector lanes over K (each lane a
// strided partial sum), X once per row of activations for all N outputs. Not
// MLX's bytes (MLX rounds s q + b, then x w, then the running sum, in order
// over K); its oracle is a float64 rendering of the model (docs/architecture.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include "mlxr_isa.h"

namespace mlx::core {
struct Dtype;
}

namespace mlxr::fastnum {

// Dtypes of the group parameters and of the output.
enum class Dt { F32 = 0, F16 = 1, BF16 = 2 };

// One call's operands. The activations arrive prepared by mlxr_fastnum.cpp:
//   xp[m * k_stride + k']: row m's K activations as floats, for 4-bit weights
//     permuted within each block of 2 * lanes elements so that a kernel's
//     decode of `lanes` packed bytes (low nibbles, then high nibbles) meets
//     its activations in order: position p < lanes holds element 2p, position
//     lanes + p element 2p + 1 (8-bit weights: element order);
//     With word_lanes (AVX-512, fewer than kWordLaneRows rows; see tile_words
//     in mlxr_fastnum_kernels.h) instead, for PW = 32 / bits values per
//     packed word: per block of PW * lanes elements, position v * lanes + i
//     holds element PW i + v (lane i reads packed word i of the block, whose
//     value v that is), K padded with zeros to whole blocks (k_stride);
//   xg[m * g_stride + g]: X[m, g], the g_stride - G lanes past the groups zero.
struct Problem {
  const float* xp;
  const float* xg;
  size_t k_stride, g_stride;  // in floats
  bool word_lanes;
  const uint32_t* w;          // [N, K * bits / 32], row-contiguous
  const void* scales;         // [N, G] of param, row-contiguous
  const void* biases;         // [N, G] of param, row-contiguous
  Dt param;
  void* out;                  // [M, N] of out_dt
  Dt out_dt;
  int M, N, K, bits, group_size;
  // The many-rows kernel (mlxr_fastnum_cols.h) instead: xp holds the activations as given, row m
  // at xp + m * k_stride (k_stride = K), and xg is not read.
  bool cols = false;
};

// Calls of at least this many rows take the many-rows kernel (Problem::cols) on isa's kernels: a
// positive MLXR_FASTNUM_COLS_ROWS, read once, else the instruction set's default (defined in
// mlxr_fastnum.cpp). For measuring the crossover in one build; an output's arithmetic depends on
// which kernel ran.
int cols_rows_min(Isa isa);

// Float lanes of each instruction set's vectors (the activations' permutation
// block is twice this).
constexpr int kLanesAvx2 = 8;
constexpr int kLanesAvx512 = 16;

// Calls with fewer rows than this take the word-lane layout on AVX-512:
// the AVX-512 kernels' rows below which a pass does not pre-scale the weights.
constexpr int kWordLaneRows = 4;

// The widened group parameters of a weight (fastq8::widen_params) come in blocks of this many
// weight rows, a multiple of the 8-bit-activation kernels' column blocks (32 on AVX-512, 8 on AVX2).
constexpr int kColParamColumns = 32;

// Floats of a weight's widened parameters: N rows rounded up to blocks, K / group_size groups.
inline size_t cols_params_floats(int N, int K, int group_size) {
  return size_t((N + kColParamColumns - 1) / kColParamColumns) * 2 * size_t(K / group_size) * kColParamColumns;
}

// The most problems one run takes.
constexpr int kMaxProblems = 4;

// The activation rows one pass of the kernels serves (their tile): a positive
// MLXR_KERNEL_PASS_ROWS (mlxr::qmm::pass_rows_env; each kernel file caps it at its own most,
// 16 on AVX-512 and 8 on AVX2), else 0 for the kernel file's default, the
// most rows of a pass over two weight rows (8 on AVX-512, 4 on AVX2). A call
// of more rows runs several passes, each decoding every weight again; the
// longer passes over one weight row measured slower (their activations come
// from L1/L2 once per FMA: docs/benchmarks.md). For measuring the tile size
// in one build; an output's arithmetic does not depend on it. Defined in
// mlxr_fastnum.cpp.
int pass_rows_cap();

// Every row, all N columns of each of the n problems (one width, group size,
// K and M; n <= kMaxProblems; all of them Problem::cols, or none), spread over
// mlxr::qmm's worker pool in one pass; false when (bits, group_size) is not
// covered (4 or 8 bits, group 32, 64 or 128) or the problems differ in those.
bool run_avx2(const Problem* ps, int n);
bool run_avx512(const Problem* ps, int n);

// Defined in mlxr_fastnum.cpp (baseline x86-64) for the tier's fused decoder
// block (mlxr_fast_block.cpp):
// The exact kernels' instruction set when the CPU has FMA, else Isa::None.
Isa default_isa();
// Whether the kernels compute (bits, group_size).
bool covered(int bits, int group_size);
// The Dt of a float32 / float16 / bfloat16 MLX dtype (declared on a forward declaration, so
// the kernel files stay free of MLX's headers).
Dt dt_of(mlx::core::Dtype d);
// One affine weight w [N, K * bits / 32] with row-contiguous group parameters,
// and where its product goes: out [M, N] of out_dt.
struct Weight {
  const uint32_t* w;
  const void* scales;
  const void* biases;
  Dt param;
  int N, bits, group_size;
  void* out;
  Dt out_dt;
  // For Activations::Q8: the group parameters widened ahead (fastq8::widened_params), or null for
  // the kernels to widen them in each call.
  const float* q8_params = nullptr;
};

// How a matmul treats its activations: as float32 (--numerics fast), or rounded to 8-bit integers
// per block of 32 (--numerics fast-q8, mlxr_fastq8.h). Numbered as the Java side's
// FastKernels.Activations.
enum class Activations : int { F32 = 0, Q8 = 1 };

// out = x[M, K] (row-contiguous floats) times each of the n weights, by isa's
// kernels over the worker pool, in one pass when they share a width and group
// size (the activations prepared once); throws std::logic_error when a case is
// not covered. Activations::Q8 takes the 8-bit-activation kernels (mlxr_fastq8.h): AVX-512
// with VNNI where isa is AVX-512 and the CPU has VNNI, else AVX2 (the same bytes either way).
void matmul(const float* x, int M, int K, const Weight* weights, int n, Isa isa, Activations acts = Activations::F32);

}  // namespace mlxr::fastnum
