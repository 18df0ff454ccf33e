// Shared by the two fused decoder blocks: the fast tier's (mlxr_fast_block.cpp)
// and the exact one (mlxr_exact_block.cpp). Both are one MLX primitive for a
// whole pre-norm transformer block of the llama / qwen2 / qwen3 shape,
//
//     r = attention(rms_norm(x, w_in)),  h = x + o_proj(r)
//     out = h + down_proj(silu(gate_proj(n)) * up_proj(n)),  n = rms_norm(h, w_post)
//
// with seven affine-quantized projections, a rope from a base and scale (default,
// linear; the exact block also takes llama3's precomputed frequencies), causal
// attention over a full-precision cache's first `offset` positions and the
// block's own new keys and values, and qwen3's q/k norms or qwen2's q/k/v
// biases where present. What they share is here: the argument layout of the C
// entry points, the primitive with its three outputs (h, and the cache's key
// and value buffers with the new rows written at offset .. offset + L - 1, as
// mlx-lm's KVCache.update_and_fetch writes them after the caller grew them,
// DenseKvCache.reserve), and the rule for writing the cache in place.
//
// Why one primitive: a block of mlx-lm's graph is ~22-28 MLX primitives, each a
// node the calling thread builds, schedules and allocates for and a task on
// MLX's stream thread; at SmolLM2's size that overhead rivals the arithmetic.
#pragma once

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mlx/allocator.h"
#include "mlx/backend/cpu/encoder.h"
#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "mlxr_isa.h"
#include "mlxr_cpu_task.h"
#include "mlxr_row_major.h"

namespace mlxr::block {

namespace mx = mlx::core;

// The projections, in the order of the entry points' weight arguments.
enum Proj { kQ, kK, kV, kO, kGate, kUp, kDown, kProjections };

// Input positions: x, the two cache buffers, the two norms' weights, then
// (weight, scales, biases) per projection, then the optional inputs (q_norm and k_norm's
// weights, the q, k, v biases, the rope's frequencies, in that order, each where present).
constexpr int kX = 0, kKeys = 1, kValues = 2, kInNorm = 3, kPostNorm = 4, kFirstProj = 5;
constexpr int kQkNorm = kFirstProj + 3 * kProjections;  // q_norm, k_norm when present

struct BlockSpec {
  int heads, kv_heads, head_dim;
  float norm_eps, attn_scale;
  int rope_dims;
  bool rope_traditional;
  float rope_base, rope_scale;
  bool qk_norm, qkv_bias;
  bool rope_freqs;  // the rope's inverse frequencies precomputed (llama3; base unused), an input
  bool causal;      // the mask: "causal", or none (one new row, or a caller's choice)
  bool layouts;     // the projections' dequantized layouts (mlxr_dequantized.h) follow, exact block only
  int bits[kProjections], group_size[kProjections];
  Isa isa;
  // The fast block's activations for its projections: 0 float32, 1 rounded to 8 bits per block
  // of 32 (mlxr_fastq8.h, --numerics fast-q8). Fast block only.
  int acts = 0;
  // Rows of a batch cache (mlx-lm's BatchKVCache): row b's positions are left_padding[b] ..
  // offset + L - 1, its rope positions start at offset - left_padding[b], and attention reads no
  // position before left_padding[b]. Empty for a single-row cache (no padding). Fast block only.
  std::vector<int> left_padding;
  // Rows of a batch cache for the exact block: its last two inputs are the rope's per-row offsets
  // (int32 [B], mlx-lm's BatchKVCache offset) and the attention's boolean mask array (make_mask),
  // the very arrays the graph's rope and sdpa take. False: the scalar offset and `causal`.
  bool batch_rows = false;
  // Low-rank deltas (the exact block only): mlx-lm's LoRALinear over a projection's rows,
  // y + (scale * ((x @ lora_a) @ lora_b)).astype(x.dtype). lora_pairs (lora_a, lora_b) float32
  // pairs are the last inputs; lora_rows [kProjections * B] names, per projection and row, the pair
  // that row adds (-1: none); lora_scales one per pair. Empty: no deltas.
  int lora_pairs = 0;
  std::vector<int> lora_rows;
  std::vector<float> lora_scales;
  // Rows of a batch cache whose buffers hold more rows than the batch (BatchKvCache's row slots):
  // row b's keys and values are buffer row row_slots[b], and every row's position p lies at buffer
  // position base + p. Empty: row b is buffer row b and base is 0. Both tiers.
  std::vector<int> row_slots;
  int base = 0;

