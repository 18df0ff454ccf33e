package dev.mlxring.pycompat;

/**
 * Marks a host's own stand-in for Python's {@code None}, for hosts where Java {@code null} already
 * means something else (a template engine's undefined value). This package treats such a value
 * exactly as it treats {@code null}: type {@code NoneType}, falsy, {@code repr} {@code None}, JSON
 * {@code null}. Implementations should print as {@code None} from {@link Object#toString()}.
 */
public interface NoneValue {}
