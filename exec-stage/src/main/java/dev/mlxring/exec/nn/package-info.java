/**
 * The {@code mlx.nn} layers the model graphs are made of: {@link Linear} and {@link Embedding} (dense
 * or quantized, picked by the weights), {@link RmsNorm}, {@link Rope} as mlx-lm initializes it,
 * mixture-of-experts and tensor-parallel linears, and {@link Parameters}, which owns a model's
 * loaded weights for its lifetime. MLX-thread only, like the graphs that call them.
 */
package dev.mlxring.exec.nn;
