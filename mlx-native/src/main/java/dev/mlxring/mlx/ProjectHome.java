package dev.mlxring.mlx;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Locates the mlx-ring checkout: {@code -Dmlxring.home}, then {@code $MLXRING_HOME}, then the
 * nearest directory above the working directory that holds {@code jvm.args}.
 */
public final class ProjectHome {
    private ProjectHome() {}

    public static Path get() {
        String prop = System.getProperty("mlxring.home");
        if (prop != null && !prop.isBlank()) {
            return Path.of(prop).toAbsolutePath().normalize();
        }
        String env = System.getenv("MLXRING_HOME");
        if (env != null && !env.isBlank()) {
            return Path.of(env).toAbsolutePath().normalize();
        }
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("jvm.args"))) {
                return p;
            }
        }
        throw new IllegalStateException(
                "cannot find the mlx-ring home: set -Dmlxring.home or MLXRING_HOME to the checkout");
    }

    /** The project's Python interpreter (the venv that carries mlx and mlx-lm). */
    public static Path python() {
        return get().resolve(".venv/bin/python");
    }
}
