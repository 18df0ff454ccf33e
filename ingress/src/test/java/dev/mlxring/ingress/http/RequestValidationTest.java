package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every field is validated before any work is queued: each bad value answers 4xx at once with an
 * OpenAI error body naming the field, never a 500, and the server keeps serving. The findings of
 * the hardening issue are each a case here.
 */
class RequestValidationTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private static final String CHAT = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";

    @RegisterExtension
    final ServedEngine server =
            ServedEngine.eachTest(() -> StageDoubles.engine(ScriptedExecutor.counting()), ServedEngine.smallBodies());

    private HttpResponse<String> post(String path, String body, String contentType) throws Exception {
        var b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (contentType != null) {
            b.header("Content-Type", contentType);
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> chat(String extraFields) throws Exception {
        return post("/v1/chat/completions", CHAT + extraFields + "}", "application/json");
    }

    private static JsonNode error(HttpResponse<String> r, int status) throws Exception {
        assertEquals(status, r.statusCode(), r.body());
        JsonNode e = JSON.readTree(r.body()).get("error");
        assertTrue(
                e != null
                        && e.get("message").isTextual()
                        && !e.get("message").asText().isEmpty(),
                r.body());
        return e;
    }

    private void assertStillServing() throws Exception {
        HttpResponse<String> ok = chat(",\"max_tokens\":2");
        assertEquals(200, ok.statusCode(), ok.body());
        assertEquals(
                "t1 t2 ",
                JSON.readTree(ok.body()).at("/choices/0/message/content").asText());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                ",\"stop\":[\"\\ud800\"]                                  | stop[0]",
                ",\"stop\":\"a\\udc00b\"                                  | stop",
                ",\"tools\":[1]                                           | tools[0]",
                ",\"tools\":[\"a\"]                                       | tools[0]",
                ",\"tools\":[[[]]]                                        | tools[0]",
                ",\"tools\":[null]                                        | tools[0]",
                ",\"tools\":{}                                            | tools",
                ",\"tools\":[{\"type\":\"function\"}]                     | tools[0].function",
                ",\"tools\":[{\"type\":\"web\",\"function\":{\"name\":\"f\"}}] | tools[0].type",
                ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a b\"}}] | tools[0].function.name",
                ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":[]}}] | tools[0].function.parameters",
                ",\"tool_choice\":\"sometimes\"                           | tool_choice",
                ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"g\"}} | tool_choice",
                ",\"tool_choice\":\"required\"                            | tool_choice",
                ",\"stop\":[\"\"]                                         | stop",
                ",\"stop\":[1]                                            | stop",
                ",\"logit_bias\":{\"5\":101}                              | logit_bias",
                ",\"logit_bias\":{\"1000\":1}                             | logit_bias",
                ",\"logit_bias\":{\"x\":1}                                | logit_bias",
                ",\"n\":2                                                 | n",
                ",\"response_format\":{\"type\":\"json_object\"}          | response_format",
                ",\"stream_options\":{\"include_usage\":true}             | stream_options",
                ",\"seed\":-1                                             | seed",
                ",\"seed\":1e30                                           | seed",
                ",\"user\":5                                              | user",
                ",\"temperature\":1e308                                   | temperature",
                ",\"temperature\":2.5                                     | temperature",
                ",\"presence_penalty\":1e308                              | presence_penalty",
                ",\"frequency_penalty\":-3                                | frequency_penalty",
                ",\"repetition_penalty\":1e308                            | repetition_penalty",
                ",\"max_tokens\":0                                        | max_tokens",
                ",\"max_tokens\":8192                                     | max_tokens",
                ",\"max_tokens\":1e400                                    | max_tokens",
                ",\"top_logprobs\":50                                     | top_logprobs",
                ",\"top_logprobs\":12                                     | top_logprobs",
            })
    void badFieldAnswers400NamingIt(String fields, String param) throws Exception {
        JsonNode e = error(chat(fields.strip()), 400);
        assertEquals(param, e.get("param").asText(), e.toString());
        assertEquals("invalid_request_error", e.get("type").asText());
    }

    @Test
    void contextLengthExceededCarriesItsCode() throws Exception {
        JsonNode e = error(chat(",\"max_tokens\":100000"), 400);
        assertEquals("context_length_exceeded", e.get("code").asText());
        assertTrue(e.get("message").asText().contains("8192"), e.toString());
    }

    @Test
    void loneSurrogateStopStringIsRefusedAndTheEngineKeepsGenerating() throws Exception {
        for (String path : new String[] {"/v1/completions", "/v1/chat/completions"}) {
            String body = path.endsWith("completions") && !path.contains("chat")
                    ? "{\"prompt\":\"Hi\",\"max_tokens\":1,\"stop\":[\"\\ud800\"]}"
                    : CHAT + ",\"max_tokens\":1,\"stop\":[\"\\ud800\"]}";
            JsonNode e = error(post(path, body, "application/json"), 400);
            assertTrue(e.get("message").asText().contains("surrogate"), e.toString());
            assertStillServing();
        }
    }

    @Test
    void hugeListsAndStringsAreRefusedAtOnce() throws Exception {
        String stopList =
                IntStream.range(0, 100_000).mapToObj(i -> "\"s" + i + "\"").collect(Collectors.joining(","));
        // Under the 64 KiB limit of this server: a 1000-entry stop list and a 20k-char stop string.
        String thousand =
                IntStream.range(0, 1000).mapToObj(i -> "\"s" + i + "\"").collect(Collectors.joining(","));
        assertEquals(
                "stop",
                error(chat(",\"stop\":[" + thousand + "]"), 400).get("param").asText());
        assertEquals(
                "stop",
                error(chat(",\"stop\":\"" + "x".repeat(20_000) + "\""), 400)
                        .get("param")
                        .asText());
        String bias = IntStream.range(0, 2000)
                .mapToObj(i -> "\"" + (i % 1000) + i / 1000 + "\":1")
                .collect(Collectors.joining(","));
        assertEquals(
                "logit_bias",
                error(chat(",\"logit_bias\":{" + bias + "}"), 400).get("param").asText());
        // Beyond the body limit: 413 from the declared length, before the body is read.
        String tooBig =
                DeclaredBody.post(server.port(), "/v1/chat/completions", CHAT.length() + stopList.length() + 12L);
        assertTrue(tooBig.startsWith("HTTP/1.1 413"), tooBig);
        assertEquals(
                "request_too_large",
                JSON.readTree(DeclaredBody.body(tooBig)).at("/error/code").asText(),
                tooBig);
        assertStillServing();
    }

    @Test
    void deepNestingIsRefusedWithoutAStackOverflow() throws Exception {
        String deep = "[".repeat(5000) + "]".repeat(5000);
        error(chat(",\"extra\":" + deep), 400);
        String nested = "{\"a\":".repeat(100) + "1" + "}".repeat(100);
        error(
                chat(",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":" + nested
                        + "}}]"),
                400);
        assertStillServing();
    }

    @ParameterizedTest
    @ValueSource(strings = {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"})
    void nonJsonContentTypeIs415(String type) throws Exception {
        JsonNode e = error(post("/v1/chat/completions", CHAT + "}", type), 415);
        assertTrue(e.get("message").asText().contains("application/json"), e.toString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"application/json; charset=latin1", "application/json;charset=\"utf-16\""})
    void aCharsetOtherThanUtf8Is415(String type) throws Exception {
        JsonNode e = error(post("/v1/chat/completions", CHAT + "}", type), 415);
        assertTrue(e.get("message").asText().contains("UTF-8"), e.toString());
    }

    @Test
    void jsonContentTypesAndAMissingOneAreAccepted() throws Exception {
        assertEquals(
                200,
                post("/v1/chat/completions", CHAT + ",\"max_tokens\":1}", "application/json; charset=utf-8")
                        .statusCode());
        assertEquals(
                200,
                post("/v1/chat/completions", CHAT + ",\"max_tokens\":1}", "application/json;charset=\"UTF-8\"")
                        .statusCode());
        assertEquals(
                200,
                post("/v1/chat/completions", CHAT + ",\"max_tokens\":1}", null).statusCode());
    }

    @Test
    void unknownFieldsAreIgnoredAsOpenAiDoes() throws Exception {
        HttpResponse<String> r = chat(",\"max_tokens\":1,\"frobnicate\":{\"x\":[1,2,3]},\"metadata\":{\"a\":\"b\"}");
        assertEquals(200, r.statusCode(), r.body());
    }

    @Test
    void chunkedBodyBeyondTheLimitIsCutOff() throws Exception {
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            // Read concurrently: the server answers as soon as the body passes the limit and then
            // closes the connection, while we are still sending.
            InputStream in = s.getInputStream();
            var response = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                StringBuilder sb = new StringBuilder();
                byte[] buf = new byte[8192];
                try {
                    int n;
                    while (sb.indexOf("}}") < 0 && (n = in.read(buf)) > 0) {
                        sb.append(new String(buf, 0, n, StandardCharsets.UTF_8));
                    }
                } catch (java.io.IOException e) {
                    sb.append("[read failed: ").append(e.getMessage()).append(']');
                }
                return sb.toString();
            });
            OutputStream out = s.getOutputStream();
            try {
                out.write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                + "Transfer-Encoding: chunked\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                byte[] chunk = ("1000\r\n" + "x".repeat(0x1000) + "\r\n").getBytes(StandardCharsets.US_ASCII);
                for (int i = 0; i < 64 && !response.isDone(); i++) { // up to 256 KiB against a 64 KiB limit
                    out.write(chunk);
                    out.flush();
                }
            } catch (java.io.IOException closedEarly) {
                // the server closes the connection once it has answered
            }
            String r = response.get(10, java.util.concurrent.TimeUnit.SECONDS);
            // The body is cut off at the limit either way; whether the 413 reaches the client
            // before the connection's reset depends on the TCP stacks (documented in api.md).
            assertTrue(
                    r.startsWith("HTTP/1.1 413") && r.contains("request_too_large")
                            || r.equals("[read failed: Connection reset]"),
                    r);
        }
        assertStillServing();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                ",\"echo\":true           | echo",
                ",\"suffix\":\"tail\"     | suffix",
                ",\"best_of\":3           | best_of",
            })
    void legacyCompletionOptionsThatChangeTheAnswerAreRefused(String fields, String param) throws Exception {
        JsonNode e = error(
                post(
                        "/v1/completions",
                        "{\"prompt\":\"Hi\",\"max_tokens\":1" + fields.strip() + "}",
                        "application/json"),
                400);
        assertEquals(param, e.get("param").asText(), e.toString());
        HttpResponse<String> defaults = post(
                "/v1/completions",
                "{\"prompt\":\"Hi\",\"max_tokens\":1,\"echo\":false," + "\"suffix\":null,\"best_of\":1}",
                "application/json");
        assertEquals(200, defaults.statusCode(), defaults.body());
    }

    @Test
    void internalErrorsCarryAJsonBodyAndTheRequestId() throws Exception {
        try (Engine failing = Engine.builder()
                        .preparer(r -> new PreparedPrompt(new int[] {7}, 1))
                        .planner((r, p) -> {
                            throw new IllegalStateException("planner bug");
                        })
                        .executor(ScriptedExecutor.counting())
                        .sinks(plan -> null)
                        .start();
                HttpServer s = new HttpServer(
                                new HttpServer.Config("127.0.0.1", 0, "tiny", null, ServerDefaults.mlxLm(), "fp"),
                                failing,
                                id -> "")
                        .start()) {
            HttpResponse<String> r = HTTP.send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + "/v1/completions"))
                            .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"x\"}"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            JsonNode e = error(r, 500);
            assertEquals("server_error", e.get("type").asText());
            String id = r.headers().firstValue("x-request-id").orElseThrow();
            assertTrue(e.get("message").asText().contains(id), e + " should name request id " + id);
        }
    }
}
