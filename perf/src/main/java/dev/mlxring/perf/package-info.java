/**
 * Benchmark and check programs, each a {@code main} run by {@code scripts/bench} or {@code scripts/gpu}: side-by-side decode and
 * batching against mlx-lm, the decode profile, load against OpenAI-compatible servers, sampling
 * and constraint costs, the SSD tier's costs. Not part of the engine; nothing else depends on it.
 */
package dev.mlxring.perf;
