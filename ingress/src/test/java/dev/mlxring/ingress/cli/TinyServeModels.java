package dev.mlxring.ingress.cli;

import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.stream.Stream;

/**
 * Tiny random-weight models the server can load: the {@code make_tiny_models.py} cells (mlx-lm's
 * own classes, SmolLM2's vocabulary; built once into {@code build/oracle/models}, idempotent) each
 * copied into a folder of its own together with the default model's tokenizer files, so that
 * chat templates and detokenizing work as for a real model.
 */
final class TinyServeModels {
    /** The default model's files a tiny model borrows to become servable. */
    static final List<String> TOKENIZER_FILES =
            List.of("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json");

    private TinyServeModels() {}

    /** {@link #build(Path, List)} for one cell; returns {@code folder/<cell>}. */
    static Path build(Path folder, String cell) throws IOException {
        build(folder, List.of(cell));
        return folder.resolve(cell);
    }

    /**
     * Builds {@code cells} (names known to {@code make_tiny_models.py}) and writes each to
     * {@code folder/<cell>} with the default model's tokenizer, replacing the files there.
     */
    static void build(Path folder, List<String> cells) throws IOException {
        Path home = ProjectHome.get();
        Path built = home.resolve("build/oracle/models");
        PythonScript.run(
                "oracle/make_tiny_models.py",
                600,
                List.of("--out", built.toString(), "--only", String.join(",", cells)));
        Path tokenizer = home.resolve(GenerateCommand.DEFAULT_MODEL);
        for (String cell : cells) {
            Path dir = folder.resolve(cell);
            Files.createDirectories(dir);
            try (Stream<Path> files = Files.list(built.resolve(cell))) {
                for (Path f : files.filter(Files::isRegularFile).toList()) {
                    Files.copy(f, dir.resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
                }
            }
            for (String name : TOKENIZER_FILES) {
                Files.copy(tokenizer.resolve(name), dir.resolve(name), StandardCopyOption.REPLACE_EXISTING);
            }
        }
    }
}
