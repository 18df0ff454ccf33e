/**
 * The model graphs (layer L1): {@link Models} loads a model directory into the family graph its
 * {@code config.json}'s {@code model_type} names (llama and mistral, qwen2, qwen3, qwen3_moe, phi3,
 * gemma3_text, gemma4_text, gpt_oss), each built op for op as mlx-lm's model file builds it; the contract,
 * {@link LanguageModel}, ends at logits. Every method runs on the thread that drives MLX (the
 * engine's exec thread, or the caller of {@code GenerateStep}); callers are the exec packages, the
 * composition root and perf.
 */
package dev.mlxring.exec.model;
