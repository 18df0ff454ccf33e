package dev.mlxring.exec.batch;

import dev.mlxring.mlx.MlxArray;

/**
 * One row's token from one {@link BatchGenerator#next()} ({@code GenerationBatch.Response}): the
 * token, the step's {@code [V]} logprobs of that row (owned by the generator, valid until the next
 * {@code next()}), and {@code "length"} or {@code "stop"} when the row ended with this token (it
 * is still reported, as mlx-lm reports it), else null.
 */
public record BatchToken(int uid, int token, MlxArray logprobs, String finishReason) {}
