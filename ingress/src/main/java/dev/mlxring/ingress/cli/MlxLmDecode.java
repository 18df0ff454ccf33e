package dev.mlxring.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.mlx.ProjectHome;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * {@code bench decode}'s mlx-lm side: {@code scripts/bench/mlxlm_bench.py --serve} in the project
 * venv, the model loaded and warmed up once, then one run per {@link #run} (the script's
 * {@code stream_generate} timings, the prompt ids from a file so both engines read the same). Its
 * stderr goes to a log file whose tail a failure quotes; a missing line within
 * {@value #TIMEOUT_S} s is a failure, never a hang.
 */
final class MlxLmDecode implements AutoCloseable {
    /** One run as the script reported it. */
    record Result(int promptTokens, int genTokens, double promptSeconds, double genSeconds, int[] tokens) {}

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long TIMEOUT_S = 600;
    private static final String EOF = "\u0000EOF";

    private final Process process;
    private final Writer stdin;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final Path log;
    private final JsonNode header;

    private MlxLmDecode(Process process, Path log) throws IOException, InterruptedException {
        this.process = process;
        this.log = log;
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
                "mlxlm-decode-stdout");
        reader.setDaemon(true);
        reader.start();
        this.header = next("header");
    }

    /** Starts the script on {@code model} with the prompt ids in {@code promptFile}; returns once it has warmed up. */
    static MlxLmDecode start(
            Path model, Path promptFile, int promptTokens, int genTokens, int warmup, int prefillStepSize, Path log)
            throws IOException, InterruptedException {
        Path python = ProjectHome.python();
        if (!Files.isExecutable(python)) {
            throw new IllegalStateException("mlx-lm needs the project venv (" + python + "); or pass --no-mlx-lm");
        }
        List<String> cmd = List.of(
                python.toString(),
                ProjectHome.get().resolve("scripts/bench/mlxlm_bench.py").toString(),
                "--model",
                model.toString(),
                "--prompt-tokens",
                Integer.toString(promptTokens),
                "--gen-tokens",
                Integer.toString(genTokens),
                "--runs",
                "1",
                "--prompt-file",
                promptFile.toString(),
                "--warmup",
                Integer.toString(warmup),
                "--prefill-step-size",
                Integer.toString(prefillStepSize),
                "--serve");
        Files.createDirectories(log.getParent());
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(log.toFile());
        pb.environment().put("PYTHONUNBUFFERED", "1");
        pb.environment().put("HF_HUB_OFFLINE", "1");
        pb.environment().put("TRANSFORMERS_OFFLINE", "1");
        return new MlxLmDecode(pb.start(), log);
    }

    long pid() {
        return process.pid();
    }

    /** mlx and mlx-lm's versions, as the script's header gave them. */
    String versions() {
        return "mlx " + header.path("mlx_version").asText("?") + ", mlx-lm "
                + header.path("mlx_lm_version").asText("?");
    }

    Result run() throws IOException, InterruptedException {
        stdin.write("run\n");
        stdin.flush();
        JsonNode r = next("run");
        return new Result(
                r.get("prompt_tokens").asInt(),
                r.get("generation_tokens").asInt(),
                r.get("prompt_time_s").asDouble(),
                r.get("generation_time_s").asDouble(),
                JSON.convertValue(r.get("tokens"), int[].class));
    }

    private JsonNode next(String kind) throws IOException, InterruptedException {
        String line = lines.poll(TIMEOUT_S, TimeUnit.SECONDS);
        while (line != null && !line.equals(EOF) && !line.startsWith("{")) {
            line = lines.poll(TIMEOUT_S, TimeUnit.SECONDS); // a stray print of a library
        }
        if (line == null) {
            throw new IllegalStateException("mlx-lm gave no '" + kind + "' line within " + TIMEOUT_S + " s" + tail());
        }
        if (line.equals(EOF)) {
            throw new IllegalStateException("mlx-lm exited before its '" + kind + "' line" + tail());
        }
        JsonNode node = JSON.readTree(line);
        if (!kind.equals(node.path("kind").asText())) {
            throw new IllegalStateException(
                    "mlx-lm sent '" + node.path("kind").asText() + "', expected '" + kind + "'");
        }
        return node;
    }

    private String tail() throws InterruptedException {
        process.waitFor(2, TimeUnit.SECONDS);
        try {
            String err = Files.readString(log, StandardCharsets.UTF_8);
            return " (log " + log + "): " + err.substring(Math.max(0, err.length() - 1000));
        } catch (IOException e) {
            return " (log " + log + ")";
        }
    }

    @Override
    public void close() throws InterruptedException {
        try {
            stdin.write("quit\n");
            stdin.close();
        } catch (IOException e) {
            // gone already
        }
        if (!process.waitFor(20, TimeUnit.SECONDS)) {
            process.destroyForcibly();
        }
    }
}
