package dev.mlxring.prep;

import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs the oracle scripts under {@code scripts/oracle/} ({@code tokenize_oracle.py}, {@code
 * chat_template_oracle.py}) with the project venv's Python. Any failure to run one is a test
 * failure with a message saying what to fix, never a skip.
 */
final class PythonOracle {

    static final ObjectMapper JSON = new ObjectMapper();

    private PythonOracle() {}

    /** Project root: {@code -Dmlxring.home} (set by the pom's argLine), else the dir above with jvm.args. */
    static Path root() {
        String home = System.getProperty("mlxring.home");
        if (home != null && !home.isBlank() && Files.isRegularFile(Path.of(home, "jvm.args"))) {
            return Path.of(home).toAbsolutePath();
        }
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("jvm.args"))) {
                return p;
            }
        }
        return fail("Cannot find the mlx-ring root: -Dmlxring.home is unset/invalid (" + home
                + ") and no directory above " + Path.of("").toAbsolutePath() + " contains jvm.args");
    }

    static Path python() {
        Path py = root().resolve(".venv/bin/python");
        if (!Files.isExecutable(py)) {
            fail("Python oracle unavailable: " + py + " does not exist. Create the venv first "
                    + "(./mlx-ring setup, or python3 -m venv .venv && .venv/bin/pip install -r requirements.txt)");
        }
        return py;
    }

    static Path script() {
        return script("tokenize_oracle.py");
    }

    static Path script(String name) {
        Path s = root().resolve("scripts/oracle").resolve(name);
        if (!Files.isRegularFile(s)) {
            fail("Python oracle script missing: " + s);
        }
        return s;
    }

    /** Runs the tokenizer oracle with {@code args}; returns stdout, fails the test on any error. */
    static String run(Path workDir, String... args) {
        return runScript("tokenize_oracle.py", workDir, args);
    }

    /** Runs {@code scripts/oracle/<scriptName>} with {@code args}; returns stdout, fails the test on any error. */
    static String runScript(String scriptName, Path workDir, String... args) {
        List<String> cmd =
                new ArrayList<>(List.of(python().toString(), script(scriptName).toString()));
        cmd.addAll(List.of(args));
        try {
            Files.createDirectories(workDir);
            Path out = Files.createTempFile(workDir, "oracle", ".out");
            Path err = Files.createTempFile(workDir, "oracle", ".err");
            ProcessBuilder pb =
                    new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
            pb.environment().put("PYTHONIOENCODING", "utf-8");
            pb.environment().put("HF_HUB_OFFLINE", "1");
            Process p = pb.start();
            if (!p.waitFor(300, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                fail("Python oracle timed out after 300 s: " + String.join(" ", cmd));
            }
            String stdout = Files.readString(out, StandardCharsets.UTF_8);
            String stderr = Files.readString(err, StandardCharsets.UTF_8);
            if (p.exitValue() != 0) {
                fail("Python oracle failed (exit " + p.exitValue() + "): " + String.join(" ", cmd)
                        + "\n--- stderr ---\n" + stderr + "\n--- stdout (head) ---\n"
                        + stdout.substring(0, Math.min(2000, stdout.length())));
            }
            return stdout;
        } catch (IOException e) {
            return fail("Python oracle could not be started: " + String.join(" ", cmd) + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return fail("interrupted while running the Python oracle", e);
        }
    }

    static JsonNode runJson(Path workDir, String... args) {
        return parseJson(run(workDir, args));
    }

    static JsonNode runScriptJson(String scriptName, Path workDir, String... args) {
        return parseJson(runScript(scriptName, workDir, args));
    }

    private static JsonNode parseJson(String stdout) {
        try {
            return JSON.readTree(stdout);
        } catch (IOException e) {
            return fail(
                    "Python oracle printed no valid JSON: " + e.getMessage() + "\n"
                            + stdout.substring(0, Math.min(2000, stdout.length())),
                    e);
        }
    }

    /** Trains the tiny byte-level BPE fixture into {@code dir} (tokenizer.json + configs). */
    static Path buildFixture(Path dir) {
        run(dir.getParent(), "--build-fixture", dir.toString());
        if (!Files.isRegularFile(dir.resolve("tokenizer.json"))) {
            fail("Python oracle --build-fixture wrote no " + dir.resolve("tokenizer.json"));
        }
        return dir;
    }
}
