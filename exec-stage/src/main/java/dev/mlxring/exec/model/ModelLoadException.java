package dev.mlxring.exec.model;

/** A model directory that cannot be loaded: missing files, malformed config, unsupported type. */
public final class ModelLoadException extends RuntimeException {
    public ModelLoadException(String message) {
        super(message);
    }
}
