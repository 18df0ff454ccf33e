package dev.mlxring.mlx;

/** An error raised inside MLX (or the shim), carrying MLX's own message. */
public final class MlxException extends RuntimeException {
    public MlxException(String message) {
        super(message);
    }
}
