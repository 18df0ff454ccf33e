package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * HTTP/1.1 request framing as clients use it (issue 38): HEAD on the GET routes, the interim
 * {@code 100 Continue} a client that sends {@code Expect: 100-continue} waits for, and transfer
 * codings the server cannot decode refused rather than ignored. Raw sockets, stage doubles, no
 * model.
 */
class HttpFramingTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    @RegisterExtension
    final ServedEngine server =
            ServedEngine.eachTest(() -> StageDoubles.engine(ScriptedExecutor.counting()), ServedEngine.smallBodies());

    @ParameterizedTest
    @ValueSource(strings = {"/health", "/v1/models", "/metrics", "/v1/models/tiny"})
    void headAnswersGetsStatusAndHeadersWithoutABody(String path) throws Exception {
        URI uri = URI.create("http://127.0.0.1:" + server.port() + path);
        HttpResponse<String> get =
                HTTP.send(HttpRequest.newBuilder(uri).GET().build(), HttpResponse.BodyHandlers.ofString());
        String head = raw("HEAD " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", null);
        assertTrue(head.startsWith("HTTP/1.1 200 "), head);
        assertTrue(head.endsWith("\r\n\r\n"), "no body after the headers: " + head);
        assertTrue(
                head.toLowerCase()
                        .contains("content-type: "
                                + get.headers()
                                        .firstValue("Content-Type")
                                        .orElseThrow()
                                        .toLowerCase()),
                head);
    }

    @Test
    void expect100ContinueGetsAnInterim100BeforeTheBody() throws Exception {
        String body = "{\"prompt\":\"x\",\"max_tokens\":1}";
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            out.write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                            + body.length() + "\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            String interim = readHead(in);
            assertTrue(interim.startsWith("HTTP/1.1 100 "), "the server asks for the body first: " + interim);
            out.write(body.getBytes(StandardCharsets.US_ASCII));
            out.flush();
            String rest = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(rest.startsWith("HTTP/1.1 200 "), rest);
            assertTrue(rest.contains("\"text\":\"t1 \""), rest);
        }
    }

    @Test
    void expect100ContinueWithATooLargeBodyIsRefusedWithoutAskingForIt() throws Exception {
        String response = DeclaredBody.post(server.port(), "/v1/completions", 1 << 20, "Expect", "100-continue");
        assertTrue(response.startsWith("HTTP/1.1 413 "), response);
        assertFalse(response.contains("100 Continue"), response);
    }

    @Test
    void anUnknownExpectationIs417() throws Exception {
        String response = DeclaredBody.post(server.port(), "/v1/completions", 10, "Expect", "tea");
        assertTrue(response.startsWith("HTTP/1.1 417 "), response);
        assertEquals(
                "expectation_failed",
                JSON.readTree(DeclaredBody.body(response)).at("/error/code").asText());
    }

    @ParameterizedTest
    @ValueSource(strings = {"gzip, chunked", "gzip,chunked", "identity, chunked"})
    void aTransferCodingOtherThanChunkedIs501(String coding) throws Exception {
        String chunked = "5\r\n{\"a\":\r\n2\r\n1}\r\n0\r\n\r\n";
        String openAi = raw(
                "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        + "Transfer-Encoding: " + coding + "\r\n\r\n",
                chunked);
        assertTrue(openAi.startsWith("HTTP/1.1 501 "), openAi);
        assertEquals(
                "unsupported_transfer_encoding",
                JSON.readTree(DeclaredBody.body(openAi)).at("/error/code").asText());
        String anthropic = raw(
                "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + "Transfer-Encoding: "
                        + coding + "\r\n\r\n",
                chunked);
        assertTrue(anthropic.startsWith("HTTP/1.1 501 "), anthropic);
        JsonNode error = JSON.readTree(DeclaredBody.body(anthropic));
        assertEquals("error", error.get("type").asText(), anthropic);
        assertTrue(error.at("/error/message").asText().contains("Transfer-Encoding"), anthropic);
    }

    @Test
    void plainChunkedBodiesStillWork() throws Exception {
        String body = "{\"prompt\":\"x\",\"max_tokens\":1}";
        String chunked = Integer.toHexString(body.length()) + "\r\n" + body + "\r\n0\r\n\r\n";
        String r = raw(
                "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                chunked);
        assertTrue(r.startsWith("HTTP/1.1 200 "), r);
    }

    /** Sends {@code head} (and {@code body}, if any) and reads until the server closes. */
    private String raw(String head, String body) throws Exception {
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            out.write(head.getBytes(StandardCharsets.US_ASCII));
            if (body != null) {
                out.write(body.getBytes(StandardCharsets.US_ASCII));
            }
            out.flush();
            return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    /** A response's status line and headers, up to and including the blank line. */
    private static String readHead(InputStream in) throws Exception {
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        while (!got.toString(StandardCharsets.US_ASCII).endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                break;
            }
            got.write(b);
        }
        return got.toString(StandardCharsets.US_ASCII);
    }
}
