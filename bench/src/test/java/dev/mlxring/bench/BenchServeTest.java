package dev.mlxring.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A whole {@code bench serve} run against two scripted SSE servers (the JDK's HTTP server, no
 * model): the results JSON's schema (vLLM's field names plus target and level, the machine, the
 * targets' /v1/models), the Markdown table, headers per target, the ABBA order the servers saw,
 * and failed requests counted by class.
 */
class BenchServeTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private final List<HttpServer> servers = new ArrayList<>();
    /** Which server answered each measured chat request, in arrival order. */
    private final List<String> arrivals = Collections.synchronizedList(new ArrayList<>());

    @AfterEach
    void stop() {
        servers.forEach(s -> s.stop(0));
    }

    /**
     * A server named {@code name}: /v1/models lists {@code name}-model; chat requests stream
     * {@code tokens} one-word chunks then a usage chunk, unless {@code failEvery} > 0 and the
     * request's number (from 1) is a multiple of it, which gets a 429.
     */
    private URI server(String name, int tokens, int failEvery, String requiredAuth) throws IOException {
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        s.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        AtomicInteger requests = new AtomicInteger();
        s.createContext(
                "/v1/models", ex -> reply(ex, 200, "{\"object\":\"list\",\"data\":[{\"id\":\"" + name + "-model\"}]}"));
        s.createContext("/v1/chat/completions", ex -> {
            JsonNode body = JSON.readTree(ex.getRequestBody());
            if (requiredAuth != null
                    && !requiredAuth.equals(ex.getRequestHeaders().getFirst("Authorization"))) {
                reply(ex, 401, "{\"error\":{\"message\":\"no key\"}}");
                return;
            }
            String user = body.path("messages").path(0).path("content").asText();
            if (!user.startsWith("Warm-up")) {
                arrivals.add(name);
            }
            int n = requests.incrementAndGet();
            if (failEvery > 0 && !user.startsWith("Warm-up") && n % failEvery == 0) {
                reply(ex, 429, "{\"error\":{\"message\":\"slow down\"}}");
                return;
            }
            ex.getResponseHeaders().add("Content-Type", "text/event-stream");
            ex.sendResponseHeaders(200, 0);
            try (OutputStream out = ex.getResponseBody()) {
                int max = Math.min(tokens, body.path("max_tokens").asInt());
                for (int i = 0; i < max; i++) {
                    out.write(("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" w" + i + "\"}}]}\n\n")
                            .getBytes(StandardCharsets.UTF_8));
                    out.flush();
                }
                out.write(("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":" + max
                                + "}}\n\ndata: [DONE]\n\n")
                        .getBytes(StandardCharsets.UTF_8));
            }
        });
        s.start();
        servers.add(s);
        return URI.create("http://127.0.0.1:" + s.getAddress().getPort());
    }

    private static void reply(HttpExchange ex, int status, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().add("Content-Type", "application/json");
        ex.sendResponseHeaders(status, b.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(b);
        }
    }

    private BenchOptions options(List<Target> targets, List<LoadLevel> levels, int prompts, int rounds) {
        Workloads.Params p = new Workloads.Params(LengthRange.fixed(16), LengthRange.fixed(6), prompts, 2, 1);
        return new BenchOptions(
                targets,
                ApiDialect.CHAT,
                levels,
                "random",
                p,
                Workloads.load("random", p),
                rounds,
                1,
                Slo.parse("ttft=60000,tpot=60000"),
                dir.resolve("out"),
                Duration.ofSeconds(30),
                Double.POSITIVE_INFINITY,
                false,
                "mlx-ring bench serve --test");
    }

    @Test
    void resultsJsonCarriesVllmFieldsTargetsLevelsAndTheMachine() throws Exception {
        URI a = server("a", 5, 0, "Bearer sekrit");
        URI b = server("b", 3, 0, null);
        List<Target> targets = List.of(
                new Target("ours", a, Map.of(), null).withHeader("Authorization", "Bearer sekrit"),
                new Target("theirs", URI.create(b + "/v1/"), Map.of(), null));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        BenchServe.run(
                options(targets, List.of(new LoadLevel.Concurrency(1), new LoadLevel.Concurrency(3)), 6, 2),
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8),
                false);
        JsonNode doc = JSON.readTree(dir.resolve("out/results.json").toFile());
        assertEquals(ResultsWriter.SCHEMA_VERSION, doc.get("schema_version").asInt());
        assertEquals("mlx-ring bench serve --test", doc.get("command").asText());
        for (String f : List.of("cpu", "cores", "os", "java")) {
            assertTrue(doc.get("machine").has(f), f);
        }
        assertEquals("a-model", doc.at("/targets/0/models/data/0/id").asText());
        assertEquals("b-model", doc.at("/targets/1/model_id").asText());
        assertEquals(b.toString(), doc.at("/targets/1/base_url").asText(), "a trailing /v1/ is dropped");
        JsonNode results = doc.get("results");
        assertEquals(4, results.size());
        for (JsonNode r : results) {
            for (String f : List.of(
                    "target",
                    "max_concurrency",
                    "completed",
                    "failed",
                    "duration",
                    "total_input_tokens",
                    "total_output_tokens",
                    "request_throughput",
                    "request_goodput",
                    "output_throughput",
                    "total_token_throughput",
                    "mean_ttft_ms",
                    "median_ttft_ms",
                    "p99_ttft_ms",
                    "p90_tpot_ms",
                    "mean_tpot_ms",
                    "median_itl_ms",
                    "p99.9_itl_ms",
                    "mean_e2el_ms",
                    "p99_e2el_ms",
                    "output_throughput_spread",
                    "errors_by_class")) {
                assertTrue(r.has(f), f + " missing in " + r);
            }
            assertEquals(12, r.get("completed").asInt(), "6 prompts × 2 rounds pooled");
            assertEquals(2, r.get("output_throughput_rounds").size());
            int perRequest = r.get("target").asText().equals("ours") ? 5 : 3;
            assertEquals(12L * perRequest, r.get("total_output_tokens").asLong());
            assertEquals(12L * 11, r.get("total_input_tokens").asLong());
            assertTrue(r.get("output_throughput").asDouble() > 0);
        }
        assertEquals("ours", results.get(0).get("target").asText());
        assertEquals(1, results.get(0).get("max_concurrency").asInt());
        assertEquals(3, results.get(3).get("max_concurrency").asInt());
        assertEquals(8, doc.get("phases").size());
        assertTrue(!doc.at("/phases/0").has("allocated_bytes"), "over HTTP the client's allocation is not recorded");
        assertEquals(48, doc.get("requests").size());
        // ABBA: A B | B A | A B | B A, six requests a phase, one target under load at a time
        StringBuilder seen = new StringBuilder();
        for (int i = 0; i < arrivals.size(); i += 6) {
            seen.append(arrivals.get(i).toUpperCase());
            assertEquals(Collections.nCopies(6, arrivals.get(i)), arrivals.subList(i, i + 6));
        }
        assertEquals("ABBAABBA", seen.toString());
        String md = Files.readString(dir.resolve("out/results.md"));
        assertTrue(md.contains("| ours | 1 | 12 | 0 |"), md);
        assertTrue(md.contains("| theirs | 3 | 12 | 0 |"), md);
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("| target | concurrency |"));
        String progress = err.toString(StandardCharsets.UTF_8);
        assertTrue(progress.contains("phase 8/8: round 2, max_concurrency=3, ours: 6/6 done, 0 failed"), progress);
        assertEquals("Plots not drawn: --no-plots.", doc.get("plots_note").asText());
        assertTrue(md.contains("Plots not drawn: --no-plots."), md);
    }

    @Test
    void failedRequestsAreCountedByClassAndLeaveTheLatenciesAlone() throws Exception {
        URI a = server("a", 4, 3, null);
        BenchServe.run(
                options(List.of(new Target("flaky", a, Map.of(), null)), List.of(new LoadLevel.Rate(1000, 1)), 9, 1),
                new PrintStream(new ByteArrayOutputStream()),
                new PrintStream(new ByteArrayOutputStream()),
                false);
        JsonNode r = JSON.readTree(dir.resolve("out/results.json").toFile()).at("/results/0");
        assertEquals(1000.0, r.get("request_rate").asDouble());
        assertEquals(3, r.get("failed").asInt(), r.toString());
        assertEquals(6, r.get("completed").asInt());
        assertEquals(3, r.at("/errors_by_class/http_429").asInt());
        assertEquals(24, r.get("total_output_tokens").asInt());
        assertFalse(r.get("median_ttft_ms").isNull());
    }

    /** A /v1/models that answers 200 with no JSON object (mlx_lm.server without a Hugging Face cache) is an error, not a model list. */
    @Test
    void aModelsAnswerThatIsNotJsonIsRecordedAsAnError() throws Exception {
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        s.createContext("/v1/models", ex -> reply(ex, 200, ""));
        s.start();
        servers.add(s);
        Target t = new Target(
                "empty", URI.create("http://127.0.0.1:" + s.getAddress().getPort()), Map.of(), null);
        TargetInfo info = TargetInfo.probe(t, new StreamingClient(ApiDialect.CHAT, Duration.ofSeconds(5)));
        assertEquals(null, info.models());
        assertEquals("HTTP 200 with a body that is not a JSON object: ''", info.modelsError());
        assertEquals("default_model", info.modelId());
        assertEquals(ProcessHandle.current().pid(), info.pid(), "the listener on a loopback port is found");
    }
}