  // The buffer row of the batch's row b.
  int slot(int b) const {
    return row_slots.empty() ? b : row_slots[b];
  }

  int qkv_bias_input() const {
    return kQkNorm + (qk_norm ? 2 : 0);
  }

  int rope_freqs_input() const {
    return qkv_bias_input() + (qkv_bias ? 3 : 0);
  }

  int layouts_input() const {
    return rope_freqs_input() + (rope_freqs ? 1 : 0);
  }

  // The batch rows' rope offsets, then their mask (batch_rows only).
  int row_offsets_input() const {
    return kInNorm + weight_count();
  }

  // The first low-rank pair's lora_a (then its lora_b, then the next pair's), after the rows' inputs.
  int lora_input() const {
    return row_offsets_input() + (batch_rows ? 2 : 0);
  }

  int weight_count() const {
    return 2 + 3 * kProjections + (qk_norm ? 2 : 0) + (qkv_bias ? 3 : 0) + (rope_freqs ? 1 : 0) +
           (layouts ? kProjections : 0);
  }
};

// The entry points' scalar arguments. ints: heads, kv_heads, head_dim,
// rope_dims, rope_traditional, qk_norm, qkv_bias, offset, causal, rope_freqs,
// then bits and group size per projection (14), then layouts, then acts. floats:
// norm_eps, attn_scale, rope_base, rope_scale. The isa is the caller's; errors
// name `who`.
inline BlockSpec parse_spec(const int* ints, const float* floats, int n_weights, const char* who) {
  BlockSpec s{};
  s.heads = ints[0];
  s.kv_heads = ints[1];
  s.head_dim = ints[2];
  s.rope_dims = ints[3];
  s.rope_traditional = ints[4] != 0;
  s.qk_norm = ints[5] != 0;
  s.qkv_bias = ints[6] != 0;
  s.causal = ints[8] != 0;
  s.rope_freqs = ints[9] != 0;
  for (int p = 0; p < kProjections; p++) {
    s.bits[p] = ints[10 + 2 * p];
    s.group_size[p] = ints[11 + 2 * p];
  }
  s.layouts = ints[10 + 2 * kProjections] != 0;
  s.acts = ints[11 + 2 * kProjections];
  s.norm_eps = floats[0];
  s.attn_scale = floats[1];
  s.rope_base = floats[2];
  s.rope_scale = floats[3];
  if (s.heads <= 0 || s.kv_heads <= 0 || s.heads % s.kv_heads != 0 || s.head_dim % 8 != 0 || s.rope_dims <= 0 ||
      s.rope_dims > s.head_dim || s.rope_dims % 2 != 0 || ints[7] < 0 || s.acts < 0 || s.acts > 1)
    throw std::invalid_argument(std::string(who) + ": unsupported head layout");
  if (n_weights != s.weight_count())
    throw std::invalid_argument(std::string(who) + ": " + std::to_string(n_weights) + " weights, expected " +
                                std::to_string(s.weight_count()));
  return s;
}

inline int offset_of(const int* ints) {
  return ints[7];
}

// MLX's is_donatable() for an input of a primitive with `outputs` outputs: nothing holds the
// input but those outputs' input lists, and nothing but the input holds its buffer
// (mlxr_block.cpp says why is_donatable() itself cannot tell).
bool donatable_input(const mx::array& in, size_t outputs);

// a's elements (2 or 4 bytes each) in row-major order into dst.
void copy_into(const mx::array& a, void* dst);

// A block's computation: on MLX's stream thread, from the inputs (positions above) into the
// three outputs, the cache outputs already holding the cache's contents (their input's buffer,
// or a copy of it).
using BlockRun = void (*)(const BlockSpec& spec, int offset, const std::vector<mx::array>& in,
                          std::vector<mx::array>& out);

// The block as one primitive, computed by Run and named `name` (a string literal) in MLX's graph.
template <BlockRun Run>
class DecoderBlockPrimitive final : public mx::Primitive {
 public:
  DecoderBlockPrimitive(mx::Stream stream, BlockSpec spec, int offset, const char* name)
      : mx::Primitive(stream), spec_(spec), offset_(offset), name_(name) {}

