package dev.mlxring.ingress.pool;

import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;

/**
 * One model a server may serve.
 *
 * @param name the id requests name it by ({@code model}) and {@code /v1/models} lists
 * @param dir its MLX model directory
 * @param pinned never unloaded (neither for room nor by {@code --model-ttl})
 * @param flags per-model values of {@code serve} flags, by flag name ({@code --kv-bits} → "8"),
 *     over the command line's
 */
public record ModelSpec(String name, Path dir, boolean pinned, Map<String, String> flags) {
    public ModelSpec {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(dir, "dir");
        flags = Map.copyOf(flags);
        if (name.isBlank()) {
            throw new IllegalArgumentException("a model name must not be blank");
        }
    }

    /** A model with the command line's flags. */
    public static ModelSpec of(String name, Path dir, boolean pinned) {
        return new ModelSpec(name, dir, pinned, Map.of());
    }
}
