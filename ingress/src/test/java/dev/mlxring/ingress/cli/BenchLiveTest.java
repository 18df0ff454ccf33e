package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.mlx.ProjectHome;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code mlx-ring bench serve} end to end, short: our server and {@code mlx_lm.server} on the
 * default model, two concurrency levels, through {@link Main} as the launcher runs it; the results
 * folder holds the JSON (every request completed on both targets, tokens counted, latencies
 * present) and the Markdown table, and the PNG plots when the venv can draw them (else the report
 * says why).
 */
class BenchLiveTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @RegisterExtension
    static final ServedModel OURS = ServedModel.serve();

    private static Process mlxLm;
    private static String mlxLmBase;

    @TempDir
    Path dir;

    @BeforeAll
    static void startMlxLmServer() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        mlxLmBase = "http://127.0.0.1:" + port;
        ProcessBuilder pb = new ProcessBuilder(
                        ProjectHome.python().toString(),
                        "-m",
                        "mlx_lm",
                        "server",
                        "--model",
                        ProjectHome.get().resolve(GenerateCommand.DEFAULT_MODEL).toString(),
                        "--host",
                        "127.0.0.1",
                        "--port",
                        Integer.toString(port))
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD);
        pb.environment().put("HF_HUB_OFFLINE", "1");
        pb.environment().put("TRANSFORMERS_OFFLINE", "1");
        mlxLm = pb.start();
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
        while (true) {
            if (!mlxLm.isAlive()) {
                throw new IllegalStateException("mlx_lm.server exited with " + mlxLm.exitValue());
            }
            try {
                HttpResponse<Void> r = ServedModel.HTTP.send(
                        HttpRequest.newBuilder(URI.create(mlxLmBase + "/v1/models"))
                                .timeout(Duration.ofSeconds(5))
                                .build(),
                        HttpResponse.BodyHandlers.discarding());
                if (r.statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                // not listening yet
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("mlx_lm.server did not answer /v1/models within 5 minutes");
            }
            Thread.sleep(250); // polling for the port to open; nothing to wait on instead
        }
    }

    @AfterAll
    static void stopMlxLmServer() throws InterruptedException {
        if (mlxLm != null) {
            mlxLm.destroy();
            if (!mlxLm.waitFor(20, TimeUnit.SECONDS)) {
                mlxLm.destroyForcibly();
            }
        }
    }

    @Test
    void benchServeComparesOursWithMlxLmServerIntoJsonMarkdownAndPlots() throws Exception {
        Path out = dir.resolve("results");
        ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        int status = Main.run(
                new String[] {
                    "bench", "serve",
                    "--target", "ours=" + OURS.base(),
                    "--target", "mlxlm=" + mlxLmBase + "/v1",
                    "--model", "mlxlm=default_model",
                    "--max-concurrency", "1,2",
                    "--workload", "random",
                    "--input-len", "24",
                    "--output-len", "6",
                    "--num-prompts", "4",
                    "--warmup", "1",
                    "--slo", "ttft=60000,tpot=60000",
                    "--out", out.toString()
                },
                new PrintStream(stdout, true, StandardCharsets.UTF_8),
                new PrintStream(stderr, true, StandardCharsets.UTF_8));
        String err = stderr.toString(StandardCharsets.UTF_8);
        assertEquals(0, status, err);
        JsonNode doc = JSON.readTree(out.resolve("results.json").toFile());
        assertEquals(1, doc.get("schema_version").asInt());
        assertTrue(
                doc.get("command").asText().startsWith("mlx-ring bench serve --target ours="),
                doc.get("command").asText());
        JsonNode results = doc.get("results");
        assertEquals(4, results.size(), results.toString());
        Set<String> rows = new TreeSet<>();
        for (JsonNode r : results) {
            rows.add(r.get("target").asText() + "@" + r.get("max_concurrency").asInt());
            assertEquals(4, r.get("completed").asInt(), r.toString());
            assertEquals(0, r.get("failed").asInt(), r.toString());
            assertTrue(r.get("total_output_tokens").asInt() >= 4, r.toString());
            assertTrue(r.get("total_input_tokens").asInt() >= 4 * 20, "usage prompt tokens: " + r);
            assertTrue(r.get("median_ttft_ms").asDouble() > 0, r.toString());
            assertTrue(r.get("mean_e2el_ms").asDouble() >= r.get("mean_ttft_ms").asDouble(), r.toString());
            assertTrue(r.get("output_throughput").asDouble() > 0, r.toString());
            assertEquals(
                    r.get("request_throughput").asDouble(),
                    r.get("request_goodput").asDouble(),
                    1e-9);
        }
        assertEquals(Set.of("mlxlm@1", "mlxlm@2", "ours@1", "ours@2"), rows);
        // Each target's /v1/models is recorded (mlx_lm.server's fails without a Hugging Face cache: then why)
        assertEquals(
                doc.at("/targets/0/model_id").asText(),
                doc.at("/targets/0/models/data/0/id").asText());
        JsonNode theirs = doc.at("/targets/1");
        assertTrue(
                theirs.get("models").isObject() || !theirs.get("models_error").isNull(), theirs.toString());
        assertEquals("default_model", theirs.get("model_id").asText());
        String md = Files.readString(out.resolve("results.md"));
        assertTrue(md.contains("| ours | 1 | 4 | 0 |") && md.contains("| mlxlm | 2 | 4 | 0 |"), md);
        assertTrue(stdout.toString(StandardCharsets.UTF_8).contains("| target | concurrency |"));
        assertTrue(err.contains("phase 4/4: round 1, max_concurrency=2, ours: 4/4 done, 0 failed"), err);
        String note = doc.get("plots_note").asText();
        assertTrue(md.contains(note), md);
        if (note.startsWith("Plots:")) {
            for (String png : List.of("throughput.png", "latency_cdf.png")) {
                byte[] head = Arrays.copyOf(Files.readAllBytes(out.resolve(png)), 4);
                assertEquals("\u0089PNG", new String(head, StandardCharsets.ISO_8859_1), png);
            }
        } else {
            assertTrue(note.startsWith("Plots not drawn: "), note);
        }
        List<String> left = new ArrayList<>();
        try (var files = Files.list(out)) {
            files.forEach(f -> left.add(f.getFileName().toString()));
        }
        assertTrue(left.containsAll(List.of("results.json", "results.md")), left.toString());
    }

    /** The other three APIs against our server: every request completes with usage-counted tokens and a TTFT. */
    @Test
    void completionsMessagesAndResponsesStreamsAreMeasured() throws Exception {
        for (String api : List.of("completions", "messages", "responses")) {
            Path out = dir.resolve(api);
            ByteArrayOutputStream stderr = new ByteArrayOutputStream();
            int status = Main.run(
                    new String[] {
                        "bench",
                        "serve",
                        "--target",
                        "ours=" + OURS.base(),
                        "--api",
                        api,
                        "--max-concurrency",
                        "2",
                        "--workload",
                        "prefix-shared",
                        "--prefix-count",
                        "1",
                        "--input-len",
                        "24",
                        "--output-len",
                        "5",
                        "--num-prompts",
                        "2",
                        "--warmup",
                        "0",
                        "--no-plots",
                        "--out",
                        out.toString()
                    },
                    new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                    new PrintStream(stderr, true, StandardCharsets.UTF_8));
            assertEquals(0, status, api + ": " + stderr.toString(StandardCharsets.UTF_8));
            JsonNode r = JSON.readTree(out.resolve("results.json").toFile()).at("/results/0");
            assertEquals(2, r.get("completed").asInt(), api + ": " + r);
            assertEquals(0, r.get("failed").asInt(), api + ": " + r);
            assertEquals(10, r.get("total_output_tokens").asInt(), api + ": the usage's 5 tokens each: " + r);
            assertTrue(r.get("total_input_tokens").asInt() >= 2 * 20, api + ": " + r);
            assertTrue(r.get("median_ttft_ms").asDouble() > 0, api + ": " + r);
            JsonNode requests =
                    JSON.readTree(out.resolve("results.json").toFile()).get("requests");
            for (JsonNode q : requests) {
                assertTrue(q.get("text_events").asInt() >= 1, api + ": " + q);
                assertEquals(5, q.get("usage_output_tokens").asInt(), api + ": " + q);
            }
        }
    }

    /**
     * bench engine: a multi-turn workload in-process through LocalEngine, written as bench serve's
     * results: the second turn carries the first's answer (its prompt is longer by more than the
     * answer), TTFT by turn, and the pipeline's hand-offs for every completed request and token.
     */
    @Test
    void benchEngineRunsTheWorkloadInProcess() throws Exception {
        Path out = dir.resolve("engine");
        ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        int status = Main.run(
                new String[] {
                    "bench",
                    "engine",
                    "--decode-concurrency",
                    "2",
                    "--max-concurrency",
                    "1,2",
                    "--workload",
                    "multi-turn",
                    "--turns",
                    "2",
                    "--input-len",
                    "24",
                    "--output-len",
                    "5",
                    "--num-prompts",
                    "1",
                    "--warmup",
                    "1",
                    "--no-plots",
                    "--out",
                    out.toString()
                },
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(stderr, true, StandardCharsets.UTF_8));
        assertEquals(0, status, stderr.toString(StandardCharsets.UTF_8));
        JsonNode doc = JSON.readTree(out.resolve("results.json").toFile());
        assertEquals("mlx-ring bench engine", doc.get("tool").asText());
        assertEquals("in-process://engine", doc.at("/targets/0/base_url").asText());
        assertEquals("smollm2-135m-instruct", doc.at("/targets/0/model_id").asText());
        assertEquals(2, doc.get("results").size());
        for (JsonNode r : doc.get("results")) {
            assertEquals("engine", r.get("target").asText());
            assertEquals(2, r.get("completed").asInt(), r.toString());
            assertEquals(10, r.get("total_output_tokens").asInt(), r.toString());
            assertTrue(r.get("total_input_tokens").asInt() >= 2 * 20, r.toString());
            assertTrue(r.get("median_ttft_ms").asDouble() > 0, r.toString());
            assertTrue(r.get("mean_e2el_ms").asDouble() >= r.get("mean_ttft_ms").asDouble(), r.toString());
            // The JVM allocates while it generates: engine, sink and client together, per output token
            assertTrue(r.get("allocated_bytes").asLong() > 0, r.toString());
            assertEquals(
                    r.get("allocated_bytes").asDouble() / 10,
                    r.get("allocated_bytes_per_output_token").asDouble(),
                    1e-6);
            JsonNode turns = r.get("ttft_by_turn");
            assertEquals(2, turns.size(), r.toString());
            assertEquals(1, turns.get(1).get("completed").asInt(), r.toString());
            assertTrue(
                    turns.get(1).get("mean_prompt_tokens").asDouble()
                            > turns.get(0).get("mean_prompt_tokens").asDouble() + 5,
                    "turn 2 resends turn 1 and its 5-token answer: " + turns);
            JsonNode stages = r.get("stage_latencies_us");
            for (String firstToken : List.of(
                    "submit_to_prep",
                    "prep_to_plan",
                    "plan_to_exec",
                    "exec_to_first_token",
                    "first_token_to_sink",
                    "sink_to_listener")) {
                assertEquals(2, stages.at("/" + firstToken + "/count").asInt(), firstToken + ": " + stages);
            }
            for (String perToken : List.of("token_exec_to_sink", "token_sink_to_listener")) {
                assertEquals(10, stages.at("/" + perToken + "/count").asInt(), perToken + ": " + stages);
                assertTrue(stages.at("/" + perToken + "/p99_us").asDouble() >= 0, stages.toString());
            }
            assertTrue(stages.at("/exec_to_first_token/p50_us").asDouble() > 0, "prefill takes time: " + stages);
        }
        String md = Files.readString(out.resolve("results.md"));
        assertTrue(md.startsWith("# mlx-ring bench engine"), md);
        assertTrue(md.contains("| engine | 2 | exec_to_first_token | 2 |"), md);
        assertTrue(
                md.contains("(1 conversations of 2 turns)") && md.contains("| target | concurrency | turn 1 TTFT"), md);
    }
}
