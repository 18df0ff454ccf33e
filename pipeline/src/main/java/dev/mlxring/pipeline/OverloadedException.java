package dev.mlxring.pipeline;

/** Thrown by {@link Engine#submit} when the request ring has no free slot: answer 429, retry later. */
public final class OverloadedException extends RuntimeException {
    public OverloadedException(String message) {
        super(message);
    }
}
