/**
 * {@code mlx-ring bench serve}'s client side: workloads ({@link dev.mlxring.bench.Workloads}),
 * arrivals (closed loop or Poisson/gamma, {@link dev.mlxring.bench.LoadLevel}), one streaming
 * client per API dialect ({@link dev.mlxring.bench.StreamingClient}), the per-request metrics
 * ({@link dev.mlxring.bench.RequestRecord}) and their summary under vLLM's field names
 * ({@link dev.mlxring.bench.LevelSummary}), the fair order of phases
 * ({@link dev.mlxring.bench.PhasePlan}) and the results folder ({@link dev.mlxring.bench.ResultsWriter});
 * and the decode benchmarks' shared parts: their runs and report ({@link dev.mlxring.bench.DecodeRun},
 * {@link dev.mlxring.bench.DecodeReport}) and the mlx-lm side they measure against
 * ({@link dev.mlxring.bench.MlxLmServe}, a Python subprocess), used by {@code bench decode} and
 * perf's {@code DecodeBenchmark}. It talks HTTP or to subprocesses only; nothing of the engine is here.
 */
package dev.mlxring.bench;
