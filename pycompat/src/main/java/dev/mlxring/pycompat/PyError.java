package dev.mlxring.pycompat;

/**
 * What Python raises as a {@code ValueError} or {@code TypeError} inside one of this package's
 * routines (a str method given a bad argument, a value {@code json.dumps} cannot encode). The
 * message is Python's wording, without the exception's type name.
 */
public final class PyError extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public PyError(String message) {
        super(message);
    }
}
