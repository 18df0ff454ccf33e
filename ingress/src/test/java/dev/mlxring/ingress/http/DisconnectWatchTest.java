package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.EngineConfig;
import dev.mlxring.pipeline.Executor;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link DisconnectWatch} over raw sockets: a client that closes its connection while its answer
 * is generated is cancelled then, streaming or not; and the watch gives the connection back
 * intact to keep-alive and pipelined requests.
 */
class DisconnectWatchTest {
    private ServedEngine server;

    private void start(Executor executor) {
        server =
                ServedEngine.start(StageDoubles.engine(executor).config(EngineConfig.defaults()), ServedEngine.mlxLm());
    }

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
    }

    /** One token every 20 ms for a long time: a request stays running while the test acts. */
    private static Executor slow() {
        return new ScriptedExecutor(
                plan -> IntStream.range(0, 100_000).map(i -> 8 + i % 4).toArray(), 20);
    }

    private static byte[] request(String path, String body) {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        String head = "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + b.length + "\r\n\r\n";
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(head.getBytes(StandardCharsets.US_ASCII));
        out.writeBytes(b);
        return out.toByteArray();
    }

    private void awaitAdmitted(int n, String why) throws InterruptedException {
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (server.engine().admittedCount() != n && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(n, server.engine().admittedCount(), why);
    }

    @Test
    void aClientThatLeavesCancelsItsRequestWhileNothingIsWritten() throws Exception {
        start(slow());
        String[][] routes = {
            {"/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":8000}"},
            {"/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":8000}"},
            {
                "/v1/messages",
                "{\"model\":\"tiny\",\"max_tokens\":8000,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
            },
            {"/v1/responses", "{\"input\":\"hi\",\"max_output_tokens\":8000}"}
        };
        for (String[] route : routes) {
            try (Socket s = new Socket("127.0.0.1", server.port())) {
                s.getOutputStream().write(request(route[0], route[1]));
                s.getOutputStream().flush();
                awaitAdmitted(1, route[0] + ": running");
            }
            // 8000 tokens at 20 ms each would hold the admission for minutes.
            awaitAdmitted(0, route[0] + ": the session of a client that left still holds its admission");
        }
    }

    /** One line of a response head or chunk framing, without its CRLF. */
    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) != '\n') {
            if (c < 0) {
                throw new IOException("connection closed inside a response: " + line);
            }
            if (c != '\r') {
                line.write(c);
            }
        }
        return line.toString(StandardCharsets.US_ASCII);
    }

    /** Reads one HTTP/1.1 response (a Content-Length or a chunked body); returns "status body". */
    private static String readResponse(InputStream in) throws IOException {
        String status = readLine(in);
        int length = -1;
        boolean chunked = false;
        for (String line = readLine(in); !line.isEmpty(); line = readLine(in)) {
            String h = line.toLowerCase(java.util.Locale.ROOT);
            if (h.startsWith("content-length:")) {
                length = Integer.parseInt(h.substring(15).trim());
            } else if (h.startsWith("transfer-encoding:") && h.contains("chunked")) {
                chunked = true;
            }
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        if (chunked) {
            for (int n = Integer.parseInt(readLine(in).trim(), 16);
                    n > 0;
                    n = Integer.parseInt(readLine(in).trim(), 16)) {
                body.writeBytes(in.readNBytes(n));
                readLine(in);
            }
            readLine(in); // the empty line after the last chunk
        } else {
            assertTrue(length >= 0, "neither Content-Length nor chunked: " + status);
            body.writeBytes(in.readNBytes(length));
        }
        return status.substring(9, 12) + " " + body.toString(StandardCharsets.UTF_8);
    }

    @Test
    void keepAliveRequestsFollowEachOtherOnOneConnection() throws Exception {
        start(ScriptedExecutor.counting());
        byte[] req = request(
                "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":3}");
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(20_000);
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            for (int i = 0; i < 50; i++) {
                // The next request goes out the moment the last answer is read, while the
                // exchange before it may still be ending on the server.
                out.write(req);
                out.flush();
                String r = readResponse(in);
                assertTrue(r.startsWith("200 ") && r.contains("t1 t2 t3 "), "request " + i + ": " + r);
            }
        }
        // Undertow never removes a close listener: one per request would keep every past session
        // of a keep-alive connection reachable until it closed.
        assertEquals(1, server.server().closeListenersRegistered(), "one close listener for the one connection");
    }

    @Test
    void pipelinedRequestsAreAnsweredInOrder() throws Exception {
        start(ScriptedExecutor.counting());
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(20_000);
            ByteArrayOutputStream both = new ByteArrayOutputStream();
            both.writeBytes(request("/v1/completions", "{\"prompt\":\"a\",\"max_tokens\":2}"));
            both.writeBytes(request("/v1/completions", "{\"prompt\":\"b\",\"max_tokens\":4}"));
            s.getOutputStream().write(both.toByteArray());
            s.getOutputStream().flush();
            String first = readResponse(s.getInputStream());
            String second = readResponse(s.getInputStream());
            assertTrue(first.startsWith("200 ") && first.contains("\"t1 t2 \""), first);
            assertTrue(second.startsWith("200 ") && second.contains("\"t1 t2 t3 t4 \""), second);
        }
    }

    @Test
    void aRequestSentAfterTheFirstIsRunningIsAnsweredAfterIt() throws Exception {
        start(new ScriptedExecutor(plan -> new int[] {1, 2, 3}, 30));
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(20_000);
            OutputStream out = s.getOutputStream();
            out.write(request("/v1/completions", "{\"prompt\":\"a\",\"max_tokens\":3}"));
            out.flush();
            awaitAdmitted(1, "the first request runs");
            // Pipelined while the watch is reading: its bytes go back to Undertow's parser.
            out.write(request("/v1/completions", "{\"prompt\":\"b\",\"max_tokens\":2}"));
            out.flush();
            String first = readResponse(s.getInputStream());
            String second = readResponse(s.getInputStream());
            assertTrue(first.startsWith("200 ") && first.contains("\"t1 t2 t3 \""), first);
            assertTrue(second.startsWith("200 ") && second.contains("\"t1 t2 \""), second);
        }
    }
}
