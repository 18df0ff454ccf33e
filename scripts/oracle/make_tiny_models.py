#!/usr/bin/env python3
"""Create tiny random-weight mlx-lm models for Java parity tests.

Usage:
    make_tiny_models.py --out DIR [--only NAME,...] [--force] [--no-check]

Every model is built with mlx-lm's own model classes
(mlx_lm.models.{llama,qwen2,qwen3,qwen3_moe,gpt_oss,gemma3_text,gemma4_text,phi3}.Model(ModelArgs.from_dict(config))),
re-initialised from a fixed per-model seed, cast the way `mlx_lm.convert`
casts (float params -> cell dtype), quantized (quantized cells only) through
`mlx_lm.utils.quantize_model`, and written with `mlx_lm.utils.save_model` +
`mlx_lm.utils.save_config`, i.e. exactly the layout `mlx_lm.utils.load_model`
reads back (config.json, model.safetensors, model.safetensors.index.json).

Quantized cells are quantized FROM bfloat16 (like a real HF bf16 checkpoint
converted with `mlx_lm.convert -q`): scales/biases and every non-quantized
parameter are bfloat16.

The seed of each model is derived from its name (crc32), so a model is the same
whether it is built alone (--only) or with the others. A model directory is
complete when its marker file `.complete` exists (written last); complete
models are skipped, incomplete directories are wiped and rebuilt.

A manifest.json describing all cells (not only the ones built) is (re)written
to DIR on every run.
"""

import json
import sys
import time
from pathlib import Path

import mlx.core as mx
from mlx_lm.utils import load_model

from common import build_model_dir, model_args, models_to_build, seed_for, versions, write_json, write_marker

# Bump when the recipe below, or the one in common.py, changes so that stale directories get
# rebuilt.
RECIPE_VERSION = 1

# ---------------------------------------------------------------------------
# Cell definitions
# ---------------------------------------------------------------------------
# Common sizes: 2 layers, 4 attention heads, 2 KV heads (GQA).
#   small: hidden 64,  head_dim 16, intermediate 192
#   large: hidden 128, head_dim 32, intermediate 256 (all input dims divisible
#          by 128, needed for group_size 128)


def _llama(hidden, inter, vocab, tie, rope_scaling=None, rope_theta=10000.0, eps=1e-5, max_pos=4096, bias=False):
    cfg = {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": 2,
        "intermediate_size": inter,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": hidden // 4,
        "rms_norm_eps": eps,
        "vocab_size": vocab,
        "max_position_embeddings": max_pos,
        "rope_theta": rope_theta,
        "rope_traditional": False,
        "attention_bias": bias,
        "mlp_bias": bias,
        "tie_word_embeddings": tie,
    }
    if rope_scaling is not None:
        cfg["rope_scaling"] = rope_scaling
    return cfg


