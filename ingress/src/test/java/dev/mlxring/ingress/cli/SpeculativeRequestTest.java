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
 * The {@code "speculative"} extension field through the real server on the default model, on all
 * three APIs: a request overrides the server's default ({@code off} or {@code ngram} with its own
 * {@code num_tokens} on an ngram server), values the field does not take are refused with a 400
 * naming the field, {@code draft} without a draft model and any method but {@code off} on a
 * server without speculation are refused with a 400 naming {@code speculative}; the server batches
 * while it speculates, rows with and without speculation in one batch.
 */
class SpeculativeRequestTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PROMPT = "Repeat exactly: the cat sat on the mat, the cat sat on the mat.";
    private static final int MAX_TOKENS = 24;

    @RegisterExtension
    static final ServedModel NGRAM = ServedModel.serve("--speculative", "ngram", "--prompt-cache-size", "0");

    @RegisterExtension
    static final ServedModel PLAIN = ServedModel.serve("--prompt-cache-size", "0");

    /** A greedy request of {@link #PROMPT} to {@code api}, with {@code speculative} (raw JSON) unless null. */
    static String body(String api, String speculative) {
        String spec = speculative == null ? "" : ",\"speculative\":" + speculative;
        String user = "{\"role\":\"user\",\"content\":\"" + PROMPT + "\"}";
        return switch (api) {
            case "/v1/chat/completions" ->
                "{\"temperature\":0,\"max_tokens\":" + MAX_TOKENS + ",\"messages\":[" + user + "]" + spec + "}";
            case "/v1/messages" ->
                "{\"model\":\"default_model\",\"temperature\":0,\"max_tokens\":" + MAX_TOKENS + ",\"messages\":[" + user
                        + "]" + spec + "}";
            case "/v1/responses" ->
                "{\"temperature\":0,\"max_output_tokens\":" + MAX_TOKENS + ",\"input\":\"" + PROMPT + "\"" + spec + "}";
            default -> throw new IllegalArgumentException(api);
        };
    }

    static final String[] APIS = {"/v1/chat/completions", "/v1/messages", "/v1/responses"};

    /** The answer's text, whichever API gave it. */
    static String text(String api, JsonNode r) {
        return switch (api) {
            case "/v1/chat/completions" -> r.at("/choices/0/message/content").asText();
            case "/v1/messages" -> r.at("/content/0/text").asText();
            default -> r.at("/output/0/content/0/text").asText();
        };
    }

    private static JsonNode ok(ServedModel server, String api, String speculative) throws Exception {
        HttpResponse<String> r = server.post(api, body(api, speculative));
        assertEquals(200, r.statusCode(), api + " " + speculative + ": " + r.body());
        return JSON.readTree(r.body());
    }

    private static void refused(ServedModel server, String api, String speculative, String field) throws Exception {
        HttpResponse<String> r = server.post(api, body(api, speculative));
        assertEquals(400, r.statusCode(), api + " " + speculative + ": " + r.body());
        assertTrue(r.body().contains(field), api + " " + speculative + " should name " + field + ": " + r.body());
        if (api.equals("/v1/chat/completions")) {
            assertEquals(field, JSON.readTree(r.body()).at("/error/param").asText(), r.body());
        }
    }

    @Test
    void aRequestTurnsSpeculationOffOrSetsItsOwnNumTokensWithTheSameGreedyText() throws Exception {
        for (String api : APIS) {
            String byDefault = text(api, ok(NGRAM, api, null));
            assertEquals(byDefault, text(api, ok(NGRAM, api, "{\"method\":\"off\"}")), api);
            assertEquals(byDefault, text(api, ok(NGRAM, api, "{\"method\":\"ngram\",\"num_tokens\":5}")), api);
            assertEquals(byDefault, text(api, ok(PLAIN, api, "{\"method\":\"off\"}")), api);
        }
    }

    @Test
    void valuesTheFieldDoesNotTakeAreRefusedNamingTheField() throws Exception {
        for (String api : APIS) {
            refused(NGRAM, api, "\"ngram\"", "speculative");
            refused(NGRAM, api, "{\"num_tokens\":2}", "speculative.method");
            refused(NGRAM, api, "{\"method\":\"eagle\"}", "speculative.method");
            refused(NGRAM, api, "{\"method\":\"ngram\",\"num_tokens\":0}", "speculative.num_tokens");
            refused(NGRAM, api, "{\"method\":\"ngram\",\"num_tokens\":33}", "speculative.num_tokens");
            refused(NGRAM, api, "{\"method\":\"ngram\",\"num_tokens\":2.5}", "speculative.num_tokens");
            refused(NGRAM, api, "{\"method\":\"ngram\",\"k\":2}", "speculative.k");
        }
    }

    @Test
    void draftWithoutADraftModelIsRefused() throws Exception {
        for (String api : APIS) {
            refused(NGRAM, api, "{\"method\":\"draft\"}", "speculative");
        }
    }

    @Test
    void aServerWithoutSpeculationRefusesAMethodButOff() throws Exception {
        for (String api : APIS) {
            refused(PLAIN, api, "{\"method\":\"ngram\"}", "speculative");
            refused(PLAIN, api, "{\"method\":\"draft\",\"num_tokens\":2}", "speculative");
        }
    }

    /**
     * Six greedy requests at once on the ngram server, mixed rows in one continuous batch: the
     * server default, {@code off}, and {@code ngram} with {@code num_tokens} 1, 2 and 5, on
     * different prompts. Each answer's text equals the same request's alone, and only the rows that
     * speculated report {@code usage.speculative}. The exec stage is watched while they run: at
     * least four rows shared a unit.
     */
    @Test
    void concurrentRequestsWithMixedSpeculationEachGiveTheirAloneText() throws Exception {
        String[] prompts = {
            PROMPT,
            "Count: one two three, one two three, one two three.",
            "Say the alphabet twice: a b c d e f, a b c d e f.",
            "Repeat: red green blue, red green blue, red green blue.",
            "Copy this line: x = x + 1; y = y + 1; x = x + 1;",
            "Echo: hello world hello world hello world.",
        };
        String[] specs = {
            null,
            "{\"method\":\"off\"}",
            "{\"method\":\"ngram\",\"num_tokens\":1}",
            "{\"method\":\"ngram\",\"num_tokens\":5}",
            "{\"method\":\"off\"}",
            "{\"method\":\"ngram\",\"num_tokens\":2}",
        };
        String api = "/v1/chat/completions";
        String[] bodies = new String[prompts.length];
        String[] alone = new String[prompts.length];
        for (int i = 0; i < prompts.length; i++) {
            bodies[i] = body(api, specs[i]).replace(PROMPT, prompts[i]);
            HttpResponse<String> r = NGRAM.post(api, bodies[i]);
            assertEquals(200, r.statusCode(), r.body());
            alone[i] = text(api, JSON.readTree(r.body()));
        }
        List<CompletableFuture<HttpResponse<String>>> inFlight = new ArrayList<>();
        for (String b : bodies) {
            inFlight.add(ServedModel.HTTP.sendAsync(
                    HttpRequest.newBuilder(NGRAM.uri(api))
                            .header("Content-Type", "application/json")
                            .timeout(Duration.ofMinutes(5))
                            .POST(HttpRequest.BodyPublishers.ofString(b))
                            .build(),
                    HttpResponse.BodyHandlers.ofString()));
        }
        CompletableFuture<Void> all = CompletableFuture.allOf(inFlight.toArray(CompletableFuture[]::new));
        int mostRows = 0;
        while (!all.isDone()) {
            mostRows = Math.max(mostRows, NGRAM.engine().execActivity().rows());
            Thread.onSpinWait();
        }
        for (int i = 0; i < prompts.length; i++) {
            HttpResponse<String> r = inFlight.get(i).join();
            assertEquals(200, r.statusCode(), r.body());
            JsonNode answer = JSON.readTree(r.body());
            assertEquals(alone[i], text(api, answer), "request " + i + " (" + specs[i] + ") batched vs alone");
            boolean off = specs[i] != null && specs[i].contains("off");
            assertEquals(!off, answer.at("/usage/speculative").isObject(), "request " + i + ": " + answer.at("/usage"));
        }
        assertTrue(mostRows >= 4, "the requests shared the batch: at most " + mostRows + " rows in one unit");
    }

    /** The value of the sample line {@code name} in the server's /metrics (0 when absent). */
    private static double metric(ServedModel server, String name) throws Exception {
        String text = ServedModel.HTTP
                .send(
                        java.net.http.HttpRequest.newBuilder(server.uri("/metrics"))
                                .GET()
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
        for (String line : text.split("\n")) {
            if (line.startsWith(name + " ")) {
                return Double.parseDouble(line.substring(name.length() + 1).trim());
            }
        }
        return 0;
    }

    @Test
    void usageAndMetricsCountTheProposalsOfARequestThatSpeculated() throws Exception {
        for (String api : APIS) {
            double proposedBefore = metric(NGRAM, "mlxring_speculative_proposed_tokens_total");
            double acceptedBefore = metric(NGRAM, "mlxring_speculative_accepted_tokens_total");
            double ratesBefore = metric(NGRAM, "mlxring_speculative_acceptance_rate_count");
            JsonNode spec =
                    ok(NGRAM, api, "{\"method\":\"ngram\",\"num_tokens\":2}").at("/usage/speculative");
            assertTrue(spec.isObject(), api + ": " + spec);
            int proposed = spec.get("proposed").asInt();
            int accepted = spec.get("accepted").asInt();
            assertTrue(proposed > 0 && accepted >= 0 && accepted <= proposed, api + ": " + spec);
            assertEquals(proposedBefore + proposed, metric(NGRAM, "mlxring_speculative_proposed_tokens_total"), api);
            assertEquals(acceptedBefore + accepted, metric(NGRAM, "mlxring_speculative_accepted_tokens_total"), api);
            assertEquals(ratesBefore + 1, metric(NGRAM, "mlxring_speculative_acceptance_rate_count"), api);
            assertTrue(
                    ok(NGRAM, api, "{\"method\":\"off\"}")
                            .at("/usage/speculative")
                            .isMissingNode(),
                    api);
            assertTrue(ok(PLAIN, api, null).at("/usage/speculative").isMissingNode(), api);
        }
    }

    @Test
    void aStreamedChatReportsItsProposalsInTheUsageChunk() throws Exception {
        String body = body("/v1/chat/completions", "{\"method\":\"ngram\",\"num_tokens\":2}")
                .replaceFirst("\\{", "{\"stream\":true,\"stream_options\":{\"include_usage\":true},");
        HttpResponse<String> r = NGRAM.post("/v1/chat/completions", body);
        assertEquals(200, r.statusCode(), r.body());
        JsonNode usage = null;
        for (String line : r.body().split("\n")) {
            if (line.startsWith("data: {")) {
                JsonNode chunk = JSON.readTree(line.substring(6));
                if (chunk.hasNonNull("usage")) {
                    usage = chunk.get("usage");
                }
            }
        }
        assertTrue(usage != null && usage.at("/speculative/proposed").asInt() > 0, r.body());
        assertEquals(
                usage.at("/speculative"),
                ok(NGRAM, "/v1/chat/completions", "{\"method\":\"ngram\",\"num_tokens\":2}")
                        .at("/usage/speculative"),
                "greedy: the same proposals streamed or not");
    }
}
