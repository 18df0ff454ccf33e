package dev.mlxring.prep.jinja;

/**
 * The errors of the render running on this thread that Jinjava would otherwise fold into its own:
 * the first {@code raise_exception} message and the first Python-semantics error (TypeError,
 * ValueError, UndefinedError). The caller clears them before a render and reads them after it.
 */
public final class RenderErrors {

    private RenderErrors() {}

    /** Thrown by {@code raise_exception(msg)}; carries the template's message. */
    static final class RaisedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        RaisedException(String message) {
            super(message);
        }
    }

    /** A Python error (TypeError/ValueError/UndefinedError) raised while evaluating a template expression. */
    static final class PyRuntimeError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        PyRuntimeError(String message) {
            super(message);
        }
    }

    /** The first {@code raise_exception} message of the render running on this thread. */
    private static final ThreadLocal<String> RAISED = new ThreadLocal<>();
    /** The first Python-semantics error of the render running on this thread. */
    private static final ThreadLocal<String> PY_ERROR = new ThreadLocal<>();

    /** Forgets this thread's errors: call before and after each render. */
    public static void clear() {
        RAISED.remove();
        PY_ERROR.remove();
    }

    /** The first {@code raise_exception} message since {@link #clear()} on this thread, or null. */
    public static String firstRaised() {
        return RAISED.get();
    }

    /** The first Python-semantics error message since {@link #clear()} on this thread, or null. */
    public static String firstPyError() {
        return PY_ERROR.get();
    }

    /** A {@link PyRuntimeError} to throw; the first one of a render is kept for {@link #firstPyError()}. */
    static PyRuntimeError pyError(String message) {
        if (PY_ERROR.get() == null) {
            PY_ERROR.set(message);
        }
        return new PyRuntimeError(message);
    }

    /** A {@link RaisedException} to throw for {@code raise_exception(message)}; the first is kept for {@link #firstRaised()}. */
    static RaisedException raise(String message) {
        if (RAISED.get() == null) {
            RAISED.set(message);
        }
        return new RaisedException(message);
    }
}
