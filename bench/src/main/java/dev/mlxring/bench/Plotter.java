package dev.mlxring.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Draws a results folder's PNG plots with {@code scripts/bench/plot_bench.py} in the project venv,
 * installing {@code requirements-bench.txt} (matplotlib) into it first, as
 * {@code scripts/bench/decode.sh} does. Plotting never fails a run: whatever goes wrong (no venv,
 * no network for pip, a script error) comes back as the note the report prints instead of the
 * plots.
 */
public final class Plotter {
    private static final long PIP_TIMEOUT_S = 600;
    private static final long PLOT_TIMEOUT_S = 180;

    private Plotter() {}

    /** The project root: {@code -Dmlxring.home}, else the working directory. */
    static Path home() {
        String home = System.getProperty("mlxring.home");
        return Path.of(home != null && !home.isBlank() ? home : ".").toAbsolutePath();
    }

    /** Plots {@code dir}'s results JSON into {@code dir}; returns what the report says about the plots. */
    public static String plot(Path dir) {
        Path home = home();
        Path python = home.resolve(".venv/bin/python");
        Path script = home.resolve("scripts/bench/plot_bench.py");
        if (!Files.isExecutable(python) || !Files.isRegularFile(script)) {
            return "Plots not drawn: " + python + " or " + script + " is missing (run ./mlx-ring setup);"
                    + " plot later with: .venv/bin/python scripts/bench/plot_bench.py "
                    + dir.resolve(ResultsWriter.JSON_FILE)
                    + " " + dir;
        }
        try {
            Result have = exec(List.of(python.toString(), "-c", "import matplotlib"), home, 60);
            if (have.status != 0) {
                Result pip = exec(
                        List.of(
                                python.toString(),
                                "-m",
                                "pip",
                                "install",
                                "--disable-pip-version-check",
                                "-q",
                                "-r",
                                home.resolve("requirements-bench.txt").toString()),
                        home,
                        PIP_TIMEOUT_S);
                if (pip.status != 0) {
                    return "Plots not drawn: installing matplotlib (requirements-bench.txt) failed: " + pip.output;
                }
            }
            Result r = exec(
                    List.of(
                            python.toString(),
                            script.toString(),
                            dir.resolve(ResultsWriter.JSON_FILE).toString(),
                            dir.toString()),
                    home,
                    PLOT_TIMEOUT_S);
            if (r.status != 0) {
                return "Plots not drawn: plot_bench.py failed: " + r.output;
            }
            StringBuilder note = new StringBuilder("Plots:");
            for (String line : r.output.strip().split("\n")) {
                String name = Path.of(line.strip()).getFileName().toString();
                note.append(" ![").append(name).append("](").append(name).append(')');
            }
            return note.toString();
        } catch (IOException e) {
            return "Plots not drawn: " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "Plots not drawn: interrupted";
        }
    }

    private record Result(int status, String output) {}

    private static Result exec(List<String> command, Path dir, long timeoutS) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command)
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .start();
        p.getOutputStream().close();
        byte[][] out = new byte[1][];
        Thread reader = Thread.ofVirtual().start(() -> {
            try {
                out[0] = p.getInputStream().readAllBytes();
            } catch (IOException e) {
                out[0] = new byte[0];
            }
        });
        if (!p.waitFor(timeoutS, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            reader.join();
            return new Result(-1, "timed out after " + timeoutS + " s");
        }
        reader.join();
        String text = new String(out[0], StandardCharsets.UTF_8);
        if (text.length() > 2000) {
            text = text.substring(text.length() - 2000);
        }
        return new Result(p.exitValue(), text);
    }
}
