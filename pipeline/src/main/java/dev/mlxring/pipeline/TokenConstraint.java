package dev.mlxring.pipeline;

/**
 * One request's constraint on the tokens it may generate (a JSON schema, a grammar, a forced tool
 * call), applied by exec as a mask on the logits between the model and the sampler. Plan-stage
 * builds one instance per request and hands it to exec through {@link ExecutionPlan#constraint()};
 * from then on exec owns it: it is driven on the exec thread only, in this order per generated
 * token — {@link #allowedTokens} for the next token, then, once that token is sampled,
 * {@link #consume} — and exec calls {@link #close()} exactly once when the request's row ends
 * (finished, cancelled or failed).
 *
 * <p>A constraint that is complete allows only the end-of-sequence tokens, so the row ends
 * normally on one of them. A constraint that can no longer be satisfied answers
 * {@link #allowedTokens} with false; the row then ends with a failure naming {@link #name()} and
 * {@link #error()}, and other requests are unaffected.
 */
public interface TokenConstraint extends AutoCloseable {
    /**
     * Fills {@code words} with the set of tokens allowed as the next token: bit {@code t % 32} of
     * {@code words[t / 32]} set means token {@code t} is allowed. {@code words.length} is
     * {@code ceil(vocab / 32)} for the model's vocabulary of {@code vocab} logits; exec clears the
     * words before each call, and bits at or beyond {@code vocab} are ignored (those tokens are
     * never allowed).
     *
     * @return false when no token is allowed (the constraint can no longer be satisfied); the
     *     words are then not read
     */
    boolean allowedTokens(int[] words);

    /**
     * Advances past {@code token}, the token sampled under the last {@link #allowedTokens} mask.
     *
     * @throws IllegalStateException if {@code token} was not allowed
     */
    void consume(int token);

    /** Why the constraint failed (a parser or grammar error), or null while it has not. */
    String error();

    /** What the constraint is, for error messages (e.g. {@code "json_schema 'person'"}). */
    default String name() {
        return "token constraint";
    }

    /** Frees what the constraint holds; called once, by exec, when the request's row ends. */
    @Override
    void close();
}
