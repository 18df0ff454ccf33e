/**
 * The KV schemes (layer L2): the sealed {@link KvCache} family with mlx-lm's growth, offset,
 * quantization and rotation semantics, in solo and batched form, the attention masks they need,
 * and {@link KvQuantization} ({@code --kv-bits}). A cache belongs to one run or batch on the MLX
 * thread and frees its buffers on {@code close()}.
 */
package dev.mlxring.exec.kv;
