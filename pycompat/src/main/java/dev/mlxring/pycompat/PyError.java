package dev.mlxring.pycompat;

/**
 * What Python raises as a {@code ValueError} or {@code TypeError} inside one of this package's
 * routines (a str method given a bad argument, a value {@code json.dumps} cannot encode). The
 * message is Python's wording, without the exception's type name. Not an IllegalArgumentException:
 * Jinjava turns one thrown by a method resolver into an undefined value.
 */
public final class PyError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public PyError(String message) {
        super(message);
    }
}
