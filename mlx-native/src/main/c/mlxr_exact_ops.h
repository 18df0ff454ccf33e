// The native exact ops' computations over arrays that are already evaluated,
// for the exact fused block (mlxr_exact_block.cpp): each is exactly what its
// primitive's task runs (NativeRmsNorm, NativeRope over a projection's heads,
// NativeSdpa with merged heads, NativeSwiglu, NativeQuantizedMatmul,
// NativeDequantizedMatmul), so the bytes are the op's, which its exactness
// test holds to MLX's. out is allocated, of the shape and dtype the op's entry
// point would give it.
#pragma once

#include <string>

#include "mlx/array.h"
#include "mlxr_isa.h"

namespace mlxr::fast {

void rms_norm_into(const mlx::core::array& x, const mlx::core::array& w, float eps, mlx::core::array& out);

// rope(transpose(reshape(x, [B, L, heads, D]), [0, 2, 1, 3]), dims, traditional, base, scale,
// offset, freqs) of a [B, L, heads * D] x into out [B, heads, L, D]; freqs null for base=base,
// else base=None (then base is unused).
void rope_heads_into(const mlx::core::array& x, int heads, int dims, bool traditional, float base, float scale,
                     int offset, const mlx::core::array* freqs, mlx::core::array& out);

// The same with one offset per batch row: offsets int32 [B] (or one), the array the graph's
// rope of a batch cache's rows takes (mlx-lm's BatchKVCache offset).
void rope_heads_into(const mlx::core::array& x, int heads, int dims, bool traditional, float base, float scale,
                     const mlx::core::array& offsets, const mlx::core::array* freqs, mlx::core::array& out);

// scaled_dot_product_attention(q, k, v, scale, "causal" or no mask) with the heads merged:
// out [B, L, Hq * Dv].
void sdpa_merged_into(const mlx::core::array& q, const mlx::core::array& k, const mlx::core::array& v, float scale,
                      bool causal, mlx::core::array& out);

// The same with a boolean mask array broadcastable to the scores [B, Hq, L, S] (a batch cache's
// make_mask): what NativeSdpa runs for the graph's sdpa(q, k, v, scale, mask=array). With
// k_rows, batch row b's keys and values are k's and v's row k_rows[b] (k and v then views of
// B rows' shape over buffers of more), and their positions start at k_base.
void sdpa_merged_into(const mlx::core::array& q, const mlx::core::array& k, const mlx::core::array& v, float scale,
                      const mlx::core::array& mask, mlx::core::array& out, const int* k_rows = nullptr,
                      int k_base = 0);

// Whether NativeSdpa takes `mask` as a boolean mask for scores of shape `scores` (else the
// graph's sdpa runs MLX's op).
bool sdpa_mask_covered(const mlx::core::array& mask, const mlx::core::Shape& scores);

// swiglu(gate, x) of operands of one shape and one dtype (float32, float16, bfloat16).
void swiglu_into(const mlx::core::array& gate, const mlx::core::array& x, mlx::core::array& out);

}  // namespace mlxr::fast

namespace mlxr::qmm {

// quantized_matmul(x, w, scales, biases, transpose=True) by the exact kernels of `isa`, for a
// case they cover (shape_supported below): throws std::logic_error otherwise.
void quantized_matmul_into(const mlx::core::array& x, const mlx::core::array& w, const mlx::core::array& scales,
                           const mlx::core::array& biases, int group_size, int bits, Isa isa,
                           mlx::core::array& out);

// mx::quantized_matmul(x, w, scales, biases, transpose, group_size, bits, mode) with MLX's
// validation, promotion and errors, as the exact kernels' primitive where they cover the case
// (isa not None), else MLX's op as is (mlxr_native_quantized_matmul).
mlx::core::array native_quantized_matmul(const mlx::core::array& x, const mlx::core::array& w,
                                         const mlx::core::array& scales, const mlx::core::array* biases,
                                         bool transpose, int group_size, int bits, const std::string& mode, Isa isa);

// quantized_matmul(x, w, ...) over w's dequantized layout (mlxr_dequantized.h) [ceil(n / 32), K,
// 32] of out's dtype (float16 or bfloat16) by the kernels of `isa`: x [.., K] of that dtype
// (any view), out [.., n] row-contiguous (what NativeDequantizedMatmul runs).
void dequantized_matmul_into(const mlx::core::array& x, const mlx::core::array& layout, int n, Isa isa,
                             mlx::core::array& out);

// Whether the exact kernels cover (bits, group_size).
bool shape_supported(int bits, int group_size);

}  // namespace mlxr::qmm
