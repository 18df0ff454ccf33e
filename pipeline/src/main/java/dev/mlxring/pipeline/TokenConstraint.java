package dev.mlxring.pipeline;

/**
 * A per-request output constraint (a compiled JSON schema, grammar or regex), driven by exec one
 * token at a time: before each sampled token exec asks which tokens are allowed
 * ({@link #allowedTokens}), masks the rest out of the logits, samples, and reports the token taken
 * ({@link #consume}).
 *
 * <p>One instance per request, made by plan-stage and handed to exec through the
 * {@link ExecutionPlan}. From then on it is driven on the exec thread only, and exec closes it when
 * the row ends (finished, cancelled or failed); a plan that never reaches exec is closed by whoever
 * drops it.
 */
public interface TokenConstraint extends AutoCloseable {
    /**
     * Fills {@code words} with the tokens allowed next: bit {@code t % 32} of word {@code t / 32}
     * set means token {@code t} is allowed. Tokens beyond the words' bits are disallowed.
     *
     * @param words at least {@code ceil(vocab / 32)} words; every word is written
     * @return false when no token is allowed (the constraint can no longer be satisfied)
     */
    boolean allowedTokens(int[] words);

    /**
     * Advances past {@code token}, the one sampled under the last mask.
     *
     * @throws IllegalStateException if the constraint does not allow {@code token} here
     */
    void consume(int token);

    /** Why the constraint failed, or null while it has not. */
    String error();

    /** Frees the constraint's native state. Idempotent. */
    @Override
    void close();
}
