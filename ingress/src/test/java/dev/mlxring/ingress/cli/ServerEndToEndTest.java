package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import java.io.InputStream;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The real server on the default model, through the real HTTP stack: the official {@code openai}
 * Python client (streaming and not, chat and completions, logprobs, stops, usage), greedy
 * outputs compared with {@code mlx_lm.server} run side by side, bad input, disconnects and
 * overload.
 */
class ServerEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = ServedModel.HTTP;

    @RegisterExtension
    static final ServedModel SERVER = ServedModel.serve("--max-queued", "2");

    private static HttpResponse<String> post(String path, byte[] body) throws Exception {
        return SERVER.post(path, body);
    }

    private static HttpResponse<String> post(String path, String body) throws Exception {
        return SERVER.post(path, body);
    }

    private static void assertError(HttpResponse<String> r, int status, String param, String messagePart)
            throws Exception {
        assertEquals(status, r.statusCode(), r.body());
        JsonNode error = JSON.readTree(r.body()).get("error");
        assertTrue(error != null && error.has("message") && error.has("type"), r.body());
        if (param != null) {
            assertEquals(param, error.get("param").asText(), r.body());
        }
        assertTrue(error.get("message").asText().contains(messagePart), r.body());
    }

    @Test
    void officialOpenAiClientAndMlxLmServerAgree() throws Exception {
        String out = PythonScript.run(
                "e2e/openai_client_check.py",
                900,
                List.of(
                        "--base-url",
                        SERVER.base() + "/v1",
                        "--model-dir",
                        ProjectHome.get().resolve(GenerateCommand.DEFAULT_MODEL).toString(),
                        "--compare-mlx-lm"));
        JsonNode r = JSON.readTree(out);
        List<String> failed = new ArrayList<>();
        for (JsonNode c : r.get("checks")) {
            if (!c.get("ok").asBoolean()) {
                failed.add(c.get("name").asText() + ": " + c.get("detail").asText());
            }
        }
        assertTrue(failed.isEmpty(), "openai client checks failed: " + failed);
        assertTrue(r.get("comparison").size() >= 4, out);
        for (JsonNode c : r.get("comparison")) {
            assertTrue(
                    c.has("identical") && c.get("identical").asBoolean(),
                    "greedy output differs from mlx_lm.server: " + c);
        }
    }

    @Test
    void badInputGetsOpenAiStyle400s() throws Exception {
        String chat = "/v1/chat/completions";
        assertError(post(chat, "{not json"), 400, null, "not valid JSON");
        assertError(post(chat, "[1,2]"), 400, null, "JSON object");
        assertError(
                post(chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"temperature\":\"hot\"}"),
                400,
                "temperature",
                "must be a number");
        assertError(
                post(chat, "{\"messages\":[{\"role\":\"wizard\",\"content\":\"hi\"}]}"),
                400,
                "messages[0].role",
                "wizard");
        assertError(post(chat, "{\"messages\":[]}"), 400, "messages", "non-empty");
        assertError(
                post(chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":100000000}"),
                400,
                "max_tokens",
                "at most");
        assertError(
                post(chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"top_p\":1.5}"),
                400,
                "top_p",
                "between 0");
        byte[] invalidUtf8 =
                "{\"messages\":[{\"role\":\"user\",\"content\":\"\u0000\"}]}".getBytes(StandardCharsets.UTF_8);
        invalidUtf8[invalidUtf8.length - 6] = (byte) 0xC3; // a lead byte followed by '"': not UTF-8
        assertError(post(chat, invalidUtf8), 400, null, "");
        assertError(post("/v1/completions", "{\"prompt\": 5}"), 400, "prompt", "prompt must be");
        assertError(
                post(chat, "{\"model\":\"gpt-9\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"),
                404,
                "model",
                "gpt-9");
        HttpResponse<String> route = HTTP.send(
                HttpRequest.newBuilder(SERVER.uri("/v2/nothing")).GET().build(), HttpResponse.BodyHandlers.ofString());
        assertError(route, 404, null, "unknown route");
        HttpResponse<String> method =
                HTTP.send(HttpRequest.newBuilder(SERVER.uri(chat)).GET().build(), HttpResponse.BodyHandlers.ofString());
        assertError(method, 405, null, "POST");
    }

    @Test
    void promptLongerThanTheContextIsRefusedAfterTokenization() throws Exception {
        String longText = "word ".repeat(9000);
        HttpResponse<String> r = post("/v1/completions", "{\"prompt\":\"" + longText + "\",\"max_tokens\":4}");
        assertError(r, 400, null, "maximum context length is 8192 tokens");
        assertEquals(
                "context_length_exceeded",
                JSON.readTree(r.body()).at("/error/code").asText());
        HttpResponse<String> sum =
                post("/v1/completions", "{\"prompt\":\"" + "word ".repeat(100) + "\",\"max_tokens\":8150}");
        assertError(sum, 400, null, "in the messages, 8150 in the completion");
    }

    /** The hardening issue's finding: this request used to kill the sink thread for good. */
    @Test
    void loneSurrogateStopStringIs400AndGenerationGoesOn() throws Exception {
        assertError(
                post("/v1/completions", "{\"prompt\":\"Hi\",\"max_tokens\":1,\"stop\":[\"\\ud800\"]}"),
                400,
                "stop[0]",
                "unpaired UTF-16 surrogate");
        HttpResponse<String> next = post("/v1/completions", "{\"prompt\":\"Hi\",\"max_tokens\":2}");
        assertEquals(200, next.statusCode(), next.body());
        assertEquals(
                2, JSON.readTree(next.body()).at("/usage/completion_tokens").asInt(), next.body());
        HttpResponse<String> health = HTTP.send(
                HttpRequest.newBuilder(SERVER.uri("/health")).GET().build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, health.statusCode(), health.body());
    }

    @Test
    void clientDisconnectMidStreamCancelsAndFreesTheSession() throws Exception {
        String body = "{\"messages\":[{\"role\":\"user\",\"content\":\"Tell me a long story.\"}],"
                + "\"stream\":true,\"max_tokens\":2000}";
        HttpResponse<InputStream> r = HTTP.send(
                HttpRequest.newBuilder(SERVER.uri("/v1/chat/completions"))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofInputStream());
        assertEquals(200, r.statusCode());
        InputStream in = r.body();
        byte[] buf = new byte[512];
        int total = 0;
        while (total < 400) {
            int n = in.read(buf);
            assertTrue(n > 0, "stream ended early");
            total += n;
        }
        in.close();
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (SERVER.engine().admittedCount() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        assertEquals(0, SERVER.engine().admittedCount(), "the disconnected session still holds its admission");
        HttpResponse<String> next = post("/v1/completions", "{\"prompt\":\"Hi\",\"max_tokens\":2}");
        assertEquals(200, next.statusCode(), next.body());
    }

    @Test
    void overloadAnswers503WithAnErrorBody() throws Exception {
        String body = "{\"prompt\":\"Count to one hundred:\",\"max_tokens\":300}";
        List<CompletableFuture<HttpResponse<String>>> futures = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            futures.add(HTTP.sendAsync(
                    HttpRequest.newBuilder(SERVER.uri("/v1/completions"))
                            .header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString(body))
                            .build(),
                    HttpResponse.BodyHandlers.ofString()));
        }
        int ok = 0;
        int overloaded = 0;
        for (var f : futures) {
            HttpResponse<String> r = f.get();
            if (r.statusCode() == 200) {
                ok++;
            } else {
                assertError(r, 503, null, "capacity");
                overloaded++;
            }
        }
        assertTrue(ok >= 1 && overloaded >= 1, "ok=" + ok + " overloaded=" + overloaded);
    }

    @Test
    void healthAndModels() throws Exception {
        HttpResponse<String> h = HTTP.send(
                HttpRequest.newBuilder(SERVER.uri("/health")).GET().build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, h.statusCode());
        HttpResponse<String> m = HTTP.send(
                HttpRequest.newBuilder(SERVER.uri("/v1/models")).GET().build(), HttpResponse.BodyHandlers.ofString());
        Matcher id = Pattern.compile("\"id\":\"([^\"]+)\"").matcher(m.body());
        assertTrue(id.find(), m.body());
        assertEquals("smollm2-135m-instruct", id.group(1));
    }
}
