package dev.mlxring.pipeline;

/**
 * A session's lifecycle (seed §12.4): {@code created → preparing → queued → running → settling →
 * terminal}, where terminal is exactly one of {@link #COMPLETED}, {@link #CANCELLED},
 * {@link #FAILED}. Every non-terminal state accepts cancellation.
 */
public enum Lifecycle {
    CREATED,
    PREPARING,
    QUEUED,
    RUNNING,
    SETTLING,
    COMPLETED,
    CANCELLED,
    FAILED;

    public boolean isTerminal() {
        return this == COMPLETED || this == CANCELLED || this == FAILED;
    }
}
