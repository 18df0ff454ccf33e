package dev.mlxring.pipeline;

/**
 * The one terminal result of a session.
 *
 * @param finishReason for completed sessions: {@code stop} (EOS or a stop string), {@code length}, or
 *     {@code tool_calls} (as {@code stop}, when the output made a tool call)
 * @param errorType for failed sessions: {@link ErrorType}; null otherwise
 * @param message human-readable reason for cancelled and failed sessions
 * @param stopSequence for completed sessions ended by one of the request's stop strings: that
 *     string; null otherwise
 */
public record Outcome(
        Lifecycle state, String finishReason, ErrorType errorType, String message, Usage usage, String stopSequence) {

    /** Why a session failed; the HTTP layer maps these to status codes. */
    public enum ErrorType {
        /** The request itself is invalid (template error, bad field): HTTP 400. */
        INVALID_REQUEST,
        /**
         * The prompt, or the prompt plus the requested completion, does not fit the context (or
         * the operator's prompt limit): HTTP 400 with code {@code context_length_exceeded}.
         */
        CONTEXT_LENGTH_EXCEEDED,
        /** The engine refused a composition it cannot execute faithfully: HTTP 400 with the reason. */
        UNSUPPORTED,
        /** Capacity exhausted after acceptance: HTTP 503. */
        OVERLOADED,
        /** A bug or runtime failure (MLX error, worker death): HTTP 500. */
        INTERNAL
    }

    public Outcome {
        if (!state.isTerminal()) {
            throw new IllegalArgumentException("an outcome must be terminal, got " + state);
        }
    }

    /** An outcome that names no stop string. */
    public Outcome(Lifecycle state, String finishReason, ErrorType errorType, String message, Usage usage) {
        this(state, finishReason, errorType, message, usage, null);
    }

    public static Outcome completed(String finishReason, Usage usage) {
        return new Outcome(Lifecycle.COMPLETED, finishReason, null, null, usage, null);
    }

    /** A completed outcome that names the stop string which ended it. */
    public static Outcome completed(String finishReason, Usage usage, String stopSequence) {
        return new Outcome(Lifecycle.COMPLETED, finishReason, null, null, usage, stopSequence);
    }

    public static Outcome cancelled(String reason, Usage usage) {
        return new Outcome(Lifecycle.CANCELLED, null, null, reason, usage, null);
    }

    public static Outcome failed(ErrorType type, String message, Usage usage) {
        return new Outcome(Lifecycle.FAILED, null, type, message, usage, null);
    }
}
