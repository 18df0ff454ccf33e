package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.ExecutionRun;
import dev.mlxring.pipeline.Executor;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code GET /metrics} over an engine with stage doubles: the text format scrapes, requests,
 * rejections, tokens and latency histograms count what happened, the engine gauges return to
 * idle, an internal failure answers a 500 with a JSON body naming the request id, and the
 * per-token recording allocates nothing.
 */
class MetricsHttpTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    /** A request asking for this many tokens makes the executor throw (an internal failure). */
    private static final int BOOM = 13;

    private Engine engine;
    private HttpServer server;
    private String base;

    @BeforeEach
    void start() {
        ScriptedExecutor counting = ScriptedExecutor.counting();
        engine = StageDoubles.engine(new Executor() {
                    @Override
                    public ExecutionRun open(ExecutionPlan plan) throws RequestException {
                        if (plan.maxTokens() == BOOM) {
                            throw new IllegalStateException("scripted executor failure");
                        }
                        return counting.open(plan);
                    }

                    @Override
                    public void close() {}
                })
                .preparer(r -> new PreparedPrompt(new int[] {7, 8, 9}, 3))
                .start();
        server = new HttpServer(
                        new HttpServer.Config("127.0.0.1", 0, "tiny", "sekret", ServerDefaults.mlxLm(), "fp"),
                        engine,
                        id -> "t" + id)
                .start();
        base = "http://127.0.0.1:" + server.port();
    }

    @AfterEach
    void stop() {
        server.close();
        engine.close();
    }

    private HttpResponse<String> post(String path, String body, boolean auth) throws Exception {
        var b = HttpRequest.newBuilder(URI.create(base + path))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (auth) {
            b.header("Authorization", "Bearer sekret");
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void countsRequestsTokensLatenciesAndRejections() throws Exception {
        assertEquals(
                200,
                post("/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":5,\"stream\":true}", true)
                        .statusCode());
        assertEquals(
                200,
                post(
                                "/v1/chat/completions",
                                "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":4}",
                                true)
                        .statusCode());
        assertEquals(401, post("/v1/completions", "{\"prompt\":\"x\"}", false).statusCode());
        assertEquals(
                400,
                post("/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":0}", true)
                        .statusCode());

        MetricsText m = MetricsText.awaitScrape(
                base,
                "sekret",
                // Each exchange is counted when it ends, which may be after its client has read it.
                s -> s.value("mlxring_http_requests_total{route=\"/v1/completions\",status=\"400\"}") == 1
                        && s.value("mlxring_http_requests_total{route=\"/v1/completions\",status=\"200\"}") == 1
                        && s.value("mlxring_http_requests_total{route=\"/v1/chat/completions\",status=\"200\"}") == 1
                        && s.value("mlxring_http_requests_total{route=\"/v1/completions\",status=\"401\"}") == 1
                        && s.value("mlxring_completions_total{outcome=\"completed\"}") == 2);
        assertEquals(1, m.value("mlxring_http_requests_total{route=\"/v1/completions\",status=\"400\"}"));
        assertEquals(1, m.value("mlxring_http_requests_total{route=\"/v1/completions\",status=\"200\"}"));
        assertEquals(1, m.value("mlxring_http_requests_total{route=\"/v1/chat/completions\",status=\"200\"}"));
        assertEquals(1, m.value("mlxring_http_requests_total{route=\"/v1/completions\",status=\"401\"}"));
        assertEquals(1, m.value("mlxring_rejected_requests_total{reason=\"invalid_api_key\"}"));
        assertEquals(1, m.value("mlxring_rejected_requests_total{reason=\"invalid_request_error\"}"));
        assertEquals(2, m.value("mlxring_completions_total{outcome=\"completed\"}"));
        assertEquals(5 + 4, m.value("mlxring_generated_tokens_total"));
        assertEquals(3 + 3, m.value("mlxring_prompt_tokens_total"));
        assertEquals(2, m.value("mlxring_time_to_first_token_seconds_count"));
        assertEquals(2, m.value("mlxring_time_to_first_token_seconds_bucket{le=\"+Inf\"}"));
        assertEquals((5 - 1) + (4 - 1), m.value("mlxring_inter_token_latency_seconds_count"));
        assertEquals(0, m.value("mlxring_live_sessions"));
        assertEquals(0, m.value("mlxring_queue_depth"));
        assertEquals(0, m.value("mlxring_active_rows"));
        assertEquals(0, m.value("mlxring_draining"));
        assertTrue(m.value("process_resident_memory_bytes") > 0, "JVM/process metrics are registered");
        assertTrue(
                m.has("jvm_buffer_pool_used_bytes{pool=\"direct\"}"),
                m.series().keySet().toString());
    }

    @Test
    void aChunkedBodyPastTheLimitIsCountedAs413() throws Exception {
        try (java.net.Socket s = new java.net.Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(20_000);
            var out = s.getOutputStream();
            out.write(("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sekret\r\n"
                            + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                    .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            byte[] chunk = new byte[64 << 10];
            java.util.Arrays.fill(chunk, (byte) ' ');
            byte[] size =
                    (Integer.toHexString(chunk.length) + "\r\n").getBytes(java.nio.charset.StandardCharsets.US_ASCII);
            try {
                for (long sent = 0; sent <= HttpServer.DEFAULT_MAX_BODY_BYTES + chunk.length; sent += chunk.length) {
                    out.write(size);
                    out.write(chunk);
                    out.write(new byte[] {'\r', '\n'});
                }
                out.flush();
                // The server answers 413 and closes, or just closes: both are allowed (docs/api.md).
                while (s.getInputStream().read() >= 0) {
                    // drain
                }
            } catch (java.io.IOException closedUnderUs) {
                // the server closed the connection while the body was still being sent
            }
        }
        // The rejection is counted when it is decided, the 413 when its exchange ends: wait for both.
        MetricsText m = MetricsText.awaitScrape(
                base,
                "sekret",
                x -> x.value("mlxring_rejected_requests_total{reason=\"request_too_large\"}") == 1
                        && x.value("mlxring_http_requests_total{route=\"/v1/chat/completions\",status=\"413\"}") == 1);
        assertEquals(1, m.value("mlxring_rejected_requests_total{reason=\"request_too_large\"}"));
        assertEquals(1, m.value("mlxring_http_requests_total{route=\"/v1/chat/completions\",status=\"413\"}"));
        assertEquals(0, m.value("mlxring_http_requests_total{route=\"/v1/chat/completions\",status=\"200\"}"));
    }

    @Test
    void refusalsAreRejectedAndOnlyInternalErrorsFailed() {
        var none = dev.mlxring.pipeline.Usage.NONE;
        assertEquals(
                "rejected",
                ExchangeWriter.outcomeLabel(dev.mlxring.pipeline.Outcome.failed(
                        dev.mlxring.pipeline.Outcome.ErrorType.OVERLOADED, "full", none)));
        assertEquals(
                "rejected",
                ExchangeWriter.outcomeLabel(dev.mlxring.pipeline.Outcome.failed(
                        dev.mlxring.pipeline.Outcome.ErrorType.CONTEXT_LENGTH_EXCEEDED, "long", none)));
        assertEquals(
                "failed",
                ExchangeWriter.outcomeLabel(dev.mlxring.pipeline.Outcome.failed(
                        dev.mlxring.pipeline.Outcome.ErrorType.INTERNAL, "bug", none)));
        assertEquals("cancelled", ExchangeWriter.outcomeLabel(dev.mlxring.pipeline.Outcome.cancelled("gone", none)));
        assertEquals("completed", ExchangeWriter.outcomeLabel(dev.mlxring.pipeline.Outcome.completed("stop", none)));
    }

    @Test
    void metricsNeedTheApiKeyAndUnknownRoutesShareOneLabel() throws Exception {
        var r = HTTP.send(
                HttpRequest.newBuilder(URI.create(base + "/metrics")).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(401, r.statusCode());
        for (int i = 0; i < 3; i++) {
            HTTP.send(
                    HttpRequest.newBuilder(URI.create(base + "/random-" + i))
                            .header("Authorization", "Bearer sekret")
                            .GET()
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
        }
        MetricsText m = MetricsText.awaitScrape(
                base, "sekret", s -> s.value("mlxring_http_requests_total{route=\"other\",status=\"404\"}") == 3);
        assertTrue(m.series().keySet().stream().noneMatch(k -> k.contains("random-")), "paths never become labels");
    }

    @Test
    void internalFailureAnswers500WithJsonBodyAndTheRequestId() throws Exception {
        HttpResponse<String> r = post("/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":" + BOOM + "}", true);
        assertEquals(500, r.statusCode(), r.body());
        String requestId = r.headers().firstValue("X-Request-Id").orElseThrow();
        JsonNode error = JSON.readTree(r.body()).get("error");
        assertEquals("internal_error", error.get("code").asText());
        assertEquals("server_error", error.get("type").asText());
        assertTrue(error.get("message").asText().contains("request id " + requestId), r.body());
        assertTrue(error.get("message").asText().contains("scripted executor failure"), r.body());
        MetricsText.awaitScrape(
                base,
                "sekret",
                s -> s.value("mlxring_rejected_requests_total{reason=\"internal_error\"}") == 1
                        && s.value("mlxring_completions_total{outcome=\"failed\"}") == 1);
        // The engine keeps serving.
        assertEquals(
                200,
                post("/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":2}", true)
                        .statusCode());
    }

    /** The MLX gauges read their suppliers at each scrape: the peak is the allocator's, not a sample. */
    @Test
    void theMlxMemoryGaugesReadActiveAndPeakAtScrapeTime() throws Exception {
        long[] activeAndPeak = {5, 7};
        ServerMetrics metrics = new ServerMetrics(engine, () -> activeAndPeak[0], () -> activeAndPeak[1], 2);
        activeAndPeak[1] = 11;
        var out = new java.io.ByteArrayOutputStream();
        metrics.scrape(out);
        String text = out.toString(java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(text.contains("\nmlxring_mlx_active_memory_bytes 5.0\n"), text);
        assertTrue(text.contains("\nmlxring_mlx_peak_memory_bytes 11.0\n"), text);
        assertTrue(text.contains("\nmlxring_kv_bytes_in_use 3.0\n"), text);
    }

    @Test
    void perTokenRecordingAllocatesNothing() {
        ServerMetrics metrics = new ServerMetrics(engine, null, null, 0);
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long tid = Thread.currentThread().threadId();
        // Warm up (class loading, the adders' first cells, JIT).
        IntStream.range(0, 200_000).forEach(i -> metrics.interToken(1_000_000L + i));
        long before = threads.getThreadAllocatedBytes(tid);
        for (int i = 0; i < 100_000; i++) {
            metrics.interToken(2_000_000L + i);
        }
        long allocated = threads.getThreadAllocatedBytes(tid) - before;
        // 100k observations: any per-token allocation (a boxed value, a label array) would cost
        // megabytes; the bound leaves room for a stray JIT/TLAB bookkeeping object.
        assertTrue(allocated < 64 * 1024, "per-token recording allocated " + allocated + " bytes");
    }
}
