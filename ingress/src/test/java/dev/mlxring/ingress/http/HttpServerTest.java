package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.Executor;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The HTTP surface over an engine with stage doubles: framing, auth and errors, no model. */
class HttpServerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private Engine engine;
    private HttpServer server;

    /** Emits tokens 1..maxTokens, each rendered as "t<id> ". */
    private static final Executor COUNTING = ScriptedExecutor.counting();

    @BeforeEach
    void start() {
        engine = StageDoubles.engine(COUNTING).start();
        server = new HttpServer(
                        new HttpServer.Config("127.0.0.1", 0, "tiny", "sekret", ServerDefaults.mlxLm(), "fp"),
                        engine,
                        id -> "t" + id)
                .start();
    }

    @AfterEach
    void stop() {
        server.close();
        engine.close();
    }

    private HttpResponse<String> post(String path, String body, boolean auth) throws Exception {
        var b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (auth) {
            b.header("Authorization", "Bearer sekret");
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void apiKeyGuardsEveryRouteButHealth() throws Exception {
        HttpResponse<String> r = post("/v1/completions", "{\"prompt\":\"x\"}", false);
        assertEquals(401, r.statusCode());
        assertEquals(
                "invalid_api_key",
                JSON.readTree(r.body()).get("error").get("code").asText());
        HttpResponse<String> h = HTTP.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/health"))
                        .GET()
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, h.statusCode());
    }

    private static HttpResponse<String> options(int port, String origin) throws Exception {
        return HTTP.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
                        .method("OPTIONS", HttpRequest.BodyPublishers.noBody())
                        .header("Origin", origin)
                        .header("Access-Control-Request-Method", "POST")
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void corsAsMlxLmServerDoes() throws Exception {
        // The preflight carries no key: it is answered before auth.
        HttpResponse<String> pre = options(server.port(), "http://ui.example");
        assertEquals(204, pre.statusCode());
        assertEquals(
                "*", pre.headers().firstValue("Access-Control-Allow-Origin").orElse(null));
        assertEquals(
                "*", pre.headers().firstValue("Access-Control-Allow-Headers").orElse(null));
        HttpResponse<String> r = post("/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":1}", true);
        assertEquals(200, r.statusCode());
        assertEquals("*", r.headers().firstValue("Access-Control-Allow-Origin").orElse(null));
        assertEquals(
                "*",
                post("/v1/completions", "{}", false)
                        .headers()
                        .firstValue("Access-Control-Allow-Origin")
                        .orElse(null),
                "errors carry it too");

        try (HttpServer only = new HttpServer(
                        new HttpServer.Config(
                                "127.0.0.1",
                                0,
                                "tiny",
                                null,
                                ServerDefaults.mlxLm(),
                                "fp",
                                HttpServer.DEFAULT_MAX_BODY_BYTES,
                                List.of("http://ui.example")),
                        engine,
                        id -> "t" + id)
                .start()) {
            HttpResponse<String> allowed = options(only.port(), "http://ui.example");
            assertEquals(
                    "http://ui.example",
                    allowed.headers().firstValue("Access-Control-Allow-Origin").orElse(null));
            assertEquals("Origin", allowed.headers().firstValue("Vary").orElse(null));
            HttpResponse<String> other = options(only.port(), "http://elsewhere.example");
            assertEquals(204, other.statusCode());
            assertTrue(
                    other.headers().firstValue("Access-Control-Allow-Origin").isEmpty(),
                    other.headers().toString());
        }
    }

    private HttpResponse<String> get(String path) throws Exception {
        return HTTP.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
                        .header("Authorization", "Bearer sekret")
                        .GET()
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void modelsListAndRetrieve() throws Exception {
        JsonNode list = JSON.readTree(get("/v1/models").body());
        assertEquals("tiny", list.at("/data/0/id").asText());
        for (String id : new String[] {"tiny", "default_model"}) {
            HttpResponse<String> one = get("/v1/models/" + id);
            assertEquals(200, one.statusCode(), one.body());
            assertEquals(list.at("/data/0"), JSON.readTree(one.body()));
        }
        HttpResponse<String> missing = get("/v1/models/gpt-9");
        assertEquals(404, missing.statusCode());
        assertEquals(
                "model_not_found",
                JSON.readTree(missing.body()).at("/error/code").asText());
    }

    @Test
    void nonStreamingChatHasOpenAiShapeAndUsage() throws Exception {
        HttpResponse<String> r = post(
                "/v1/chat/completions",
                "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":3,\"logprobs\":true,"
                        + "\"top_logprobs\":1}",
                true);
        assertEquals(200, r.statusCode(), r.body());
        JsonNode o = JSON.readTree(r.body());
        assertEquals("chat.completion", o.get("object").asText());
        assertTrue(o.get("id").asText().startsWith("chatcmpl-"));
        JsonNode c = o.get("choices").get(0);
        assertEquals("t1 t2 t3 ", c.get("message").get("content").asText());
        assertEquals("assistant", c.get("message").get("role").asText());
        assertEquals("length", c.get("finish_reason").asText());
        assertEquals(3, c.get("logprobs").get("content").size());
        assertEquals("t2", c.get("logprobs").get("content").get(1).get("token").asText());
        assertEquals(2, o.get("usage").get("prompt_tokens").asInt());
        assertEquals(3, o.get("usage").get("completion_tokens").asInt());
        assertEquals(5, o.get("usage").get("total_tokens").asInt());
    }

    @Test
    void streamingCompletionIsSseEndingWithDone() throws Exception {
        HttpResponse<String> r = post(
                "/v1/completions",
                "{\"prompt\":\"x\",\"max_tokens\":2,\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
                true);
        assertEquals(200, r.statusCode());
        assertEquals("text/event-stream", r.headers().firstValue("Content-Type").orElse(""));
        List<JsonNode> events = new ArrayList<>();
        String[] lines = r.body().split("\n\n");
        for (String l : lines) {
            assertTrue(l.startsWith("data: "), l);
            if (!l.equals("data: [DONE]")) {
                events.add(JSON.readTree(l.substring(6)));
            }
        }
        assertEquals("data: [DONE]", lines[lines.length - 1]);
        assertEquals("t1 ", events.get(0).get("choices").get(0).get("text").asText());
        assertEquals("text_completion", events.get(0).get("object").asText());
        JsonNode last = events.get(events.size() - 1);
        assertEquals(4, last.get("usage").get("total_tokens").asInt());
        assertEquals(
                "length",
                events.get(events.size() - 2)
                        .get("choices")
                        .get(0)
                        .get("finish_reason")
                        .asText());
    }
}
