package dev.mlxring.sink;

import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import dev.mlxring.tokenizer.HfTokenizer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Runs {@code scripts/oracle/detokenize_oracle.py} (mlx-lm's own classes) and parses its JSON. */
final class Oracle {
    static final ObjectMapper JSON = new ObjectMapper();
    static final String DEFAULT_MODEL = "smollm2-135m-instruct";

    private Oracle() {}

    /** The default model directory; fails (never skips) when the set-up has not run. */
    static Path defaultModel() {
        Path dir = ProjectHome.get().resolve("models").resolve(DEFAULT_MODEL);
        if (!Files.isRegularFile(dir.resolve("tokenizer.json"))) {
            fail("default model missing: " + dir.resolve("tokenizer.json") + " does not exist; run ./mlx-ring setup");
        }
        return dir;
    }

    static HfTokenizer load(Path dir) {
        try {
            return HfTokenizer.load(dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Runs one mode ({@code --detok}, {@code --utf8}, {@code --server}) with {@code spec} as its JSON file. */
    static JsonNode run(String mode, Object spec, Path work) {
        try {
            Files.createDirectories(work);
            Path f = Files.createTempFile(work, "spec", ".json");
            JSON.writeValue(f.toFile(), spec);
            return parse(PythonScript.run("oracle/detokenize_oracle.py", 600, List.of(mode, f.toString())));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Builds the tokenizer fixtures (spm, spm_notrim, wordpiece, think) under {@code dir}. */
    static JsonNode buildFixtures(Path dir) {
        return parse(PythonScript.run(
                        "oracle/detokenize_oracle.py",
                        600,
                        List.of(
                                "--build-fixtures",
                                dir.toString(),
                                "--model",
                                defaultModel().toString())))
                .get("dirs");
    }

    private static JsonNode parse(String stdout) {
        try {
            return JSON.readTree(stdout);
        } catch (IOException e) {
            return fail("oracle printed no valid JSON: " + e.getMessage() + "\n"
                    + stdout.substring(0, Math.min(2000, stdout.length())));
        }
    }
}