  void eval_cpu(const std::vector<mx::array>& inputs, std::vector<mx::array>& outputs) override {
    auto& encoder = mx::cpu::get_command_encoder(stream());
    outputs[0].set_data(mx::allocator::malloc(outputs[0].nbytes()));
    // The cache outputs take the input buffers when nothing else holds them (as MLX's
    // SliceUpdate does), so a step writes its new rows in place; otherwise (a snapshot or a
    // view still reads the old buffers) they start as copies, made by the task.
    bool copy[3] = {false, false, false};
    for (int i : {kKeys, kValues}) {
      const mx::array& in = inputs[i];
      if (donatable_input(in, outputs.size()) && in.flags().row_contiguous && in.data_size() == in.size()) {
        outputs[i].copy_shared_buffer(in);
      } else {
        outputs[i].set_data(mx::allocator::malloc(outputs[i].nbytes()));
        copy[i] = true;
      }
    }
    // The activations and the cache buffers are captured as MLX's own primitives capture their
    // inputs, by a weak copy: a new descriptor that holds neither the buffer (MLX's eval keeps
    // it alive until the task has run) nor the graph behind the array, nor the use count that
    // decides donation (the cache's next step). The ~25 weights, the model's leaves, are
    // captured by reference: a copy of the array allocates nothing, where each weak copy made
    // two allocations on the calling thread that the stream thread freed, ~1,500 a SmolLM2
    // step (the calling thread's CPU per fast-tier token fell from 2.7 to 1.8-2.2 ms).
    std::vector<mx::array> ins, outs;
    ins.reserve(inputs.size());
    outs.reserve(outputs.size());
    for (size_t i = 0; i < inputs.size(); i++) {
      encoder.set_input_array(inputs[i]);
      ins.push_back(i < size_t(kInNorm) ? mx::array::unsafe_weak_copy(inputs[i]) : inputs[i]);
    }
    for (auto& o : outputs) {
      encoder.set_output_array(o);
      outs.push_back(mx::array::unsafe_weak_copy(o));
    }
    // By value: MLX may drop the primitive once its task is queued (see mlxr_cpu_task.h).
    encoder.dispatch([spec = spec_, offset = offset_, copy_keys = copy[kKeys], copy_values = copy[kValues],
                      ins = std::move(ins), outs = std::move(outs)]() mutable {
      if (copy_keys) copy_into(ins[kKeys], outs[1].data<void>());
      if (copy_values) copy_into(ins[kValues], outs[2].data<void>());
      Run(spec, offset, ins, outs);
    });
  }

  void eval_gpu(const std::vector<mx::array>&, std::vector<mx::array>&) override {
    throw std::runtime_error(std::string("[") + name_ + "] has no GPU implementation");
  }

  const char* name() const override {
    return name_;
  }

  // Whether `a` is an output of this primitive (tests check which calls took it).
  static bool computes(const mx::array& a) {
    return a.has_primitive() && dynamic_cast<const DecoderBlockPrimitive*>(&a.primitive()) != nullptr;
  }

