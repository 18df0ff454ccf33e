/**
 * The MLX runtime through FFM: the C shim's downcalls ({@code libmlxr.so}), {@link Mlx}'s operations
 * named as {@code mlx.core}'s, array ownership ({@link MlxArray}, one owner each; {@link ArrayScope},
 * per thread), weights I/O, the CPU kernel and numerics choices, and MLX distributed groups. MLX
 * is driven from one thread at a time (the engine's exec thread); a scope and the arrays it owns
 * belong to the thread that opened it. Called by exec-stage, the composition roots and perf.
 */
package dev.mlxring.mlx;