def _qwen2(hidden, inter, vocab, tie, rope_theta=1000000.0, eps=1e-6, rope_scaling=None, max_pos=32768):
    # qwen2: head_dim is always hidden // heads; q/k/v always have a bias.
    cfg = {
        "model_type": "qwen2",
        "architectures": ["Qwen2ForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": 2,
        "intermediate_size": inter,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "rms_norm_eps": eps,
        "vocab_size": vocab,
        "max_position_embeddings": max_pos,
        "rope_theta": rope_theta,
        "rope_traditional": False,
        "tie_word_embeddings": tie,
    }
    if rope_scaling is not None:
        cfg["rope_scaling"] = rope_scaling
    return cfg


def _qwen3(hidden, inter, vocab, tie, head_dim, rope_theta=1000000.0, eps=1e-6, rope_scaling=None):
    cfg = {
        "model_type": "qwen3",
        "architectures": ["Qwen3ForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": 2,
        "intermediate_size": inter,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": head_dim,
        "rms_norm_eps": eps,
        "vocab_size": vocab,
        "max_position_embeddings": 40960,
        "rope_theta": rope_theta,
        "tie_word_embeddings": tie,
    }
    if rope_scaling is not None:
        cfg["rope_scaling"] = rope_scaling
    return cfg


def _gemma3(hidden, inter, vocab, tie, head_dim, layers, pattern, window, query_pre_attn_scalar, rope_scaling=None):
    # gemma3_text: every `pattern`-th layer is global; the others slide over `window` positions
    # in a RotatingKVCache. mlx-lm's Model always builds lm_head and sanitize pops it when the
    # checkpoint has none (tied): tie_word_embeddings here only tells make_tiny_models to drop it.
    cfg = {
        "model_type": "gemma3_text",
        "architectures": ["Gemma3ForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "intermediate_size": inter,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": head_dim,
        "rms_norm_eps": 1e-6,
        "vocab_size": vocab,
        "max_position_embeddings": 32768,
        "rope_theta": 1000000.0,
        "rope_local_base_freq": 10000.0,
        "query_pre_attn_scalar": query_pre_attn_scalar,
        "sliding_window": window,
        "sliding_window_pattern": pattern,
        "tie_word_embeddings": tie,
    }
    if rope_scaling is not None:
        cfg["rope_scaling"] = rope_scaling
    return cfg


def _phi3(hidden, inter, vocab, tie, partial_rotary_factor=1.0, rope_scaling=None):
    # phi3: fused qkv_proj / gate_up_proj, head_dim = hidden // heads, a rope over
    # head_dim * partial_rotary_factor dimensions.
    cfg = {
        "model_type": "phi3",
        "architectures": ["Phi3ForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": 2,
        "intermediate_size": inter,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "rms_norm_eps": 1e-5,
        "vocab_size": vocab,
        "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "rope_theta": 10000.0,
        "partial_rotary_factor": partial_rotary_factor,
        "tie_word_embeddings": tie,
    }
    if rope_scaling is not None:
        cfg["rope_scaling"] = rope_scaling
    return cfg


def _qwen3_moe(hidden, inter, moe_inter, vocab, tie, experts, top_k, norm_topk_prob=True, layers=2,
               sparse_step=1, mlp_only=()):
    # qwen3_moe: qwen3's attention; every decoder_sparse_step-th layer not in mlp_only_layers routes
    # each token to num_experts_per_tok of num_experts SwitchGLU experts, the others a dense MLP.
    return {
        "model_type": "qwen3_moe",
        "architectures": ["Qwen3MoeForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "intermediate_size": inter,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": hidden // 4,
        "num_experts": experts,
        "num_experts_per_tok": top_k,
        "decoder_sparse_step": sparse_step,
        "mlp_only_layers": list(mlp_only),
        "moe_intermediate_size": moe_inter,
        "norm_topk_prob": norm_topk_prob,
        "rms_norm_eps": 1e-6,
        "vocab_size": vocab,
        "max_position_embeddings": 40960,
        "rope_theta": 1000000.0,
        "tie_word_embeddings": tie,
    }


def _gpt_oss(hidden, inter, vocab, experts, top_k, window, layers=2, layer_types=None, rope_scaling=None):
    # gpt_oss: biased attention with per-head sinks, sliding/full layers (layer_types, default
    # alternating from sliding), every layer a biased SwitchGLU MoE with the clamped swiglu_oai;
    # the head is never tied.
    cfg = {
        "model_type": "gpt_oss",
        "architectures": ["GptOssForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "intermediate_size": inter,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": hidden // 4,
        "num_local_experts": experts,
        "num_experts_per_tok": top_k,
        "sliding_window": window,
        "rms_norm_eps": 1e-5,
        "vocab_size": vocab,
        "rope_theta": 150000,
        "tie_word_embeddings": False,
    }
    if layer_types is not None:
        cfg["layer_types"] = layer_types
    if rope_scaling is not None:
        cfg["rope_scaling"] = rope_scaling
    return cfg


def _gemma4(hidden, inter, vocab, tie, head_dim, global_head_dim, layers, pattern, window, kv_shared,
            per_layer, kv_heads=2, k_eq_v=False, global_kv_heads=None, rope_parameters=None, softcap=30.0,
            layer_types=None, experts=None, top_k=None, moe_inter=None):
    # gemma4_text: every `pattern`-th layer is full attention (global_head_dim, proportional rope
    # over part of it, a KVCache), the others slide over `window` positions (head_dim, a
    # RotatingKVCache); the last `kv_shared` layers have no K/V of their own and read those of the
    # last earlier layer of their kind (and run a double-wide MLP); `per_layer` > 0 adds the
    # per-layer input embeddings; logits are soft-capped at `softcap`.
    cfg = {
        "model_type": "gemma4_text",
        "architectures": ["Gemma4ForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "intermediate_size": inter,
        "num_attention_heads": 4,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "global_head_dim": global_head_dim,
        "rms_norm_eps": 1e-6,
        "vocab_size": vocab,
        "vocab_size_per_layer_input": vocab,
        "hidden_size_per_layer_input": per_layer,
        "num_kv_shared_layers": kv_shared,
        "max_position_embeddings": 32768,
        "sliding_window": window,
        "sliding_window_pattern": pattern,
        "attention_k_eq_v": k_eq_v,
        "final_logit_softcapping": softcap,
        "tie_word_embeddings": tie,
    }
    if global_kv_heads is not None:
        cfg["num_global_key_value_heads"] = global_kv_heads
    if rope_parameters is not None:
        cfg["rope_parameters"] = rope_parameters
    if layer_types is not None:
        cfg["layer_types"] = layer_types
    if experts is not None:
        cfg.update({"enable_moe_block": True, "num_experts": experts, "top_k_experts": top_k,
                    "moe_intermediate_size": moe_inter})
    return cfg


def _qwen3_5(hidden, inter, vocab, tie, layers, interval, k_heads, v_heads, head_k, head_v, partial=0.5, kernel=4):
    # qwen3_5 (text, no text_config): every `interval`-th layer gated attention (q/k norms, an
    # output gate, rope over `partial` of the head), the others gated delta nets (conv state +
    # recurrence state in an ArraysCache); v_heads > k_heads repeats q and k.
    return {
        "model_type": "qwen3_5",
        "architectures": ["Qwen3_5ForConditionalGeneration"],
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "intermediate_size": inter,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": hidden // 4,
        "rms_norm_eps": 1e-6,
        "vocab_size": vocab,
        "max_position_embeddings": 32768,
        "full_attention_interval": interval,
        "linear_num_key_heads": k_heads,
        "linear_num_value_heads": v_heads,
        "linear_key_head_dim": head_k,
        "linear_value_head_dim": head_v,
        "linear_conv_kernel_dim": kernel,
        "rope_parameters": {"type": "default", "rope_theta": 100000.0, "partial_rotary_factor": partial},
        "tie_word_embeddings": tie,
    }


def _qwen3_5_moe(hidden, moe_inter, shared_inter, vocab, tie, layers, interval, experts, top_k, norm_topk_prob=True):
    # qwen3_5_moe: qwen3_5's hybrid layers, every MLP a qwen3_next sparse block (routed SwitchGLU
    # experts plus a sigmoid-gated shared expert).
    cfg = _qwen3_5(hidden, hidden * 2, vocab, tie, layers, interval, k_heads=2, v_heads=4, head_k=16, head_v=16)
    cfg.update({
        "model_type": "qwen3_5_moe",
        "architectures": ["Qwen3_5MoeForConditionalGeneration"],
        "num_experts": experts,
        "num_experts_per_tok": top_k,
        "moe_intermediate_size": moe_inter,
        "shared_expert_intermediate_size": shared_inter,
        "norm_topk_prob": norm_topk_prob,
    })
    return cfg


def _qwen3_next(hidden, inter, moe_inter, shared_inter, vocab, tie, layers, interval, experts, top_k,
                mlp_only=(), norm_topk_prob=False):
    # qwen3_next: the hybrid layers with packed delta net projections (in_proj_qkvz, in_proj_ba per
    # key head); sparse blocks except on mlp_only_layers; top-level rope_theta and
    # partial_rotary_factor.
    return {
        "model_type": "qwen3_next",
        "architectures": ["Qwen3NextForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "intermediate_size": inter,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": hidden // 4,
        "linear_num_value_heads": 4,
        "linear_num_key_heads": 2,
        "linear_key_head_dim": 16,
        "linear_value_head_dim": 16,
        "linear_conv_kernel_dim": 4,
        "num_experts": experts,
        "num_experts_per_tok": top_k,
        "decoder_sparse_step": 1,
        "shared_expert_intermediate_size": shared_inter,
        "mlp_only_layers": list(mlp_only),
        "moe_intermediate_size": moe_inter,
        "rms_norm_eps": 1e-6,
        "vocab_size": vocab,
        "rope_theta": 10000000.0,
        "partial_rotary_factor": 0.25,
        "max_position_embeddings": 32768,
        "norm_topk_prob": norm_topk_prob,
        "tie_word_embeddings": tie,
        "full_attention_interval": interval,
    }


LLAMA3_SCALING = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    # With base 10000 and head_dim 16/32 this puts wavelengths in all three
    # llama3 bands (unscaled, smoothed, scaled by factor).
    "original_max_position_embeddings": 8192,
}
LINEAR_SCALING = {"type": "linear", "factor": 2.0}
# head_dim 16, base 10000: the yarn correction range is [2, 6] of the 8 frequencies (a real
# ramp), and mscale / mscale_all_dim makes the input scale 1.0648.. (not 1).
YARN_SCALING = {
    "rope_type": "yarn",
    "factor": 4.0,
    "original_max_position_embeddings": 4096,
    "beta_fast": 32,
    "beta_slow": 1,
    "mscale": 1.0,
    "mscale_all_dim": 0.5,
}
# The deepseek alias, beta_fast / beta_slow left to initialize_rope's defaults, and
# mscale == mscale_all_dim so the ratio is exactly 1.0 and YarnRoPE skips the input scale;
# head_dim 32 and base 1e6 give the correction range [4, 9] of 16.
DEEPSEEK_YARN_SCALING = {
    "type": "deepseek_yarn",
    "factor": 8,
    "original_max_position_embeddings": 8192,
    "mscale": 0.707,
    "mscale_all_dim": 0.707,
}
# With max_position_embeddings 48 the base grows once offset + seq_len passes 48: in the second
# prefill chunk of the long prompt and during decoding of every prompt. An int factor, as Python
# would keep it.
DYNAMIC_SCALING = {"type": "dynamic", "factor": 2}
# head_dim 16 -> 8 factors each; max_position_embeddings 8192 / original 2048 = 4 gives the input
# scale sqrt(1 + ln 4 / ln 2048) = 1.087..
LONGROPE_SCALING = {
    "rope_type": "longrope",
    "original_max_position_embeddings": 2048,
    "short_factor": [1.0, 1.0, 1.05, 1.1, 1.2, 1.35, 1.5, 1.7],
    "long_factor": [1.0, 1.13, 1.31, 1.7, 2.3, 3.1, 4.05, 5.21],
}

# name -> (family, dtype, config, quant or None)
# quant: {"bits": b, "group_size": g}; quantized cells are quantized from bf16, those of dtype
# "f32" from float32 (float32 activations, as the default model runs them).
CELLS = {
    # --- llama ---
    "llama-bf16": ("llama", "bf16", _llama(64, 192, 512, tie=False, rope_scaling=LLAMA3_SCALING), None),
    "llama-f32": ("llama", "f32", _llama(64, 192, 512, tie=True, rope_scaling=LINEAR_SCALING, rope_theta=500000.0), None),
    "llama-q4": ("llama", "q4", _llama(64, 192, 1024, tie=False), {"bits": 4, "group_size": 64}),
    "llama-q8": ("llama", "q8", _llama(128, 256, 512, tie=True, rope_scaling=LLAMA3_SCALING), {"bits": 8, "group_size": 128}),
    # attention_bias and mlp_bias: every projection biased, o_proj and down_proj too (the bias
    # a tensor-parallel sharded-to-all layer adds once, after the all_sum).
    "llama-bias": ("llama", "bf16", _llama(64, 192, 512, tie=True, bias=True), None),
    # --- qwen2 (q/k/v bias always) ---
    "qwen2-bf16": ("qwen2", "bf16", _qwen2(64, 192, 512, tie=True), None),
    "qwen2-f32": ("qwen2", "f32", _qwen2(64, 192, 1024, tie=False), None),
    "qwen2-q4": ("qwen2", "q4", _qwen2(64, 192, 512, tie=True), {"bits": 4, "group_size": 32}),
    "qwen2-q8": ("qwen2", "q8", _qwen2(64, 192, 512, tie=False), {"bits": 8, "group_size": 64}),
    # --- qwen3 (q_norm / k_norm always) ---
    "qwen3-bf16": ("qwen3", "bf16", _qwen3(128, 256, 512, tie=False, head_dim=32), None),
    # head_dim 32 with hidden 64: heads*head_dim (128) != hidden, like real Qwen3.
    "qwen3-f32": ("qwen3", "f32", _qwen3(64, 192, 512, tie=True, head_dim=32), None),
    "qwen3-q4": ("qwen3", "q4", _qwen3(64, 192, 1024, tie=False, head_dim=16), {"bits": 4, "group_size": 64}),
    "qwen3-q8": ("qwen3", "q8", _qwen3(128, 256, 512, tie=True, head_dim=32), {"bits": 8, "group_size": 128}),
    # 3 and 6 bits, whose values straddle 32-bit words: rows of 12 to 24 words (3-bit g64:
    # down_proj's 256 inputs are one eight-pack read of 24 words; 6-bit g32: every 128-input
    # projection is), an untied 3-bit head and a tied 6-bit one (quantized embedding).
    "llama-q3": ("llama", "q3", _llama(128, 256, 512, tie=False), {"bits": 3, "group_size": 64}),
    "qwen3-q6": ("qwen3", "q6", _qwen3(128, 256, 512, tie=True, head_dim=32), {"bits": 6, "group_size": 32}),
    # Quantized from float32, so the activations stay float32: the cells the exact fused block
    # (FusedBlock) takes, against mlx-lm. 4-bit g32 with linear rope scaling and 8-bit g128 with
    # llama3's (llama), 8-bit g64 with q/k/v biases (qwen2), 6-bit g32 with q/k norms (qwen3).
    "llama-f32q4": ("llama", "f32", _llama(64, 192, 512, tie=True, rope_scaling=LINEAR_SCALING), {"bits": 4, "group_size": 32}),
    "llama-f32q8": ("llama", "f32", _llama(128, 256, 512, tie=True, rope_scaling=LLAMA3_SCALING), {"bits": 8, "group_size": 128}),
    "qwen2-f32q8": ("qwen2", "f32", _qwen2(64, 192, 512, tie=False), {"bits": 8, "group_size": 64}),
    "qwen3-f32q6": ("qwen3", "f32", _qwen3(128, 256, 512, tie=True, head_dim=32), {"bits": 6, "group_size": 32}),
    # --- rope scaling types beyond default / linear / llama3 ---
    "llama-yarn": ("llama", "bf16", _llama(64, 192, 512, tie=False, rope_scaling=YARN_SCALING), None),
    "qwen3-yarn": ("qwen3", "f32", _qwen3(64, 192, 512, tie=True, head_dim=32, rope_scaling=DEEPSEEK_YARN_SCALING), None),
    "qwen2-dynamic": ("qwen2", "f32", _qwen2(64, 192, 512, tie=False, rope_scaling=DYNAMIC_SCALING, max_pos=48), None),
    "llama-longrope": ("llama", "bf16", _llama(64, 192, 512, tie=True, rope_scaling=LONGROPE_SCALING, max_pos=8192), None),
    # --- gemma3_text (sliding-window layers over RotatingKVCache) ---
    # window 16: the 23- and 70-token prompts and the 64-token decode all pass it (trim and
    # rotation); layers sliding, global, sliding.
    "gemma3-bf16": ("gemma3_text", "bf16", _gemma3(64, 192, 512, tie=True, head_dim=16, layers=3, pattern=2,
                                                   window=16, query_pre_attn_scalar=24), None),
    # window 48, above the 32-token prefill chunk: the first chunk is "causal", the second gets an
    # array mask; layers sliding, sliding, global, sliding; linear rope scaling on the global layer.
    "gemma3-q4": ("gemma3_text", "q4", _gemma3(64, 192, 512, tie=False, head_dim=16, layers=4, pattern=3,
                                               window=48, query_pre_attn_scalar=16,
                                               rope_scaling={"rope_type": "linear", "factor": 8.0}),
                  {"bits": 4, "group_size": 64}),
    "gemma3-q8": ("gemma3_text", "q8", _gemma3(128, 256, 512, tie=True, head_dim=32, layers=2, pattern=2,
                                               window=24, query_pre_attn_scalar=32),
                  {"bits": 8, "group_size": 128}),
    # --- gemma4_text (per-layer inputs, global head dim, KV-shared layers, soft-capped logits) ---
    # layers S S F | S S F (S sliding over 16 positions, F full with head_dim 32, a quarter of it
    # rotated); the last three share layer 1's (S) and layer 2's (F) keys and values; per-layer
    # inputs of 16 per layer.
    "gemma4-bf16": ("gemma4_text", "bf16", _gemma4(64, 128, 512, tie=True, head_dim=16, global_head_dim=32,
                                                   layers=6, pattern=3, window=16, kv_shared=3, per_layer=16), None),
    # no per-layer inputs and no shared layers; K = V on the full layers (one global KV head);
    # window 48 (the 70-token prompt's second chunk gets an array mask); untied head.
    "gemma4-f32": ("gemma4_text", "f32", _gemma4(64, 128, 512, tie=False, head_dim=16, global_head_dim=32,
                                                 layers=3, pattern=3, window=48, kv_shared=0, per_layer=0,
                                                 k_eq_v=True, global_kv_heads=1), None),
    # layers S S F S | S F: layer 4 reads layer 3's K/V, layer 5 layer 2's; half the global head
    # rotated (rope_parameters from the config); window 48; 4-bit (the 32-wide per-layer
    # projection stays float: 32 does not split into groups of 64).
    "gemma4-q4": ("gemma4_text", "q4", _gemma4(64, 128, 512, tie=False, head_dim=16, global_head_dim=32,
                                               layers=6, pattern=4, window=48, kv_shared=2, per_layer=32,
                                               rope_parameters={
                                                   "full_attention": {"partial_rotary_factor": 0.5,
                                                                      "rope_theta": 1000000.0,
                                                                      "rope_type": "proportional"},
                                                   "sliding_attention": {"rope_theta": 10000.0,
                                                                         "rope_type": "default"}}),
                  {"bits": 4, "group_size": 64}),
    # layers S F | S F, window 24, K = V on the full layers, 8-bit group 128, tied head.
    "gemma4-q8": ("gemma4_text", "q8", _gemma4(128, 256, 512, tie=True, head_dim=32, global_head_dim=64,
                                               layers=4, pattern=2, window=24, kv_shared=2, per_layer=32,
                                               k_eq_v=True, global_kv_heads=1, softcap=10.0),
                  {"bits": 8, "group_size": 128}),
    # Full attention only (no rotating cache: the prefix cache holds it), the last of three
    # layers KV-shared with layer 1; per-layer inputs.
    "gemma4-full": ("gemma4_text", "bf16", _gemma4(64, 128, 512, tie=True, head_dim=16, global_head_dim=32,
                                                   layers=3, pattern=3, window=16, kv_shared=1, per_layer=16,
                                                   layer_types=["full_attention"] * 3), None),
    # Full attention only and no shared layers: --kv-bits runs (QuantizedKVCache of global_head_dim
    # 32 on every layer, the quantized attention at scale 1).
    "gemma4-fullkv": ("gemma4_text", "bf16", _gemma4(64, 128, 512, tie=True, head_dim=16, global_head_dim=32,
                                                     layers=2, pattern=2, window=16, kv_shared=0, per_layer=16,
                                                     layer_types=["full_attention"] * 2), None),
    # enable_moe_block: a router and GELU-gated SwitchGLU experts beside every layer's MLP. float32
    # (gather_mm runs float32 only on the CPU): 8 experts, top-2 (the 32-token prefill chunks route
    # 64 pairs: the sorted path); 4-bit: 4 experts, top-2, the router 8-bit (quant_predicate).
    "gemma4_moe-f32": ("gemma4_text", "f32", _gemma4(64, 128, 512, tie=True, head_dim=16, global_head_dim=32,
                                                     layers=4, pattern=2, window=16, kv_shared=2, per_layer=16,
                                                     experts=8, top_k=2, moe_inter=64), None),
    "gemma4_moe-q4": ("gemma4_text", "q4", _gemma4(64, 128, 512, tie=False, head_dim=16, global_head_dim=32,
                                                   layers=3, pattern=2, window=48, kv_shared=1, per_layer=0,
                                                   experts=4, top_k=2, moe_inter=64), {"bits": 4, "group_size": 64}),
    # The original Hugging Face layout: each layer's experts as one fused experts.gate_up_proj
    # [E, 2 * moe_inter, hidden] and experts.down_proj, which mlx-lm's sanitize splits at load;
    # the KV-shared layer 2 carries K/V projections and a k_norm, and layer 0 a rotary table,
    # which sanitize drops. Layers S F S.
    "gemma4_moe-fused": ("gemma4_text", "f32", _gemma4(64, 128, 512, tie=True, head_dim=16, global_head_dim=32,
                                                       layers=3, pattern=2, window=16, kv_shared=1, per_layer=16,
                                                       experts=4, top_k=2, moe_inter=64), None),
    # --- phi3 (fused projections, partial rotary) ---
    # longrope over 12 of the 16 head dims (6 factors), max 131072 / original 4096: input scale
    # sqrt(1 + ln 32 / ln 4096) = 1.19..
    "phi3-bf16": ("phi3", "bf16", _phi3(64, 192, 512, tie=False, partial_rotary_factor=0.75, rope_scaling={
        "type": "longrope",
        "short_factor": [1.0, 1.02, 1.05, 1.1, 1.2, 1.3],
        "long_factor": [1.0, 1.25, 1.6, 2.2, 3.0, 4.5]}), None),
    "phi3-q4": ("phi3", "q4", _phi3(64, 192, 512, tie=True), {"bits": 4, "group_size": 64}),
    # linear scaling (phi3 still requires long_factor and type) over half of the 32 head dims.
    "phi3-q8": ("phi3", "q8", _phi3(128, 256, 512, tie=False, partial_rotary_factor=0.5, rope_scaling={
        "type": "linear", "factor": 2.0, "long_factor": 1.0}), {"bits": 8, "group_size": 128}),
    # --- qwen3_moe (router + SwitchGLU experts through gather_mm / gather_qmm) ---
    # gather_mm runs float32 only on the CPU, so the unquantized cell is f32. top-2 routing: the
    # 32-token prefill chunks route 64 (token, expert) pairs, mlx-lm's threshold for the sorted
    # path; the 5- and 23-token prompts and decode take the unsorted one.
    "qwen3_moe-f32": ("qwen3_moe", "f32", _qwen3_moe(64, 128, 64, 512, tie=False, experts=8, top_k=2), None),
    # 3 layers, the middle one a dense MLP (mlp_only_layers); no norm_topk_prob; the router is
    # 8-bit group 64 (qwen3_moe's quant_predicate), the experts 4-bit.
    "qwen3_moe-q4": ("qwen3_moe", "q4", _qwen3_moe(64, 128, 64, 512, tie=True, experts=4, top_k=2,
                                                   norm_topk_prob=False, layers=3, mlp_only=(1,)),
                     {"bits": 4, "group_size": 64}),
    "qwen3_moe-q8": ("qwen3_moe", "q8", _qwen3_moe(128, 256, 128, 512, tie=False, experts=6, top_k=3),
                     {"bits": 8, "group_size": 128}),
    # The original Hugging Face layout, one weight per expert (mlp.experts.E.up_proj.weight ...),
    # which mlx-lm's sanitize stacks at load.
    "qwen3_moe-experts": ("qwen3_moe", "f32", _qwen3_moe(64, 128, 64, 512, tie=True, experts=4, top_k=2), None),
    # Unquantized bfloat16 experts: mlx-lm fails on this CPU ([GatherMM::eval] float32 only) and
    # mlx-ring refuses it at load; no generation check.
    "qwen3_moe-bf16": ("qwen3_moe", "bf16", _qwen3_moe(64, 128, 64, 512, tie=True, experts=4, top_k=2), None),
    # --- gpt_oss (sinks, sliding/full layers, biased experts with swiglu_oai) ---
    # window 16: the 23- and 70-token prompts and decode pass it; layers sliding, full.
    "gpt_oss-f32": ("gpt_oss", "f32", _gpt_oss(64, 64, 512, experts=4, top_k=2, window=16), None),
    # layers full, sliding, sliding; window 48 (the 70-token prompt's second chunk gets an array
    # mask); yarn on every layer (gpt-oss's own rope scaling); 8-bit router, 4-bit experts.
    "gpt_oss-q4": ("gpt_oss", "q4", _gpt_oss(64, 128, 512, experts=8, top_k=4, window=48, layers=3,
                                             layer_types=["full_attention", "sliding_attention", "sliding_attention"],
                                             rope_scaling={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                                                           "beta_slow": 1.0, "original_max_position_embeddings": 4096}),
                   {"bits": 4, "group_size": 64}),
    "gpt_oss-q8": ("gpt_oss", "q8", _gpt_oss(128, 128, 512, experts=4, top_k=2, window=24),
                   {"bits": 8, "group_size": 128}),
    # --- qwen3_5 (hybrid: gated delta net layers + gated attention layers) ---
    # layers linear, attention, linear, attention; 2 key heads repeated to 4 value heads.
    "qwen3_5-bf16": ("qwen3_5", "bf16", _qwen3_5(64, 192, 512, tie=False, layers=4, interval=2, k_heads=2,
                                                 v_heads=4, head_k=16, head_v=16), None),
    # The same model in the Hugging Face layout (model.language_model. names, conv1d [C, 1, K],
    # norms stored minus 1, an mtp. weight), which sanitize converts at load.
    "qwen3_5-hf": ("qwen3_5", "bf16", _qwen3_5(64, 192, 512, tie=False, layers=4, interval=2, k_heads=2,
                                               v_heads=4, head_k=16, head_v=16), None),
    # linear, linear, attention (interval 3); as many value heads as key heads; tied; kernel 3.
    "qwen3_5-f32": ("qwen3_5", "f32", _qwen3_5(64, 192, 512, tie=True, layers=3, interval=3, k_heads=2,
                                               v_heads=2, head_k=32, head_v=16, partial=0.25, kernel=3), None),
    "qwen3_5-q4": ("qwen3_5", "q4", _qwen3_5(64, 192, 512, tie=True, layers=4, interval=2, k_heads=2,
                                             v_heads=4, head_k=16, head_v=16), {"bits": 4, "group_size": 64}),
    "qwen3_5-q8": ("qwen3_5", "q8", _qwen3_5(128, 256, 512, tie=False, layers=3, interval=3, k_heads=2,
                                             v_heads=4, head_k=32, head_v=32), {"bits": 8, "group_size": 64}),
    # --- qwen3_5_moe (gather_mm is float32 only on the CPU: f32 and quantized experts) ---
    "qwen3_5_moe-f32": ("qwen3_5_moe", "f32", _qwen3_5_moe(64, 64, 96, 512, tie=False, layers=4, interval=2,
                                                         experts=4, top_k=2), None),
    "qwen3_5_moe-q4": ("qwen3_5_moe", "q4", _qwen3_5_moe(64, 64, 128, 512, tie=True, layers=3, interval=3,
                                                       experts=4, top_k=2, norm_topk_prob=False),
                       {"bits": 4, "group_size": 64}),
    # --- qwen3_next (packed delta net projections; f32 experts and 4-bit) ---
    # layers linear, attention, linear, attention; layer 1 a dense MLP (mlp_only_layers).
    "qwen3_next-f32": ("qwen3_next", "f32", _qwen3_next(64, 128, 64, 96, 512, tie=False, layers=4, interval=2,
                                                       experts=4, top_k=2, mlp_only=(1,)), None),
    "qwen3_next-q4": ("qwen3_next", "q4", _qwen3_next(64, 128, 64, 128, 512, tie=True, layers=3, interval=3,
                                                     experts=4, top_k=2, norm_topk_prob=True),
                      {"bits": 4, "group_size": 64}),
    # llama with SmolLM2's vocabulary and 4 heads / 2 KV heads: the tensor-parallel server's
    # model (two ranks each hold 2 heads and 1 KV head; the default model's 9 / 3 do not split).
    "llama-serve": ("llama", "bf16", _llama(64, 192, 49152, tie=True), None),
    # SmolLM2's vocabulary, so that a server test can pair it with the default model's tokenizer
    # (ingress Gemma3ServerTest); 4-bit keeps the 49152-row embedding at ~2 MB.
    "gemma3-serve": ("gemma3_text", "q4", _gemma3(64, 192, 49152, tie=True, head_dim=16, layers=3, pattern=2,
                                                  window=16, query_pre_attn_scalar=16),
                     {"bits": 4, "group_size": 64}),
    # The same for gemma4_text (ingress FamilyServerTest): sliding and full layers, a KV-shared
    # layer of each kind, per-layer inputs (a 4-bit 49152 x 64 per-layer embedding).
    "gemma4-serve": ("gemma4_text", "q4", _gemma4(64, 128, 49152, tie=True, head_dim=16, global_head_dim=32,
                                                  layers=4, pattern=2, window=16, kv_shared=2, per_layer=16),
                     {"bits": 4, "group_size": 64}),
    # The same for qwen3_moe (ingress FamilyServerTest): 4-bit experts, 8-bit router.
    "qwen3_moe-serve": ("qwen3_moe", "q4", _qwen3_moe(64, 128, 64, 49152, tie=True, experts=4, top_k=2),
                        {"bits": 4, "group_size": 64}),
    "gpt_oss-serve": ("gpt_oss", "q4", _gpt_oss(64, 64, 49152, experts=4, top_k=2, window=16),
                      {"bits": 4, "group_size": 64}),
}

QUANT_SOURCE_DTYPE = "bfloat16"

# Cells mlx-lm cannot run on this CPU (built to test the refusal).
NO_CHECK = {"qwen3_moe-bf16"}


def _features(family, config, quant):
    f = []
    f.append("tied_embeddings" if config["tie_word_embeddings"] else "untied_embeddings")
    f.append("gqa")
    hd = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    if hd * config["num_attention_heads"] != config["hidden_size"]:
        f.append("head_dim_decoupled")
    if family == "qwen2":
        f.append("qkv_bias")
    if family in ("qwen3", "qwen3_moe", "gemma3_text", "gemma4_text"):
        f.append("qk_norm")
    if family in ("gemma3_text", "gemma4_text"):
        f.append("sliding_window")
    if family == "gemma4_text":
        f.append("logit_softcapping")
        if config["hidden_size_per_layer_input"]:
            f.append("per_layer_inputs")
        if config["num_kv_shared_layers"]:
            f.append("kv_shared_layers")
    if family in ("qwen3_moe", "gpt_oss"):
        f.append("mixture_of_experts")
    if family == "gpt_oss":
        f.append("attention_sinks")
        f.append("sliding_window")
    rs = config.get("rope_scaling")
    if rs:
        f.append("rope_scaling_" + (rs.get("type") or rs.get("rope_type")))
    if not config.get("rope_traditional", False):
        f.append("rope_non_traditional")
    if quant:
        f.append("quantized_embeddings")
        if not config["tie_word_embeddings"]:
            f.append("quantized_lm_head")
    return f


def manifest_entry(name):
    family, dtype, config, quant = CELLS[name]
    hd = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    return {
        "name": name,
        "path": name,
        "family": family,
        "dtype": dtype,
        # dtype of the activations / logits produced by this model
        "compute_dtype": "float32" if dtype == "f32" else "bfloat16",
        "bits": quant["bits"] if quant else None,
        "group_size": quant["group_size"] if quant else None,
        "quant_mode": "affine" if quant else None,
        "quantized_from": ("float32" if dtype == "f32" else QUANT_SOURCE_DTYPE) if quant else None,
        "seed": seed_for(name),
        "hidden_size": config["hidden_size"],
        "intermediate_size": config["intermediate_size"],
        "num_hidden_layers": config["num_hidden_layers"],
        "num_attention_heads": config["num_attention_heads"],
        "num_key_value_heads": config["num_key_value_heads"],
        "head_dim": hd,
        "vocab_size": config["vocab_size"],
        "tie_word_embeddings": config["tie_word_embeddings"],
        "rope_theta": config.get("rope_theta", (config.get("rope_parameters") or {}).get("rope_theta")),
        "rope_scaling": config.get("rope_scaling"),
        "features": _features(family, config, quant),
    }


# ---------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------


def _prepare_gemma3(model, tie):
    """Gemma multiplies the embedding by sqrt(hidden_size) and normalizes what each branch adds,
    so with reinit's embedding scale the token's own embedding dominates the residual and greedy
    decoding echoes the last token: scale the embedding down to let the layers speak. A tied
    Gemma 3 checkpoint has no lm_head (mlx-lm's sanitize then ties the head)."""
    emb = model.model.embed_tokens
    emb.weight = emb.weight * 0.15
    if tie:
        model.pop("lm_head")


def _prepare_gemma4(model):
    """As Gemma 3 (the embedding scaled down so that the layers speak); the per-layer scalars
    (ones at init, which reinit leaves alone) get 1 + 0.1 N(0, 1) so that they are exercised."""
    emb = model.model.embed_tokens
    emb.weight = emb.weight * 0.15
    key = mx.random.key(len(model.model.layers))
    for layer, k in zip(model.model.layers, mx.random.split(key, len(model.model.layers))):
        layer.layer_scalar = 1.0 + 0.1 * mx.random.normal((1,), key=k)


def _unstack_experts(model_dir: Path):
    """Rewrites a model's stacked SwitchGLU weights (mlp.switch_mlp.P.weight [E, out, in]) as the
    per-expert weights of a Hugging Face checkpoint (mlp.experts.e.P.weight)."""
    path = model_dir / "model.safetensors"
    weights = mx.load(str(path))
    out = {}
    for k, v in weights.items():
        if ".mlp.switch_mlp." in k:
            for e in range(v.shape[0]):
                out[k.replace(".switch_mlp.", f".experts.{e}.")] = v[e]
        else:
            out[k] = v
    mx.save_safetensors(str(path), out, metadata={"format": "mlx"})
    index = model_dir / "model.safetensors.index.json"
    doc = json.loads(index.read_text())
    doc["weight_map"] = {k: "model.safetensors" for k in sorted(out)}
    index.write_text(json.dumps(doc, indent=4))


def _fuse_gemma4_experts(model_dir: Path):
    """Rewrites a gemma4_text model's experts.switch_glu.{gate,up,down}_proj.weight as the Hugging
    Face layout: experts.gate_up_proj (gate then up along axis -2) and experts.down_proj."""
    path = model_dir / "model.safetensors"
    weights = mx.load(str(path))
    out = {}
    for k, v in weights.items():
        if k.endswith(".experts.switch_glu.gate_proj.weight"):
            base = k.removesuffix(".switch_glu.gate_proj.weight")
            up = weights[base + ".switch_glu.up_proj.weight"]
            out[base + ".gate_up_proj"] = mx.concatenate([v, up], axis=-2)
        elif k.endswith(".experts.switch_glu.up_proj.weight"):
            continue
        elif k.endswith(".experts.switch_glu.down_proj.weight"):
            out[k.removesuffix(".switch_glu.down_proj.weight") + ".down_proj"] = v
        else:
            out[k] = v
    # What a Hugging Face checkpoint also holds and mlx-lm's sanitize drops.
    key = mx.random.key(11)
    for name, shape in (("k_proj.weight", (32, 64)), ("v_proj.weight", (32, 64)), ("k_norm.weight", (16,))):
        key, sub = mx.random.split(key)
        out[f"model.layers.2.self_attn.{name}"] = mx.random.normal(shape, key=sub)
    out["model.layers.0.self_attn.rotary_emb.inv_freq"] = mx.ones((8,))
    mx.save_safetensors(str(path), out, metadata={"format": "mlx"})
    index = model_dir / "model.safetensors.index.json"
    doc = json.loads(index.read_text())
    doc["weight_map"] = {k: "model.safetensors" for k in sorted(out)}
    index.write_text(json.dumps(doc, indent=4))


def _to_hf_qwen3_5(model_dir: Path):
    """Rewrites a qwen3_5 model as a Hugging Face Qwen3_5ForConditionalGeneration checkpoint holds
    it: names under model.language_model. (lm_head unprefixed), conv1d weights [C, 1, K], the
    decoder-layer, final and q/k norms stored as weight - 1, and an mtp. weight; mlx-lm's sanitize
    undoes each (bf16 norms near 1 round-trip exactly)."""
    path = model_dir / "model.safetensors"
    weights = mx.load(str(path))
    norms = (".input_layernorm.weight", ".post_attention_layernorm.weight", "model.norm.weight",
             ".q_norm.weight", ".k_norm.weight")
    out = {}
    for k, v in weights.items():
        if "conv1d.weight" in k:
            v = v.moveaxis(2, 1)
        elif k.endswith(norms) and v.ndim == 1:
            v = v - 1.0
        if k.startswith("language_model.model."):
            k = "model.language_model." + k[len("language_model.model."):]
        elif k.startswith("language_model."):
            k = k[len("language_model."):]
        out[k] = v
    out["mtp.fc.weight"] = mx.zeros((4, 4), dtype=mx.bfloat16)
    mx.eval(out)
    mx.save_safetensors(str(path), out, metadata={"format": "mlx"})
    index = model_dir / "model.safetensors.index.json"
    doc = json.loads(index.read_text())
    doc["weight_map"] = {k: "model.safetensors" for k in sorted(out)}
    index.write_text(json.dumps(doc, indent=4))


def _prepare_gpt_oss(model):
    """Scale the experts' gate and up projections by 4 so that their outputs (about N(0, 16))
    cross swiglu_oai's clamp at 7 in a few percent of the entries: otherwise the clamp is never
    exercised."""
    for layer in model.model.layers:
        for proj in (layer.mlp.experts.gate_proj, layer.mlp.experts.up_proj):
            proj.weight = proj.weight * 4.0


def build(name, out_dir: Path):
    family, dtype, config, quant = CELLS[name]
    target = mx.float32 if dtype == "f32" else mx.bfloat16
    prepare = None
    if family == "gemma3_text":
        prepare = lambda model: _prepare_gemma3(model, config["tie_word_embeddings"])
    elif family == "gemma4_text":
        prepare = _prepare_gemma4
    elif family == "gpt_oss":
        prepare = _prepare_gpt_oss
    build_model_dir(out_dir, family, config, seed_for(name), target, quant, prepare)
    if name.endswith("-experts"):
        _unstack_experts(out_dir)
    if name == "gemma4_moe-fused":
        _fuse_gemma4_experts(out_dir)
    if name == "qwen3_5-hf":
        _to_hf_qwen3_5(out_dir)


def check_generation(model_dir: Path, vocab, n=64):
    """Reload through mlx_lm.utils.load_model and greedy-decode n tokens."""
    from mlx_lm.generate import generate_step

    model, _ = load_model(model_dir)
    prompt = mx.array([1, 7, 42, 3, 99][:], dtype=mx.uint32) % vocab
    toks = [t for t, _ in generate_step(prompt, model, max_tokens=n)]
    return toks


def main(argv=None):
    ap = model_args(__doc__)
    ap.add_argument("--no-check", action="store_true", help="skip the 64-token non-degeneracy check")
    args = ap.parse_args(argv)

    for name, d in models_to_build(ap, args, CELLS, RECIPE_VERSION):
        t0 = time.perf_counter()
        build(name, d)
        t1 = time.perf_counter()
        check = {}
        if not args.no_check and name not in NO_CHECK:
            toks = check_generation(d, CELLS[name][2]["vocab_size"])
            distinct = len(set(toks))
            if distinct < 2:
                raise SystemExit(f"{name}: degenerate greedy output {toks}")
            check["check_distinct_tokens_64"] = distinct
        write_marker(d, RECIPE_VERSION, name, **check)
        print(
            f"[built] {name}: {t1 - t0:.2f}s build, {time.perf_counter() - t1:.2f}s check"
            + (f", {check['check_distinct_tokens_64']} distinct of 64 greedy tokens" if check else ""),
            file=sys.stderr,
        )

    manifest = {
        **versions(),
        "recipe_version": RECIPE_VERSION,
        "quantized_from": QUANT_SOURCE_DTYPE,
        "models": [manifest_entry(n) for n in CELLS],
    }
    write_json(manifest, str(Path(args.out) / "manifest.json"))


if __name__ == "__main__":
    main()
