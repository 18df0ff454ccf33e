package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * SIGTERM on the real {@code serve} process (default model): admission stops (503 with OpenAI's
 * error body), a running stream finishes within the grace period or is cancelled with its
 * terminal chunk after it, the access log records each, and the process exits with status 0.
 * Every wait is on the thing asserted (a log line, a stream's end, the process's exit).
 */
class GracefulShutdownTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    /** Opens a streaming completion and returns once its first content chunk arrived. */
    private static Iterator<String> openStream(String base, int maxTokens, List<String> events, String[] requestId)
            throws Exception {
        HttpResponse<Stream<String>> r = HTTP.send(
                HttpRequest.newBuilder(URI.create(base + "/v1/completions"))
                        .header("Content-Type", "application/json")
                        .timeout(Duration.ofMinutes(3))
                        .POST(HttpRequest.BodyPublishers.ofString(
                                "{\"prompt\":\"Once upon a time\",\"max_tokens\":" + maxTokens + ",\"stream\":true}"))
                        .build(),
                HttpResponse.BodyHandlers.ofLines());
        assertEquals(200, r.statusCode());
        requestId[0] = r.headers().firstValue("X-Request-Id").orElseThrow();
        Stream<String> lines = r.body();
        Iterator<String> it = lines.iterator();
        while (it.hasNext()) {
            String l = it.next();
            if (l.startsWith("data: ")) {
                events.add(l.substring(6));
                return it;
            }
        }
        throw new AssertionError("the stream ended before its first chunk");
    }

    private static void readToEnd(Iterator<String> lines, List<String> events) {
        while (lines.hasNext()) {
            String l = lines.next();
            if (l.startsWith("data: ")) {
                events.add(l.substring(6));
            }
        }
    }

    private static String finishReason(List<String> events) throws Exception {
        String reason = null;
        for (String e : events) {
            if (!e.equals("[DONE]")) {
                JsonNode fr = JSON.readTree(e).get("choices").get(0).get("finish_reason");
                if (fr != null && !fr.isNull()) {
                    reason = fr.asText();
                }
            }
        }
        return reason;
    }

    @Test
    void sigtermRefusesNewWorkLetsTheRunningStreamFinishAndExitsZero() throws Exception {
        try (ServerProcess server = ServerProcess.start("--shutdown-grace-seconds", "120")) {
            List<String> events = new ArrayList<>();
            String[] id = new String[1];
            Iterator<String> stream = openStream(server.base, 24, events, id);
            server.sigterm();
            server.awaitLogLine(l -> l.contains("draining: new requests get 503"), 30);

            // Admission is closed while the stream still runs: 503 with OpenAI's error body, or
            // (if the stream and the process already ended) a refused connection.
            boolean refused503 = false;
            try {
                HttpResponse<String> refused = HTTP.send(
                        HttpRequest.newBuilder(URI.create(server.base + "/v1/chat/completions"))
                                .header("Content-Type", "application/json")
                                .POST(HttpRequest.BodyPublishers.ofString(
                                        "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2}"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(503, refused.statusCode(), refused.body());
                JsonNode error = JSON.readTree(refused.body()).get("error");
                assertEquals("shutting_down", error.get("code").asText());
                assertTrue(error.get("message").asText().contains("shutting down"), refused.body());
                refused503 = true;
                HttpResponse<String> health = HTTP.send(
                        HttpRequest.newBuilder(URI.create(server.base + "/health"))
                                .GET()
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(503, health.statusCode(), health.body());
                assertEquals(
                        "shutting down",
                        JSON.readTree(health.body()).get("reason").asText());
            } catch (ConnectException gone) {
                assertFalse(server.process.isAlive(), "connection refused while the process still runs");
            }

            readToEnd(stream, events);
            assertEquals("[DONE]", events.get(events.size() - 1));
            assertEquals("length", finishReason(events), "the running request finished within the grace period");
            assertTrue(server.process.waitFor(60, TimeUnit.SECONDS), "serve did not exit after draining");
            assertEquals(0, server.process.exitValue());
            String log = server.logText();
            assertTrue(
                    log.contains("id=" + id[0] + " method=POST route=/v1/completions status=200 prompt_tokens="), log);
            assertTrue(log.contains("completion_tokens=24 "), log);
            assertTrue(log.contains("outcome=completed:length"), log);
            if (refused503) {
                assertTrue(log.contains("route=/v1/chat/completions status=503 reason=shutting_down"), log);
            }
            assertFalse(log.contains("SLF4J"), "one logging provider, no SLF4J warnings:\n" + log);
        }
    }

    @Test
    void afterTheGracePeriodRunningRequestsAreCancelledWithTheirTerminalChunk() throws Exception {
        try (ServerProcess server = ServerProcess.start("--shutdown-grace-seconds", "1")) {
            List<String> events = new ArrayList<>();
            String[] id = new String[1];
            // Far more tokens than this machine generates in a second.
            Iterator<String> stream = openStream(server.base, 4000, events, id);
            server.sigterm();
            readToEnd(stream, events);
            assertEquals("[DONE]", events.get(events.size() - 1), "the cancelled stream still ends properly");
            assertEquals("stop", finishReason(events));
            assertTrue(server.process.waitFor(60, TimeUnit.SECONDS), "serve did not exit after the grace period");
            assertEquals(0, server.process.exitValue());
            String log = server.logText();
            assertTrue(log.contains("grace period of 1 s is over: cancelling 1 request(s)"), log);
            assertTrue(log.contains("id=" + id[0] + " method=POST route=/v1/completions status=200"), log);
            assertTrue(log.contains("outcome=cancelled"), log);
        }
    }
}
