/**
 * Token selection as mlx-lm does it: {@link Sampler} ({@code make_sampler}), the logits processors
 * ({@code make_logits_processors}, then a token constraint's mask last), logprob reports, and the
 * engine's random generator for unseeded requests. A {@link SamplingRun} and its
 * {@link SamplingState} belong to one request and to the MLX thread that runs it.
 */
package dev.mlxring.exec.sample;
