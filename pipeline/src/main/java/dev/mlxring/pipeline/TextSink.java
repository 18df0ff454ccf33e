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

    /** Flushes held-back text at the end of the session (not after a stop-string match). */
    void finish(CommittedSpan span);

    /** Opens one session's text state. */
    @FunctionalInterface
    interface Factory {
        TextSink open(ExecutionPlan plan);
    }
}
