package dev.mlxring.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link BodyEnd#drain}: a body that ends is read to its end; one whose server keeps it open
 * after its last event is closed once the bound passes, so a client's thread is never held.
 */
class BodyEndTest {
    private HttpServer server;
    private final CountDownLatch release = new CountDownLatch(1);

    @AfterEach
    void stop() {
        release.countDown();
        if (server != null) {
            server.stop(0);
        }
    }

    private InputStream stream(boolean holdOpen) throws Exception {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/events", ex -> {
            ex.sendResponseHeaders(200, 0);
            try (OutputStream out = ex.getResponseBody()) {
                out.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
                out.flush();
                if (holdOpen) {
                    release.await();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        server.start();
        HttpClient client =
                HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        HttpResponse<InputStream> r = client.send(
                HttpRequest.newBuilder(URI.create(
                                "http://127.0.0.1:" + server.getAddress().getPort() + "/events"))
                        .build(),
                HttpResponse.BodyHandlers.ofInputStream());
        InputStream body = r.body();
        assertEquals(
                "data: [DONE]", new BufferedReader(new InputStreamReader(body, StandardCharsets.UTF_8)).readLine());
        return body;
    }

    @Test
    void aBodyThatEndsIsReadToItsEnd() throws Exception {
        assertTrue(BodyEnd.drain(stream(false), Duration.ofSeconds(30)));
    }

    @Test
    void aBodyKeptOpenIsClosedOnceTheBoundPasses() throws Exception {
        InputStream body = stream(true);
        long t0 = System.nanoTime();
        assertFalse(BodyEnd.drain(body, Duration.ofMillis(200)));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms >= 150 && ms < 10_000, "closed after " + ms + " ms");
    }
}
