package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * {@code serve}'s prompt cache over HTTP on the default model: a conversation that continues
 * reuses the previous turn's KV (reported in {@code usage.prompt_tokens_details.cached_tokens})
 * and answers as a cold server does; a new conversation with the same system prompt reuses the
 * system prompt's snapshot while the first conversation still runs; {@code --prompt-cache-size 0}
 * turns it off; bad sizes are refused naming the flag.
 */
class PromptCacheServerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private static JsonNode chat(int port, String body) throws Exception {
        return chat("http://127.0.0.1:" + port, body);
    }

    private static JsonNode chat(String base, String body) throws Exception {
        HttpResponse<String> r = HTTP.send(
                HttpRequest.newBuilder(URI.create(base + "/v1/chat/completions"))
                        .timeout(Duration.ofMinutes(5))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        return JSON.readTree(r.body());
    }

    private static ServeCommand.Running serve(String... extra) {
        return InProcessServer.start(extra);
    }

    private static int cached(JsonNode r) {
        return r.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt();
    }

    @Test
    void aContinuedConversationReusesThePreviousTurn() throws Exception {
        String first = "{\"messages\":[{\"role\":\"user\",\"content\":\"Name a colour.\"}],\"max_tokens\":8}";
        JsonNode cold;
        JsonNode warm;
        JsonNode warmFirst;
        String second;
        try (ServeCommand.Running s = serve()) {
            int port = s.server().port();
            warmFirst = chat(port, first);
            assertEquals(0, cached(warmFirst), "nothing is cached before the first request");
            String answer = warmFirst
                    .get("choices")
                    .get(0)
                    .get("message")
                    .get("content")
                    .asText();
            second = "{\"messages\":[{\"role\":\"user\",\"content\":\"Name a colour.\"},"
                    + "{\"role\":\"assistant\",\"content\":" + JSON.writeValueAsString(answer) + "},"
                    + "{\"role\":\"user\",\"content\":\"And another?\"}],\"max_tokens\":8}";
            warm = chat(port, second);
            assertEquals(1, s.local().prefixCache().ram().hits(), "the second turn hit the cache");
        }
        int reused = cached(warm);
        int prompt = warm.get("usage").get("prompt_tokens").asInt();
        assertTrue(
                reused > warmFirst.get("usage").get("prompt_tokens").asInt() / 2 && reused < prompt,
                "cached " + reused + " of " + prompt + " prompt tokens");
        try (ServeCommand.Running s = serve("--prompt-cache-size", "0")) {
            chat(s.server().port(), first);
            cold = chat(s.server().port(), second);
            assertEquals(0, cached(cold), "the cache is off");
            assertEquals(null, s.local().prefixCache());
        }
        assertEquals(
                cold.get("choices").get(0).get("message").get("content").asText(),
                warm.get("choices").get(0).get("message").get("content").asText(),
                "reuse changes nothing in the answer");
    }

    /**
     * mlx_lm.server's batched loop snapshots a chat prompt where its system prompt ends (and where
     * the conversation ends, before the last token): a second conversation with the same system
     * prompt, sent while the first is still generating (nothing finished yet, so only those
     * snapshots can serve it), reports the system prompt as cached — as many tokens as mlx-lm's
     * own {@code _tokenize} puts in the system segment (live: {@code prompt_segments.py}).
     */
    @Test
    void aNewConversationWithTheSameSystemPromptReusesIt(@org.junit.jupiter.api.io.TempDir Path work) throws Exception {
        String system = "{\"role\":\"system\",\"content\":\"You are the ring's assistant. Answer briefly.\"}";
        String second = "[" + system + ",{\"role\":\"user\",\"content\":\"Name one sequencer.\"}]";
        Path cases = work.resolve("cases.json");
        Files.writeString(cases, "[{\"messages\":" + second + "}]");
        JsonNode segments = JSON.readTree(PythonScript.run(
                        "oracle/prompt_segments.py",
                        300,
                        List.of(
                                "--model",
                                ProjectHome.get()
                                        .resolve("models/smollm2-135m-instruct")
                                        .toString(),
                                "--tokenize",
                                cases.toString())))
                .get("cases")
                .get(0)
                .get("segments");
        assertEquals("system", segments.get(0).get(1).asText(), "mlx-lm splits off the system prompt");
        int systemTokens = segments.get(0).get(0).asInt();
        try (ServeCommand.Running s = serve()) {
            String base = InProcessServer.base(s);
            // The first conversation cannot end early (EOS ids banned) and outlasts the second.
            HttpResponse<Stream<String>> first = HTTP.send(
                    HttpRequest.newBuilder(URI.create(base + "/v1/chat/completions"))
                            .timeout(Duration.ofMinutes(5))
                            .header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString("{\"messages\":[" + system
                                    + ",{\"role\":\"user\",\"content\":\"What does a ring buffer do?\"}],\"max_tokens\":400,"
                                    + "\"stream\":true,\"logit_bias\":{\"0\":-100,\"2\":-100}}"))
                            .build(),
                    HttpResponse.BodyHandlers.ofLines());
            assertEquals(200, first.statusCode());
            try (Stream<String> lines = first.body()) {
                Iterator<String> it = lines.iterator();
                while (it.hasNext() && !it.next().contains("\"content\"")) {
                    // until the first token: its prompt is prefilled, its snapshots published
                }
                JsonNode r = chat(base, "{\"messages\":" + second + ",\"max_tokens\":1}");
                assertEquals(systemTokens, cached(r), "the system prompt's tokens came from the running conversation");
            }
        }
    }

    /** serve, ask, stop, serve, ask again: the second server restores the first one's KV from disk. */
    @Test
    void aPromptServedBeforeARestartRestoresFromDiskAfterIt(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        String ask =
                "{\"messages\":[{\"role\":\"user\",\"content\":\"What is the capital of France?\"}],\"max_tokens\":8}";
        JsonNode before;
        try (ServeCommand.Running s =
                serve("--prompt-cache-dir", dir.toString(), "--prompt-cache-disk-bytes", "200MB")) {
            before = chat(s.server().port(), ask);
            assertEquals(0, cached(before));
        } // closing drains the spill queue
        try (ServeCommand.Running s =
                serve("--prompt-cache-dir", dir.toString(), "--prompt-cache-disk-bytes", "200MB")) {
            assertEquals(0, s.local().prefixCache().ram().size(), "a new process: nothing in RAM");
            assertEquals(1, s.local().prefixCache().diskStats().entries(), "one entry on disk");
            JsonNode after = chat(s.server().port(), ask);
            int prompt = after.get("usage").get("prompt_tokens").asInt();
            assertEquals(prompt - 1, cached(after), "all but the last prompt token restored from disk");
            assertEquals(
                    before.get("choices").get(0).get("message").get("content").asText(),
                    after.get("choices").get(0).get("message").get("content").asText());
        }
    }

    @Test
    void badCacheFlagsNameTheFlag() {
        UsageException e = assertThrows(UsageException.class, () -> serve("--prompt-cache-bytes", "lots"));
        assertTrue(e.getMessage().contains("--prompt-cache-bytes"), e.getMessage());
        assertEquals(2_000_000_000L, PromptCacheFlags.parseSize("2GB"));
        assertEquals(1_500_000L, PromptCacheFlags.parseSize("1.5M"));
        assertEquals(123L, PromptCacheFlags.parseSize("123"));
        UsageException lone = assertThrows(UsageException.class, () -> serve("--prompt-cache-disk-bytes", "1GB"));
        assertTrue(lone.getMessage().contains("--prompt-cache-dir"), lone.getMessage());
        RuntimeException neg = assertThrows(RuntimeException.class, () -> serve("--prompt-cache-size", "-1"));
        assertTrue(neg.getMessage().contains("--prompt-cache-size"), neg.getMessage());
    }
}
