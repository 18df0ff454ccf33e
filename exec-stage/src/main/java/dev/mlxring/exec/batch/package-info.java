/**
 * Continuous batching, mechanics only: {@link BatchGenerator} is mlx-lm's {@code BatchGenerator}
 * step for step (so each row's bytes equal mlx-lm's for the same arrival script), and
 * {@link ContinuousBatch} is the pipeline's {@link dev.mlxring.pipeline.ExecutionBatch} over it.
 * The policy (which rows, when) is the pipeline's {@code BatchScheduler}; everything here runs on
 * the exec thread.
 */
package dev.mlxring.exec.batch;
