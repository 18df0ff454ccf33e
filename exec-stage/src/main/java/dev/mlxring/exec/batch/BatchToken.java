package dev.mlxring.exec.batch;

import dev.mlxring.mlx.MlxArray;
import dev.mlxring.pipeline.Outcome.ErrorType;

/**
 * One row's token from one {@link BatchGenerator#next()} ({@code GenerationBatch.Response}): the
 * token, the step's {@code [V]} logprobs of that row (owned by the generator, valid until the next
 * {@code next()}), and {@code "length"} or {@code "stop"} when the row ended with this token (it
 * is still reported, as mlx-lm reports it), else null. A row that failed alone (its token
 * constraint allows nothing or refused its token) is reported once with {@code "error"}, no token
 * ({@code -1}, null logprobs) and the failure's {@code errorType} and {@code error}.
 */
public record BatchToken(
        int uid, int token, MlxArray logprobs, String finishReason, ErrorType errorType, String error) {
    /** A token, possibly the row's last ({@code finishReason} {@code length} or {@code stop}). */
    public BatchToken(int uid, int token, MlxArray logprobs, String finishReason) {
        this(uid, token, logprobs, finishReason, null, null);
    }

    /** The row's failure: it ends without a token. */
    static BatchToken failed(int uid, ErrorType type, String error) {
        return new BatchToken(uid, -1, null, "error", type, error);
    }
}
