package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code serve --kv-bits 8 --quantized-kv-start 0} on the default model: concurrent streamed
 * requests share the continuous batch (quantized KV rows no longer drain it and run alone), and
 * each stream's text equals the same request served alone (a lone row runs the serial
 * {@code --kv-bits} graph, which KvQuantizedServerTest holds equal to mlx_lm.server's).
 */
class KvQuantizedBatchServerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String API = "/v1/chat/completions";

    @RegisterExtension
    static final ServedModel SERVER =
            ServedModel.serve("--kv-bits", "8", "--quantized-kv-start", "0", "--prompt-cache-size", "0");

    private static String body(String prompt) {
        return "{\"stream\":true,\"temperature\":0,\"max_tokens\":32,\"messages\":[{\"role\":\"user\",\"content\":\""
                + prompt + "\"}]}";
    }

    /** The streamed answer's text: every chunk's delta content, in order. */
    private static String streamedText(HttpResponse<String> r) throws Exception {
        assertEquals(200, r.statusCode(), r.body());
        StringBuilder text = new StringBuilder();
        for (String line : r.body().split("\n")) {
            if (line.startsWith("data: {")) {
                JsonNode delta = JSON.readTree(line.substring(6)).at("/choices/0/delta/content");
                if (delta.isTextual()) {
                    text.append(delta.asText());
                }
            }
        }
        return text.toString();
    }

    @Test
    void concurrentStreamsUnderKvBitsShareTheBatchAndEachGiveTheirAloneText() throws Exception {
        String[] prompts = {
            "Count: one two three, one two three, one two three.",
            "Say the alphabet twice: a b c d e f, a b c d e f.",
            "Name three colours and a fruit.",
            "Copy this line: x = x + 1; y = y + 1; x = x + 1;",
            "Echo: hello world hello world hello world.",
        };
        String[] alone = new String[prompts.length];
        for (int i = 0; i < prompts.length; i++) {
            alone[i] = streamedText(SERVER.post(API, body(prompts[i])));
            assertTrue(!alone[i].isEmpty(), "request " + i + " answered");
        }
        List<CompletableFuture<HttpResponse<String>>> inFlight = new ArrayList<>();
        for (String p : prompts) {
            inFlight.add(ServedModel.HTTP.sendAsync(
                    HttpRequest.newBuilder(SERVER.uri(API))
                            .header("Content-Type", "application/json")
                            .timeout(Duration.ofMinutes(5))
                            .POST(HttpRequest.BodyPublishers.ofString(body(p)))
                            .build(),
                    HttpResponse.BodyHandlers.ofString()));
        }
        CompletableFuture<Void> all = CompletableFuture.allOf(inFlight.toArray(CompletableFuture[]::new));
        int mostRows = 0;
        while (!all.isDone()) {
            mostRows = Math.max(mostRows, SERVER.engine().execActivity().rows());
            Thread.onSpinWait();
        }
        for (int i = 0; i < prompts.length; i++) {
            assertEquals(alone[i], streamedText(inFlight.get(i).join()), "stream " + i + " batched vs alone");
        }
        assertTrue(mostRows >= 4, "the streams shared the batch: at most " + mostRows + " rows in one unit");
    }
}
