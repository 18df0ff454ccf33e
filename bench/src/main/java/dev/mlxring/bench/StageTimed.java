package dev.mlxring.bench;

/**
 * A {@link RequestSender} that also measures the pipeline's hand-offs of the requests it sends
 * ({@code bench engine}'s, which sees the engine's stage times). The runner brackets each phase:
 * {@link #startPhase} before its first request, {@link #endPhase} after its last has ended;
 * requests outside a phase (the warm-up) are not recorded.
 */
public interface StageTimed {
    /** Starts recording into a fresh {@link StageLatencies}. */
    void startPhase();

    /** Stops recording; returns what was recorded since {@link #startPhase}. */
    StageLatencies endPhase();
}
