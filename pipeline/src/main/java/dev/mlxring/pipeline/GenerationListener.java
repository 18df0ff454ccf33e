package dev.mlxring.pipeline;

/**
 * Receives a session's output on the sink thread: zero or more {@link #onCommitted} calls, then
 * exactly one {@link #onComplete}. Callbacks must not block: a slow consumer should return and
 * {@link Session#release(int) release} credits later (set {@link #autoRelease()} to false); the
 * engine pauses the session's row while it holds no credits and cancels it after the idle
 * deadline.
 */
public interface GenerationListener {
    /**
     * One committed token's span, in order; the span is reused after this returns. The last call
     * may be the final span, whose {@link CommittedSpan#tokenId} is -1 (no token: text the sink
     * flushed at the end).
     */
    void onCommitted(Session session, CommittedSpan span);

    void onComplete(Session session, Outcome outcome);

    /** True: each span's credit is returned when {@link #onCommitted} returns. */
    default boolean autoRelease() {
        return true;
    }
}
