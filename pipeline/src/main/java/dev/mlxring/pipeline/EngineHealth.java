package dev.mlxring.pipeline;

/**
 * Whether the engine can finish new work: every stage thread is running and the engine is not
 * closing. Not ready means {@link Engine#submit} refuses (HTTP 503) instead of accepting work that
 * would never complete.
 *
 * @param reason why it is not ready; null when ready
 */
public record EngineHealth(boolean ready, String reason) {
    static final EngineHealth READY = new EngineHealth(true, null);

    static EngineHealth notReady(String reason) {
        return new EngineHealth(false, reason);
    }
}
