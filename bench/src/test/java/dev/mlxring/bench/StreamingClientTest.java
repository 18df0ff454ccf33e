package dev.mlxring.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link StreamingClient} reads each response to its end: a server whose chunked body ends a
 * while after {@code data: [DONE]} (its last chunk written late, as any server's may be) serves
 * the next request on the same connection. A client that closed the stream at {@code [DONE]}
 * cancelled the exchange and its connection with it, and that cancel could race the connection's
 * return to the JDK client's pool, failing the next request ("header parser received no bytes").
 */
class StreamingClientTest {
    private static final String TEXT = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word\"}}]}\n\n";

    private HttpServer server;
    /** The client port of every request the scripted server saw, in order. */
    private final List<Integer> clientPorts = new CopyOnWriteArrayList<>();

    @AfterEach
    void stop() {
        if (server != null) {
            server.stop(0);
        }
    }

    /**
     * A chat target whose every answer is {@code events}, flushed, then the chunked body's last
     * chunk {@code lastChunkAfterMs} later (when the response stream closes).
     */
    private Target scripted(String events, long lastChunkAfterMs) throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/v1/chat/completions", ex -> {
            ex.getRequestBody().readAllBytes();
            clientPorts.add(ex.getRemoteAddress().getPort());
            ex.getResponseHeaders().add("Content-Type", "text/event-stream");
            ex.sendResponseHeaders(200, 0);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(events.getBytes(StandardCharsets.UTF_8));
                out.flush();
                Thread.sleep(lastChunkAfterMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (IOException e) {
                // the client went away: nothing to finish
            }
        });
        server.start();
        return new Target(
                "scripted", URI.create("http://127.0.0.1:" + server.getAddress().getPort()), Map.of(), "m");
    }

    @Test
    void aStreamReadToItsEndLeavesItsConnectionToTheNextRequest() throws Exception {
        Target target = scripted(
                TEXT + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}\n\n"
                        + "data: [DONE]\n\n",
                300);
        StreamingClient client = new StreamingClient(ApiDialect.CHAT, Duration.ofSeconds(30));

        for (int i = 0; i < 3; i++) {
            RequestRecord r = client.send(target, new BenchPrompt(null, "hello " + i, 4, 5), i, n -> {});
            assertNull(r.errorClass(), () -> "request failed: " + r.errorDetail());
            assertEquals(1, r.tokenEventNs().length);
        }

        assertEquals(3, clientPorts.size());
        assertEquals(1, clientPorts.stream().distinct().count(), () -> "connections used: " + clientPorts);
    }

    @Test
    void aStreamThatFailsWithAnErrorEventAlsoLeavesItsConnectionToTheNextRequest() throws Exception {
        Target target = scripted("data: {\"error\":{\"message\":\"boom\"}}\n\ndata: [DONE]\n\n", 300);
        StreamingClient client = new StreamingClient(ApiDialect.CHAT, Duration.ofSeconds(30));

        for (int i = 0; i < 3; i++) {
            RequestRecord r = client.send(target, new BenchPrompt(null, "hello " + i, 4, 5), i, n -> {});
            assertEquals(ErrorClass.STREAM_ERROR, r.errorClass());
            assertEquals("boom", r.errorDetail());
        }

        assertEquals(1, clientPorts.stream().distinct().count(), () -> "connections used: " + clientPorts);
    }

    @Test
    void theRequestEndsAtDoneNotAtTheBodysLastChunk() throws Exception {
        Target target = scripted(TEXT + "data: [DONE]\n\n", 500);
        StreamingClient client = new StreamingClient(ApiDialect.CHAT, Duration.ofSeconds(30));

        RequestRecord r = client.send(target, new BenchPrompt(null, "hello", 4, 5), 0, n -> {});

        assertNull(r.errorClass(), () -> "request failed: " + r.errorDetail());
        long afterDoneNs = r.endNs() - r.tokenEventNs()[0];
        // the 500 ms before the body's end are not the request's
        assertTrue(afterDoneNs < 250_000_000L, () -> "ended " + afterDoneNs / 1e6 + " ms after the token");
    }
}
