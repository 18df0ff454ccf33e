package dev.mlxring.pipeline;

/**
 * sink-stage's per-session state: committed token ids in, text out. Incremental detokenization,
 * stop strings (held back until decided) and reasoning separation live behind this. Used only
 * on the sink thread.
 */
public interface TextSink {
    /**
     * Adds one committed token and writes the newly decided text into {@code span}.
     *
     * @return true when a stop string matched: the session ends with finish reason "stop" and
     *     later tokens are ignored
     */
    boolean onToken(int tokenId, CommittedSpan span);

    /**
     * Ends the text of a session that exec completed (never called after a stop-string match).
     *
     * @param finishReason exec's reason: {@code "stop"} when a stop token (EOS) ended generation,
     *     {@code "length"} at the token limit; the sink decides from it whether held-back text is
     *     flushed into {@code span} or discarded
     * @return true when the flushed text completed a stop string: the session's finish reason
     *     becomes {@code "stop"}
     */
    boolean finish(String finishReason, CommittedSpan span);

    /** Opens one session's text state. */
    @FunctionalInterface
    interface Factory {
        TextSink open(ExecutionPlan plan);
    }
}
