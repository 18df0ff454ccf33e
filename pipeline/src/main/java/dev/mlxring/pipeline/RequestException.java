package dev.mlxring.pipeline;

/** A stage rejecting a request for a reason the client can fix or must be told (never a crash). */
public final class RequestException extends Exception {
    private final Outcome.ErrorType type;

    public RequestException(Outcome.ErrorType type, String message) {
        super(message);
        this.type = type;
    }

    public Outcome.ErrorType type() {
        return type;
    }
}