 private:
  BlockSpec spec_;
  int offset_;
  const char* name_;
};

// MLX's promotion of x's, the input norm's and the group parameters' dtypes: the dtype of the
// block's activations, output and cache (weights as the C ABI passes them).
inline mx::Dtype activations_dtype(const mx::array& x, void* const* weights) {
  const mx::Dtype d = mx::promote_types(x.dtype(), static_cast<mx::array*>(weights[kInNorm - kInNorm])->dtype());
  return mx::promote_types(d, static_cast<mx::array*>(weights[kFirstProj + 1 - kInNorm])->dtype());
}

// The block's three outputs over x [B, L, D] and the cache buffers [B, kv_heads, capacity,
// head_dim] (capacity >= offset + L, of the activations' dtype `act`), after the checks every
// entry point makes; weights as the C ABI passes them; errors name `who`.
template <BlockRun Run>
std::vector<mx::array> block_outputs(const BlockSpec& s, int offset, const mx::array& x, void* keys, void* values,
                                     void* const* weights, int n_weights, mx::Stream stream, const char* name,
                                     const char* who) {
  const std::string w(who);
  if (x.ndim() != 3 || !is_float(x.dtype())) throw std::invalid_argument(w + ": x must be a float [B, L, D] array");
  if (keys == nullptr || values == nullptr) throw std::invalid_argument(w + ": no cache buffers");
  const auto& ka = *static_cast<mx::array*>(keys);
  const auto& va = *static_cast<mx::array*>(values);
  const bool slotted = !s.row_slots.empty();
  if (ka.ndim() != 4 || (!slotted && ka.shape(0) != x.shape(0)) || ka.shape(1) != s.kv_heads ||
      ka.shape(3) != s.head_dim || s.base < 0 || ka.shape(2) < s.base + offset + x.shape(1) ||
      va.shape() != ka.shape() || va.dtype() != ka.dtype())
    throw std::invalid_argument(w + ": cache buffers do not match the block (or hold fewer than base + offset + L)");
  if (slotted) {
    if (int(s.row_slots.size()) != x.shape(0))
      throw std::invalid_argument(w + ": " + std::to_string(s.row_slots.size()) + " row slots for " +
                                  std::to_string(x.shape(0)) + " rows");
    std::vector<bool> taken(ka.shape(0), false);
    for (int slot : s.row_slots) {
      if (slot < 0 || slot >= ka.shape(0) || taken[slot])
        throw std::invalid_argument(w + ": row slot " + std::to_string(slot) + " outside the buffers' " +
                                    std::to_string(ka.shape(0)) + " rows or given twice");
      taken[slot] = true;
    }
  }
  std::vector<mx::array> inputs{x, ka, va};
  for (int i = 0; i < n_weights; i++) inputs.push_back(*static_cast<mx::array*>(weights[i]));
  if (!s.left_padding.empty()) {
    if (int(s.left_padding.size()) != x.shape(0))
      throw std::invalid_argument(w + ": " + std::to_string(s.left_padding.size()) + " left paddings for " +
                                  std::to_string(x.shape(0)) + " rows");
    // A row's first position lies among those stored or those this call writes (a batch's first
    // prompt chunk pads its shorter rows past the offset).
    for (int pad : s.left_padding)
      if (pad < 0 || pad >= offset + x.shape(1))
        throw std::invalid_argument(w + ": a left padding outside 0 .. offset + L - 1");
  }
  const mx::Dtype act = activations_dtype(x, weights);
  if (ka.dtype() != act) throw std::invalid_argument(w + ": cache dtype differs from the activations'");
  return mx::array::make_arrays({x.shape(), ka.shape(), va.shape()}, {act, act, act},
                                std::make_shared<DecoderBlockPrimitive<Run>>(stream, s, offset, name), inputs);
}

}  // namespace mlxr::block
