/**
 * One request's generation: {@link GenerationRun} is mlx-lm's {@code generate_step} as a resumable
 * state machine advanced one safe unit at a time; {@link ModelExecutor} is exec-stage's
 * {@link dev.mlxring.pipeline.Executor} over one resident model; {@link GenerateStep} runs a whole
 * generation on the calling thread for the CLI, the tests and the benchmarks. Everything here runs
 * on the one thread that drives MLX.
 */
package dev.mlxring.exec.generate;
