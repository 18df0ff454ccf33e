/**
 * Speculative decoding on the serial path, as mlx-lm's {@code speculative_generate_step}: a
 * {@link dev.mlxring.exec.spec.DraftSource} per row (a draft model or prompt lookup) proposes
 * tokens, {@link dev.mlxring.exec.spec.SpeculativeRun} verifies them in one forward of
 * {@code proposal + 1} positions, keeps mlx-lm's accepted prefix and trims every cache back;
 * {@link dev.mlxring.exec.spec.SpeculativeExecutionRun} is what the executor hands the exec loop.
 * Exec thread only; built by the executor from the server's or request's speculation choice.
 */
package dev.mlxring.exec.spec;
