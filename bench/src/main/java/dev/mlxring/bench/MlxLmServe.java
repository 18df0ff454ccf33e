package dev.mlxring.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The mlx-lm side of a decode benchmark: {@code scripts/bench/mlxlm_bench.py --serve} in a Python
 * that has mlx-lm, the model loaded and warmed up once (its {@link #header()} line), then one
 * timed {@code stream_generate} per {@link #run()}, over the prompt ids of a file so both engines
 * read the same. Its stderr goes to a log file whose tail a failure quotes; a line not read within
 * the timeout, an early exit or an unexpected line is an {@link IllegalStateException}, never a
 * hang. A line that is not JSON (a library's stray print) is copied to stderr and skipped.
 * Used by {@code bench decode} and perf's {@code DecodeBenchmark}; one thread at a time.
 */
public final class MlxLmServe implements AutoCloseable {
    /**
     * What the script runs.
     *
     * @param model the model folder
     * @param promptFile the prompt ids, one JSON array, that both engines read
     * @param promptTokens the prompt's length in tokens
     * @param genTokens tokens each run generates
     * @param runs the script's {@code --runs} (not read in {@code --serve} mode, which runs per command)
     * @param seed the script's prompt seed; null = the script's default
     * @param warmup warm-up generations before the header
     * @param prefillStepSize prompt tokens per prefill chunk
     */
    public record Script(
            Path model,
            Path promptFile,
            int promptTokens,
            int genTokens,
            int runs,
            Long seed,
            int warmup,
            int prefillStepSize) {
        public Script {
            Objects.requireNonNull(model, "model");
            Objects.requireNonNull(promptFile, "promptFile");
        }

        /** The script's command-line flags, {@code --serve} last. */
        List<String> flags() {
            List<String> out = new ArrayList<>(List.of(
                    "--model",
                    model.toString(),
                    "--prompt-tokens",
                    Integer.toString(promptTokens),
                    "--gen-tokens",
                    Integer.toString(genTokens),
                    "--runs",
                    Integer.toString(runs)));
            if (seed != null) {
                out.addAll(List.of("--seed", seed.toString()));
            }
            out.addAll(List.of(
                    "--prompt-file",
                    promptFile.toString(),
                    "--warmup",
                    Integer.toString(warmup),
                    "--prefill-step-size",
                    Integer.toString(prefillStepSize),
                    "--serve"));
            return out;
        }
    }

    /**
     * One run as the script reported it: {@code stream_generate}'s prompt and generation rates and
     * times, MLX's peak memory, and the generated ids.
     */
    public record Run(
            int promptTokens,
            int genTokens,
            double promptTps,
            double genTps,
            double promptSeconds,
            double genSeconds,
            long peakMemoryBytes,
            int[] tokens) {}

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String EOF = "\u0000EOF";
    private static final long CLOSE_WAIT_S = 30;
    private static final int LOG_TAIL_CHARS = 4000;

    private final Process process;
    private final Writer stdin;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final Path log;
    private final long lineTimeoutNs;
    private final JsonNode header;
    private int runs;

    private MlxLmServe(Process process, Path log, long lineTimeoutNs) throws IOException, InterruptedException {
        this.process = process;
        this.log = log;
        this.lineTimeoutNs = lineTimeoutNs;
        this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        Thread reader = new Thread(
                () -> {
                    try (BufferedReader r = new BufferedReader(
                            new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                        for (String line; (line = r.readLine()) != null; ) {
                            lines.add(line);
                        }
                    } catch (IOException e) {
                        // the process went away: EOF tells the waiting side
                    } finally {
                        lines.add(EOF);
                    }
                },
                "mlxlm-stdout");
        reader.setDaemon(true);
        reader.start();
        this.header = next("header");
    }

    /**
     * Starts {@code script} ({@code mlxlm_bench.py}) under {@code python} as {@code what} says,
     * its stderr to {@code log} (its folder created); returns once the script has loaded the model,
     * warmed up and sent its header.
     *
     * @param lineTimeoutNs how long to wait for each line (the header, each run) before failing
     * @throws IllegalStateException when {@code python} is not executable, or the header does not come
     */
    public static MlxLmServe start(Path python, Path script, Script what, Path log, long lineTimeoutNs)
            throws IOException, InterruptedException {
        if (!Files.isExecutable(python)) {
            throw new IllegalStateException("mlx-lm needs the project venv (" + python + ")");
        }
        List<String> cmd = new ArrayList<>(List.of(python.toString(), script.toString()));
        cmd.addAll(what.flags());
        Files.createDirectories(log.toAbsolutePath().getParent());
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(log.toFile());
        pb.environment().put("PYTHONIOENCODING", "utf-8");
        pb.environment().put("PYTHONUNBUFFERED", "1");
        pb.environment().put("HF_HUB_OFFLINE", "1");
        pb.environment().put("TRANSFORMERS_OFFLINE", "1");
        return new MlxLmServe(pb.start(), log, lineTimeoutNs);
    }

    /** The script's header: versions ({@code mlx_version}, {@code mlx_lm_version}, {@code python_version}), the prompt ids. */
    public JsonNode header() {
        return header;
    }

    /** mlx and mlx-lm's versions, as the header gave them. */
    public String versions() {
        return "mlx " + header.path("mlx_version").asText("?") + ", mlx-lm "
                + header.path("mlx_lm_version").asText("?");
    }

    public long pid() {
        return process.pid();
    }

    /**
     * One timed run.
     *
     * @throws IllegalStateException when the script answers another run than the next, exits, or
     *     is silent past the timeout
     */
    public Run run() throws IOException, InterruptedException {
        stdin.write("run\n");
        stdin.flush();
        JsonNode r = next("run");
        if (r.path("run").asInt(-1) != runs) {
            throw new IllegalStateException("mlx-lm answered run " + r.path("run") + ", expected " + runs);
        }
        runs++;
        return new Run(
                r.get("prompt_tokens").asInt(),
                r.get("generation_tokens").asInt(),
                r.get("prompt_tps").asDouble(),
                r.get("generation_tps").asDouble(),
                r.get("prompt_time_s").asDouble(),
                r.get("generation_time_s").asDouble(),
                r.get("peak_memory").asLong(),
                JSON.convertValue(r.get("tokens"), int[].class));
    }

    private JsonNode next(String kind) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + lineTimeoutNs;
        while (true) {
            long left = deadline - System.nanoTime();
            String line = left > 0 ? lines.poll(left, TimeUnit.NANOSECONDS) : null;
            if (line == null) {
                throw new IllegalStateException("mlx-lm gave no '" + kind + "' line within "
                        + TimeUnit.NANOSECONDS.toSeconds(lineTimeoutNs) + " s" + stderrTail());
            }
            if (line.equals(EOF)) {
                throw new IllegalStateException("mlx-lm exited before its '" + kind + "' line" + stderrTail());
            }
            if (!line.startsWith("{")) {
                System.err.println("[mlx-lm] " + line);
                continue;
            }
            JsonNode node = JSON.readTree(line);
            if (!kind.equals(node.path("kind").asText())) {
                throw new IllegalStateException(
                        "mlx-lm sent '" + node.path("kind").asText() + "', expected '" + kind + "'");
            }
            return node;
        }
    }

    private String stderrTail() throws InterruptedException {
        process.waitFor(2, TimeUnit.SECONDS);
        String exit = " (exit " + (process.isAlive() ? "-" : Integer.toString(process.exitValue())) + ", log " + log;
        try {
            String err = Files.readString(log, StandardCharsets.UTF_8);
            return exit + ")\n--- stderr tail ---\n" + err.substring(Math.max(0, err.length() - LOG_TAIL_CHARS));
        } catch (IOException e) {
            return exit + ")";
        }
    }

    /** Asks the script to quit; kills it if it has not within {@value #CLOSE_WAIT_S} s. */
    @Override
    public void close() throws InterruptedException {
        try {
            stdin.write("quit\n");
            stdin.close();
        } catch (IOException e) {
            // gone already
        }
        if (!process.waitFor(CLOSE_WAIT_S, TimeUnit.SECONDS)) {
            process.destroyForcibly();
        }
    }
}
