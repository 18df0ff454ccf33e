package dev.mlxring.mlx;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs one of the project's Python scripts with the project venv (the live mlx-lm oracle, the
 * side-by-side benchmark). Any failure to run becomes an exception whose message says what to
 * fix, never a silent fallback.
 */
public final class PythonScript {
    private PythonScript() {}

    /** Runs {@code scripts/<relativeScript>} with {@code args}; returns its stdout. */
    public static String run(String relativeScript, long timeoutSeconds, List<String> args) {
        Path home = ProjectHome.get();
        Path python = ProjectHome.python();
        if (!Files.isExecutable(python)) {
            throw new IllegalStateException("the project venv is missing (" + python + "): run ./mlx-ring setup");
        }
        Path script = home.resolve("scripts").resolve(relativeScript);
        if (!Files.isRegularFile(script)) {
            throw new IllegalStateException("script missing: " + script);
        }
        List<String> cmd = new ArrayList<>(List.of(python.toString(), script.toString()));
        cmd.addAll(args);
        try {
            Path out = Files.createTempFile("mlxring-py", ".out");
            Path err = Files.createTempFile("mlxring-py", ".err");
            try {
                ProcessBuilder pb =
                        new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
                pb.environment().put("PYTHONIOENCODING", "utf-8");
                pb.environment().put("HF_HUB_OFFLINE", "1");
                pb.environment().put("TRANSFORMERS_OFFLINE", "1");
                Process p = pb.start();
                if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                    throw new IllegalStateException(
                            "timed out after " + timeoutSeconds + " s: " + String.join(" ", cmd));
                }
                String stdout = Files.readString(out, StandardCharsets.UTF_8);
                if (p.exitValue() != 0) {
                    String stderr = Files.readString(err, StandardCharsets.UTF_8);
                    throw new IllegalStateException("exit " + p.exitValue() + ": " + String.join(" ", cmd)
                            + "\n--- stderr (tail) ---\n" + stderr.substring(Math.max(0, stderr.length() - 4000)));
                }
                return stdout;
            } finally {
                Files.deleteIfExists(out);
                Files.deleteIfExists(err);
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + String.join(" ", cmd) + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running " + script, e);
        }
    }
}
