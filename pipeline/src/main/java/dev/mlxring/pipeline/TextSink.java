package dev.mlxring.pipeline;

/**
 * sink-stage's per-session state: committed token ids in, text out. Incremental detokenization,
 * stop strings (held back until decided), reasoning separation and tool-call parsing live behind
 * this. Used only on the sink thread.
 *
 * <p>Call sequence for one session: {@link #onToken} once per committed token, until it returns
 * true or exec completes the session; then, if the session completed ({@link Lifecycle#COMPLETED}),
 * exactly one {@link #finish}, also after {@code onToken} returned true. A session that is
 * cancelled or fails gets no {@code finish}.
 */
public interface TextSink {
    /**
     * Adds one committed token and writes the newly decided text (and any tool calls it
     * completed) into {@code span}.
     *
     * @return true when the sink ended the text (a stop string matched): the engine stops the
     *     session, later tokens are not passed in, and {@link #finish} follows with {@code "stop"}
     */
    boolean onToken(int tokenId, CommittedSpan span);

    /**
     * Ends the text of a completed session and decides its final finish reason. What is still
     * held back is flushed into {@code span} or discarded, and tool calls still open are parsed into
     * {@code span.toolCalls}; the engine delivers {@code span} if it carries anything.
     *
     * @param finishReason the reason so far: {@code "stop"} when a stop token (EOS) ended
     *     generation or {@link #onToken} returned true, {@code "length"} at the token limit
     * @return the session's finish reason: {@code finishReason} unchanged, {@code "stop"} when
     *     the flushed text completed a stop string, or {@code "tool_calls"} when the reason would
     *     be {@code "stop"} and the output made a tool call (mlx_lm.server's rule). Never null
     */
    String finish(String finishReason, CommittedSpan span);

    /**
     * The request's stop string that ended the text (matched in the text or as its token
     * sequence), or null when none did. Read after {@link #finish}; Anthropic's {@code
     * stop_sequence} reports it.
     */
    default String matchedStop() {
        return null;
    }

    /** Opens one session's text state. */
    @FunctionalInterface
    interface Factory {
        TextSink open(ExecutionPlan plan);
    }
}
