package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.Executor;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The connection limits over raw sockets, with 1 s timeouts: a request whose headers or body stop
 * arriving is answered 408 and closed, an idle connection is closed, a connection over the cap is
 * answered 503 with {@code Retry-After} and closed, {@code /metrics} counts each of them, and a
 * generation that lasts longer than every timeout is not cut. Every read waits on its socket with
 * its own timeout far above the server's, so a missing answer fails rather than hangs.
 */
class ConnectionLimitsTest {
    private static final long TIMEOUT_MS = 1000;
    /** How long a test waits for an answer the server owes it: far above {@link #TIMEOUT_MS}. */
    private static final int ANSWER_WAIT_MS = 10_000;

    private ServedEngine server;
    private String base;

    private void start(Executor executor, int maxConnections) {
        server = ServedEngine.start(
                StageDoubles.engine(executor),
                ServedEngine.mlxLm().withConnections(new ConnectionLimits(TIMEOUT_MS, TIMEOUT_MS, maxConnections)));
        base = server.base();
    }

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
    }

    private Socket connect() throws IOException {
        Socket s = new Socket("127.0.0.1", server.port());
        s.setSoTimeout(ANSWER_WAIT_MS);
        return s;
    }

    /** A response read off a raw socket: status, headers (lower-case names), body, and whether EOF followed. */
    private record Raw(int status, Map<String, String> headers, String body, boolean closedAfter) {}

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) != '\n') {
            if (c < 0) {
                throw new IOException("connection closed inside a response head: '" + line + "'");
            }
            if (c != '\r') {
                line.write(c);
            }
        }
        return line.toString(StandardCharsets.US_ASCII);
    }

    /** One response (a Content-Length or chunked body); with {@code thenEof}, also waits for the server's close. */
    private static Raw read(Socket s, boolean thenEof) throws IOException {
        InputStream in = s.getInputStream();
        String status = readLine(in);
        Map<String, String> headers = new TreeMap<>();
        for (String line = readLine(in); !line.isEmpty(); line = readLine(in)) {
            int colon = line.indexOf(':');
            headers.put(
                    line.substring(0, colon).trim().toLowerCase(Locale.ROOT),
                    line.substring(colon + 1).trim());
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        if ("chunked".equals(headers.get("transfer-encoding"))) {
            for (int n = Integer.parseInt(readLine(in), 16); n > 0; n = Integer.parseInt(readLine(in), 16)) {
                body.writeBytes(in.readNBytes(n));
                readLine(in);
            }
            readLine(in);
        } else {
            body.writeBytes(in.readNBytes(Integer.parseInt(headers.getOrDefault("content-length", "0"))));
        }
        return new Raw(
                Integer.parseInt(status.substring(9, 12)),
                headers,
                body.toString(StandardCharsets.UTF_8),
                thenEof && closed(in));
    }

    /** Whether the server closes the connection (EOF or reset) before the answer wait ends. */
    private static boolean closed(InputStream in) throws IOException {
        try {
            return in.read() < 0;
        } catch (SocketException reset) {
            return true;
        }
    }

    private static void send(Socket s, String text) throws IOException {
        OutputStream out = s.getOutputStream();
        out.write(text.getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    private static String post(String path, String headers) {
        return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + headers + "\r\n";
    }

    private static String get(String path) {
        return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    }

    /** Scrapes {@link #awaitMetric} retried because the connection cap refused them. */
    private int scrapesRefused;

    /**
     * Waits for {@code series} to read {@code value}. Connections a test just closed may still
     * count against the cap for a moment (a refused one lingers up to 2 s), so a scrape the cap
     * refuses is retried like a scrape that does not show the value yet; each such refusal is
     * counted in {@link #scrapesRefused} (the server counts it too).
     */
    private MetricsText awaitMetric(String series, double value) throws Exception {
        long deadlineNs = System.nanoTime() + 20_000_000_000L;
        while (true) {
            try {
                return MetricsText.awaitScrape(base, null, m -> m.value(series) == value);
            } catch (AssertionError e) {
                if (!String.valueOf(e.getMessage()).contains("too_many_connections")
                        || System.nanoTime() > deadlineNs) {
                    throw e;
                }
                scrapesRefused++;
                Thread.sleep(50);
            }
        }
    }

    @Test
    void aBodyShorterThanItsContentLengthIs408InTheRoutesShapeThenClosed() throws Exception {
        start(ScriptedExecutor.counting(), 16);
        String half = "{\"messages\":[{\"role\":\"user\",";
        try (Socket s = connect()) {
            send(s, post("/v1/chat/completions", "Content-Length: 100\r\n") + half);
            long sentNs = System.nanoTime();
            Raw r = read(s, true);
            long waitedMs = (System.nanoTime() - sentNs) / 1_000_000;
            assertEquals(408, r.status(), r.toString());
            assertTrue(r.body().contains("\"code\":\"request_timeout\""), r.body());
            assertEquals("close", r.headers().get("connection"), r.toString());
            assertTrue(r.closedAfter(), "the connection is closed after the 408");
            assertTrue(
                    waitedMs >= TIMEOUT_MS - 100, "answered after the read timeout, not before: " + waitedMs + " ms");
        }
        try (Socket s = connect()) {
            send(s, post("/v1/messages", "Content-Length: 100\r\n") + half);
            Raw r = read(s, true);
            assertEquals(408, r.status(), r.toString());
            assertTrue(
                    r.body().startsWith("{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\""),
                    "Anthropic's error shape: " + r.body());
        }
        MetricsText m = awaitMetric("mlxring_http_connection_timeouts_total{kind=\"body\"}", 2);
        assertEquals(
                2,
                m.value("mlxring_rejected_requests_total{reason=\"request_timeout\"}"),
                m.series().toString());
        assertEquals(
                1,
                m.value("mlxring_http_requests_total{route=\"/v1/messages\",status=\"408\"}"),
                m.series().toString());
    }

    @Test
    void anUnterminatedChunkedBodyIs408ThenClosed() throws Exception {
        start(ScriptedExecutor.counting(), 16);
        try (Socket s = connect()) {
            send(s, post("/v1/completions", "Transfer-Encoding: chunked\r\n") + "a\r\n{\"prompt\":\r\n");
            Raw r = read(s, true);
            assertEquals(408, r.status(), r.toString());
            assertTrue(r.body().contains("\"code\":\"request_timeout\""), r.body());
            assertTrue(r.closedAfter(), "the connection is closed after the 408");
        }
        awaitMetric("mlxring_http_connection_timeouts_total{kind=\"body\"}", 1);
    }

    @Test
    void aBodyThatARouteNeverReadsAndNeverComesEndsTheConnectionAfterTheReadTimeout() throws Exception {
        start(ScriptedExecutor.counting(), 16);
        try (Socket s = connect()) {
            // /health answers at once; the connection still owes the 10 declared bytes.
            send(s, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\n");
            Raw r = read(s, true);
            assertEquals(200, r.status(), r.toString());
            assertTrue(r.closedAfter(), "the connection is closed once the body is overdue");
        }
        awaitMetric("mlxring_http_connection_timeouts_total{kind=\"body\"}", 1);
    }

    @Test
    void aHeaderTricklingPastTheReadTimeoutIs408ThenClosed() throws Exception {
        start(ScriptedExecutor.counting(), 16);
        try (Socket s = connect()) {
            byte[] head = (post("/v1/completions", "X-Slow: " + "a".repeat(200))).getBytes(StandardCharsets.US_ASCII);
            AtomicBoolean stop = new AtomicBoolean();
            long firstByteNs = System.nanoTime();
            Thread trickle = Thread.ofVirtual().start(() -> {
                try {
                    // One byte every 200 ms: 40 s for the whole head, far past the 1 s timeout.
                    for (int i = 0; i < head.length && !stop.get(); i++) {
                        s.getOutputStream().write(head[i]);
                        s.getOutputStream().flush();
                        Thread.sleep(200);
                    }
                } catch (IOException | InterruptedException e) {
                    // the server closed the connection: the trickle ends
                }
            });
            try {
                Raw r = read(s, true);
                long waitedMs = (System.nanoTime() - firstByteNs) / 1_000_000;
                assertEquals(408, r.status(), r.toString());
                assertTrue(r.body().contains("\"code\":\"request_timeout\""), r.body());
                assertTrue(r.closedAfter(), "the connection is closed after the 408");
                assertTrue(
                        waitedMs >= TIMEOUT_MS - 100 && waitedMs < ANSWER_WAIT_MS,
                        "answered after the read timeout: " + waitedMs + " ms");
            } finally {
                stop.set(true);
                trickle.interrupt();
                trickle.join();
            }
        }
        awaitMetric("mlxring_http_connection_timeouts_total{kind=\"header\"}", 1);
    }

    @Test
    void idleConnectionsAreClosedAfterTheIdleTimeout() throws Exception {
        start(ScriptedExecutor.counting(), 16);
        try (Socket keepAlive = connect();
                Socket silent = connect()) {
            send(keepAlive, get("/health"));
            Raw r = read(keepAlive, false);
            assertEquals(200, r.status(), r.toString());
            long answeredNs = System.nanoTime();
            assertTrue(closed(keepAlive.getInputStream()), "a keep-alive connection idle past the timeout is closed");
            long idleMs = (System.nanoTime() - answeredNs) / 1_000_000;
            assertTrue(idleMs >= TIMEOUT_MS - 100, "closed after the idle timeout, not before: " + idleMs + " ms");
            assertTrue(closed(silent.getInputStream()), "a connection that never sends a byte is closed");
        }
        awaitMetric("mlxring_http_connection_timeouts_total{kind=\"idle\"}", 2);
    }

    @Test
    void eachRequestRestartsTheIdleDeadline() throws Exception {
        start(ScriptedExecutor.counting(), 16);
        try (Socket s = connect()) {
            // Four requests 600 ms apart: 1.8 s on one connection, each gap under the 1 s timeout.
            for (int i = 0; i < 4; i++) {
                if (i > 0) {
                    Thread.sleep(600); // the client's pause between requests, not a wait on the server
                }
                send(s, get("/health"));
                assertEquals(200, read(s, false).status(), "request " + i + " on the kept-alive connection");
            }
        }
        assertEquals(0, MetricsText.scrape(base, null).value("mlxring_http_connection_timeouts_total{kind=\"idle\"}"));
    }

    @Test
    void aConnectionOverTheCapIs503WithRetryAfterThenClosed() throws Exception {
        start(ScriptedExecutor.counting(), 2);
        try (Socket first = connect();
                Socket second = connect()) {
            for (Socket s : new Socket[] {first, second}) {
                send(s, get("/health"));
                assertEquals(200, read(s, false).status(), "a connection within the cap is served");
            }
            try (Socket third = connect()) {
                send(third, get("/health"));
                Raw r = read(third, true);
                assertEquals(503, r.status(), r.toString());
                assertEquals("1", r.headers().get("retry-after"), r.toString());
                assertEquals("close", r.headers().get("connection"), r.toString());
                assertTrue(r.body().contains("\"code\":\"too_many_connections\""), r.body());
                assertTrue(r.closedAfter(), "the refused connection is closed");
            }
            // Still within the cap: the two open connections keep being served.
            send(first, get("/metrics"));
            Raw m = read(first, false);
            assertEquals(200, m.status(), m.toString());
            MetricsText metrics = MetricsText.parse(m.body());
            assertEquals(2, metrics.value("mlxring_http_connections"), m.body());
            assertEquals(1, metrics.value("mlxring_http_connections_refused_total"), m.body());
        }
        // Once they close, new connections are served again.
        // A scrape racing the server's view of those closes may itself be refused; those count too.
        MetricsText after = awaitMetric("mlxring_http_connections", 1);
        assertEquals(
                1 + scrapesRefused,
                after.value("mlxring_http_connections_refused_total"),
                after.series().toString());
    }

    @Test
    void generationsLongerThanEveryTimeoutAreNotCut() throws Exception {
        // 40 tokens, one every 50 ms: 2 s of generation against 1 s read and idle timeouts.
        start(new ScriptedExecutor(plan -> IntStream.range(0, 40).map(i -> 9).toArray(), 50), 16);
        try (Socket s = connect()) {
            String body = "{\"prompt\":\"x\",\"max_tokens\":40,\"stream\":true}";
            send(s, post("/v1/completions", "Content-Length: " + body.length() + "\r\n") + body);
            // A client that reads nothing for longer than every timeout, then reads on.
            Thread.sleep(1500);
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            byte[] buf = new byte[4096];
            int n;
            while (!all.toString(StandardCharsets.UTF_8).contains("data: [DONE]")
                    && (n = s.getInputStream().read(buf)) > 0) {
                all.write(buf, 0, n);
            }
            String text = all.toString(StandardCharsets.UTF_8);
            assertTrue(text.startsWith("HTTP/1.1 200"), text);
            assertEquals(40, text.split("\"text\":\"t9 \"", -1).length - 1, "every token streamed: " + text);
            assertTrue(text.contains("data: [DONE]"), text);
        }
        try (Socket s = connect()) {
            // Not streamed: nothing is written for 2 s, and the client waits.
            String body = "{\"prompt\":\"x\",\"max_tokens\":40}";
            send(s, post("/v1/completions", "Content-Length: " + body.length() + "\r\n") + body);
            Raw r = read(s, false);
            assertEquals(200, r.status(), r.toString());
            assertTrue(r.body().contains("\"finish_reason\":\"length\""), r.body());
        }
        MetricsText m = MetricsText.scrape(base, null);
        for (String kind : new String[] {"header", "body", "idle"}) {
            assertEquals(0, m.value("mlxring_http_connection_timeouts_total{kind=\"" + kind + "\"}"), kind);
        }
    }
}
