// Shared by the quantized-matmul translation units: mlxr_qmm.cpp (the MLX
// primitive, the worker pool, the choice of instruction set) and the kernel
// files mlxr_qmm_avx2.cpp / mlxr_qmm_avx512.cpp, each compiled for its
// instruction set by a file-wide `#pragma GCC target`.
//
// No standard-library templates here or in the kernel files: a template
// instantiated under an ISA pragma (std::vector<float>::resize, say) is
// emitted as a weak symbol, and the linker may pick that copy for the whole
// shim, running AVX-512 code on a CPU without it. Everything the kernel files
// need from the rest of the shim (threads, scratch memory) is a plain function
// declared below and defined in mlxr_qmm.cpp, compiled for baseline x86-64.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mlxr::qmm {

enum class Act { F32, F16, BF16 };

enum class Param { F32, F16, BF16 };

// One call's operands, every array row-contiguous, the activations widened to
// float. The group parameters stay in their stored dtype (the model's, often
// float16) and are widened per block inside the kernel: MLX's graph would
// astype them to the activations' dtype on every call, a full pass over them,
// and the widening is exact either way.
struct Problem {
  const float* x;       // [M, K]
  const uint32_t* w;    // [N, K * bits / 32]
  const void* scales;   // [N, K / group_size] of param
  const void* biases;   // [N, K / group_size] of param
  Param param;
  void* out;            // [M, N] of the activation dtype
  int M, N, K;
};

// Runs body(ctx, 0 .. chunks-1) across the worker pool (the caller included),
// returning when all have run; chunks < 65536. body must not throw. Also used
// by the native attention (mlxr_fast_sdpa.cpp) between a step's matmuls.
void parallel_chunks(int chunks, void (*body)(void* ctx, int chunk), void* ctx);

// Threads parallel_chunks spreads over.
int parallel_threads();

// MLXR_KERNEL_PASS_ROWS, read once: a positive number sets the activation
// rows of the fast tier's passes (mlxr_fastnum.h, pass_rows_cap), 0 when
// unset or not positive (the kernel file's default). For measuring the pass
// size in one build.
int pass_rows_env();

// A 64-byte-aligned buffer of at least `floats` floats owned by the calling
// thread, valid until that thread's next call.
float* thread_scratch(size_t floats);

// The kernels for one instruction set: false when (bits, group_size) is not
// covered. The caller checks that the CPU has the instruction set.
bool run_avx2(const Problem& p, Act act, int bits, int group_size);
bool run_avx512(const Problem& p, Act act, int bits, int group_size);

}  // namespace mlxr::qmm
