package dev.mlxring.pipeline;

/**
 * {@link Engine#submit} refused: the engine is closing or a stage thread is gone, so the request
 * could never finish (HTTP 503). The message says which.
 */
public final class EngineUnavailableException extends IllegalStateException {
    public EngineUnavailableException(String message) {
        super(message);
    }
}
