package dev.mlxring.pipeline;

import java.util.Objects;

/**
 * A text sink's refusal of a session's output, with the error type the session fails with (any
 * other exception a text sink throws fails it as {@link Outcome.ErrorType#INTERNAL}): e.g. a tool
 * call that a constrained row must make, cut off by {@code max_tokens} before it parses.
 */
public final class TextSinkFailure extends RuntimeException {
    private final Outcome.ErrorType type;

    /** @param message the whole error message the client sees, field first where a field is at fault */
    public TextSinkFailure(Outcome.ErrorType type, String message) {
        super(Objects.requireNonNull(message, "message"), null, false, false);
        this.type = Objects.requireNonNull(type, "type");
    }

    public Outcome.ErrorType type() {
        return type;
    }
}
