package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.mlx.MlxLaunch;
import dev.mlxring.mlx.ProjectHome;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code mlx-ring serve} as a tensor-parallel group of two ranks over the ring backend on
 * loopback. Under {@code mlx.launch -n 2} (as a user starts it): every answer equals mlx-lm's
 * {@code sharded_load} + {@code generate_step} under the same launch (tokens, and the first
 * token's logprob to the bit), a continuing conversation restores its prefix on both ranks,
 * concurrent requests batch across both ranks, sampled requests
 * (seeded, unseeded, penalties, logit bias) draw alike on both (the digest would stop the group
 * otherwise), and SIGTERM to rank 0
 * shuts the whole group down cleanly; {@code generate} under the same launch prints mlx-lm's
 * tokens from rank 0 alone. Started as two processes with the launcher's environment:
 * a rank that is killed (serving serially), or that stops answering (SIGSTOP; serving batched),
 * fails the streaming request in flight
 * with an error naming it, and {@code /health} then answers 503 with the reason, instead of
 * anything hanging.
 */
class ShardedServeTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String CELL = "llama-serve";
    private static final int MAX_TOKENS = 12;
    private static final List<List<Integer>> PROMPTS =
            List.of(List.of(1, 2, 3, 4, 5), List.of(900, 31, 7, 4242, 18000, 5, 77, 12345, 3, 9, 41000), List.of(17));
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    private static Path modelDir;
    private static JsonNode oracle;

    @BeforeAll
    static void buildModelAndOracle() throws Exception {
        Path home = ProjectHome.get();
        modelDir = TinyServeModels.build(home.resolve("build/oracle/serve"), CELL);
        Path prompts = Files.createTempFile("sharded-prompts", ".json");
        Path out = Files.createTempFile("sharded-serve-oracle", ".json");
        try {
            JSON.writeValue(prompts.toFile(), JSON.createObjectNode().set("prompts", JSON.valueToTree(PROMPTS)));
            // mlx_lm.server's default prefill step (2048) is the server's too.
            MlxLaunch.run(
                    2,
                    List.of(
                            ProjectHome.python().toString(),
                            home.resolve("scripts/oracle/sharded_greedy.py").toString(),
                            "--cell",
                            CELL + "=" + modelDir,
                            "--prompts",
                            prompts.toString(),
                            "--max-tokens",
                            Integer.toString(MAX_TOKENS),
                            "--prefill-step-size",
                            "2048",
                            "--out",
                            out.toString()),
                    300);
            oracle = JSON.readTree(out.toFile()).get("cells").get(CELL);
        } finally {
            Files.deleteIfExists(prompts);
            Files.deleteIfExists(out);
        }
    }

    private static HttpRequest completion(String base, List<Integer> prompt, int maxTokens) throws Exception {
        String body = JSON.writeValueAsString(JSON.createObjectNode()
                .put("max_tokens", maxTokens)
                .put("logprobs", true)
                .set("prompt", JSON.valueToTree(prompt)));
        return HttpRequest.newBuilder(URI.create(base + "/v1/completions"))
                .header("Content-Type", "application/json")
                .timeout(Duration.ofSeconds(120))
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build();
    }

    private static HttpResponse<String> complete(String base, List<Integer> prompt, int maxTokens) throws Exception {
        return HTTP.send(completion(base, prompt, maxTokens), HttpResponse.BodyHandlers.ofString());
    }

    private static List<Integer> tokens(JsonNode response) {
        List<Integer> ids = new ArrayList<>();
        response.get("choices")
                .get(0)
                .get("logprobs")
                .get("content")
                .forEach(t -> ids.add(t.get("id").asInt()));
        return ids;
    }

    /** The oracle's first-step logprob of {@code token}: logprobs0 holds the whole bf16 vector. */
    private static float oracleLogprob(JsonNode result, int token) {
        byte[] raw =
                Base64.getDecoder().decode(result.get("logprobs0").get("b64").asText());
        assertEquals("bfloat16", result.get("logprobs0").get("dtype").asText());
        short bits = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN).getShort(2 * token);
        return Float.intBitsToFloat((bits & 0xffff) << 16);
    }

    @Test
    void underMlxLaunchTwoRanksServeWhatMlxLmShardedLoadGenerates() throws Exception {
        try (ShardedRanks ranks = ShardedRanks.launch(List.of("--model", modelDir.toString()))) {
            for (int p = 0; p < PROMPTS.size(); p++) {
                HttpResponse<String> r = complete(ranks.base, PROMPTS.get(p), MAX_TOKENS);
                assertEquals(200, r.statusCode(), r.body());
                JsonNode doc = JSON.readTree(r.body());
                List<Integer> got = tokens(doc);
                List<Integer> want = new ArrayList<>();
                oracle.get(p).get("tokens").forEach(t -> want.add(t.asInt()));
                assertEquals(want, got, "prompt " + p + ": tokens");
                float first = (float) doc.get("choices")
                        .get(0)
                        .get("logprobs")
                        .get("content")
                        .get(0)
                        .get("logprob")
                        .asDouble();
                assertEquals(oracleLogprob(oracle.get(p), want.get(0)), first, 0f, "prompt " + p + ": first logprob");
            }
            // A conversation going on: the prompt continues request 0 and its answer, so every
            // rank restores the same entry from its own prefix cache (the ranks check they agree).
            List<Integer> continued = new ArrayList<>(PROMPTS.get(0));
            oracle.get(0).get("tokens").forEach(t -> continued.add(t.asInt()));
            continued.addAll(List.of(7, 8, 9));
            HttpResponse<String> hit = complete(ranks.base, continued, MAX_TOKENS);
            assertEquals(200, hit.statusCode(), hit.body());
            int cached = JSON.readTree(hit.body())
                    .get("usage")
                    .get("prompt_tokens_details")
                    .get("cached_tokens")
                    .asInt();
            assertTrue(cached >= PROMPTS.get(0).size(), "the continuation reuses request 0's KV state: " + hit.body());
            // Two chat conversations with one system prompt: rank 0 snapshots the system segment
            // (mlx_lm.server's _tokenize split), and so must every rank, or the second
            // conversation's reuse differs between ranks and stops the group.
            int systemReused = -1;
            for (String user : List.of("Name a colour.", "Name a fruit.")) {
                String chat = JSON.writeValueAsString(JSON.createObjectNode()
                        .put("max_tokens", 4)
                        .set(
                                "messages",
                                JSON.valueToTree(List.of(
                                        java.util.Map.of(
                                                "role", "system", "content", "You are terse. Answer in one word."),
                                        java.util.Map.of("role", "user", "content", user)))));
                HttpResponse<String> r = HTTP.send(
                        HttpRequest.newBuilder(URI.create(ranks.base + "/v1/chat/completions"))
                                .header("Content-Type", "application/json")
                                .timeout(Duration.ofSeconds(120))
                                .POST(HttpRequest.BodyPublishers.ofString(chat))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(200, r.statusCode(), r.body() + "\n" + ranks.logText());
                systemReused = JSON.readTree(r.body())
                        .get("usage")
                        .get("prompt_tokens_details")
                        .get("cached_tokens")
                        .asInt();
            }
            assertTrue(systemReused > 0, "the second conversation reuses the system segment on every rank");
            // Three at once: rows of one batch on both ranks (their tokens are BatchGenerator's for
            // whatever composition the arrivals made, so only completeness is checked here).
            List<CompletableFuture<HttpResponse<String>>> inFlight = new ArrayList<>();
            for (List<Integer> prompt : PROMPTS) {
                inFlight.add(HTTP.sendAsync(
                        completion(ranks.base, prompt, MAX_TOKENS), HttpResponse.BodyHandlers.ofString()));
            }
            for (CompletableFuture<HttpResponse<String>> f : inFlight) {
                HttpResponse<String> r = f.get();
                assertEquals(200, r.statusCode(), r.body());
                assertEquals(MAX_TOKENS, tokens(JSON.readTree(r.body())).size());
            }
            // Sampled rows, seeded and unseeded, with penalties and a logit bias: every rank must
            // draw the same tokens (rank 0's plan and engine seed), or the next step's digest
            // stops the group and these requests fail.
            for (String sampling : List.of(
                    "{\"temperature\": 0.9, \"top_p\": 0.8, \"seed\": 7}",
                    "{\"temperature\": 1.2, \"top_k\": 40, \"presence_penalty\": 0.5, \"logit_bias\": {\"17\": 3.0}}")) {
                var body = (com.fasterxml.jackson.databind.node.ObjectNode) JSON.readTree(sampling);
                body.put("max_tokens", MAX_TOKENS).set("prompt", JSON.valueToTree(PROMPTS.get(1)));
                HttpResponse<String> r = HTTP.send(
                        HttpRequest.newBuilder(URI.create(ranks.base + "/v1/completions"))
                                .header("Content-Type", "application/json")
                                .timeout(Duration.ofSeconds(120))
                                .POST(HttpRequest.BodyPublishers.ofString(body.toString()))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(200, r.statusCode(), r.body());
                assertEquals(
                        MAX_TOKENS,
                        JSON.readTree(r.body())
                                .get("usage")
                                .get("completion_tokens")
                                .asInt(),
                        r.body());
            }
            assertEquals(
                    200,
                    HTTP.send(
                                    HttpRequest.newBuilder(URI.create(ranks.base + "/health"))
                                            .build(),
                                    HttpResponse.BodyHandlers.ofString())
                            .statusCode(),
                    "the group is still up");
            // SIGTERM to rank 0: it drains, tells rank 1 to shut down, and the launch ends with 0.
            ShardedRanks.signal(ranks.rank(0), "TERM");
            List<Integer> codes = ranks.awaitExit(60);
            assertNotNull(codes, "the launch did not end after SIGTERM to rank 0:\n" + ranks.logText());
            assertEquals(List.of(0), codes, ranks.logText());
            assertTrue(ranks.logText().contains("rank 0 shut the group down"), ranks.logText());
            assertFalse(
                    ranks.logText().contains("tensor-parallel group failed"),
                    "an orderly shutdown is no group failure:\n" + ranks.logText());
        }
    }

    @Test
    void generateUnderMlxLaunchPrintsWhatMlxLmShardedLoadGenerates() throws Exception {
        List<String> ids = PROMPTS.get(1).stream().map(String::valueOf).toList();
        String out = MlxLaunch.run(
                2,
                MlxLaunch.javaCommand(
                        "dev.mlxring.ingress.cli.Main",
                        List.of(
                                "generate",
                                "--model",
                                modelDir.toString(),
                                "--prompt-tokens",
                                String.join(",", ids),
                                "--max-tokens",
                                Integer.toString(MAX_TOKENS),
                                "--json")),
                300);
        List<String> docs = out.lines().filter(l -> l.startsWith("{")).toList();
        assertEquals(1, docs.size(), "only rank 0 prints:\n" + out);
        assertEquals(oracle.get(1).get("tokens"), JSON.readTree(docs.get(0)).get("generated_tokens"), out);
    }

    /** {@code generate} has no executor calls to share, but the same heartbeat: it ends, it does not hang. */
    @Test
    void generateEndsWithTheReasonWhenARankStopsAnswering() throws Exception {
        try (ShardedRanks ranks = ShardedRanks.directCommand(MlxLaunch.javaCommand(
                "dev.mlxring.ingress.cli.Main",
                List.of(
                        "generate",
                        "--model",
                        modelDir.toString(),
                        "--prompt-tokens",
                        "1,2,3",
                        "--max-tokens",
                        "3000",
                        "--rank-timeout-seconds",
                        "2")))) {
            ranks.awaitLog("tensor-parallel generate over 2 ranks", 240);
            ShardedRanks.signal(ranks.process(1).toHandle(), "STOP");
            assertTrue(ranks.process(0).waitFor(60, TimeUnit.SECONDS), "rank 0 must end:\n" + ranks.logText());
            assertEquals(1, ranks.process(0).exitValue(), ranks.logText());
            assertTrue(
                    ranks.logText().contains("the tensor-parallel group is down: rank 1 stopped answering"),
                    ranks.logText());
        }
    }

    /** Serially served ({@code --decode-concurrency 1}: the serial run's calls cross the channel). */
    @Test
    void aKilledRankFailsTheRequestInFlightAndHealthSaysWhy() throws Exception {
        assertRankLossFails("KILL", "rank 1 closed its control connection", "1");
    }

    /** Batched (the default). */
    @Test
    void aRankThatStopsAnsweringFailsTheRequestInFlightAndHealthSaysWhy() throws Exception {
        assertRankLossFails("STOP", "rank 1 stopped answering", "8");
    }

    private static void assertRankLossFails(String signal, String reason, String concurrency) throws Exception {
        try (ShardedRanks ranks = ShardedRanks.direct(List.of(
                "--model", modelDir.toString(), "--rank-timeout-seconds", "2", "--decode-concurrency", concurrency))) {
            String body = JSON.writeValueAsString(JSON.createObjectNode()
                    .put("max_tokens", 4000)
                    .put("stream", true)
                    .set("prompt", JSON.valueToTree(PROMPTS.get(0))));
            HttpResponse<InputStream> r = HTTP.send(
                    HttpRequest.newBuilder(URI.create(ranks.base + "/v1/completions"))
                            .header("Content-Type", "application/json")
                            .timeout(Duration.ofSeconds(120))
                            .POST(HttpRequest.BodyPublishers.ofString(body))
                            .build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            assertEquals(200, r.statusCode());
            StringBuilder events = new StringBuilder();
            long[] lostAtNs = new long[1];
            CompletableFuture<Void> reading = new CompletableFuture<>();
            Thread reader = new Thread(
                    () -> {
                        try (BufferedReader in =
                                new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
                            String line;
                            int tokens = 0;
                            while ((line = in.readLine()) != null) {
                                synchronized (events) {
                                    events.append(line).append('\n');
                                }
                                if (line.startsWith("data: {") && !line.contains("\"error\"") && ++tokens == 3) {
                                    // Tokens are flowing over both ranks: now take rank 1 away.
                                    ShardedRanks.signal(ranks.rank(1), signal);
                                    lostAtNs[0] = System.nanoTime();
                                }
                            }
                            reading.complete(null);
                        } catch (Exception e) {
                            reading.completeExceptionally(e);
                        }
                    },
                    "stream-reader");
            reader.setDaemon(true);
            reader.start();
            try {
                // Bounded: the rank timeout is 2 s; a stream still open after a minute is the hang
                // this test exists to rule out.
                reading.get(60, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                synchronized (events) {
                    throw new AssertionError("the stream did not end within 60 s of losing rank 1 (" + signal + "):\n"
                            + events + ranks.logText());
                }
            }
            long started = lostAtNs[0];
            String text = events.toString();
            assertTrue(started != 0, "no tokens streamed before the stream ended:\n" + text + ranks.logText());
            assertTrue(
                    text.contains("\"error\"")
                            && text.contains("tensor-parallel group is down")
                            && text.contains(reason),
                    "the stream must end with an error naming the lost rank:\n" + text);
            assertTrue(text.contains("data: [DONE]"), text);
            HttpResponse<String> health = HTTP.send(
                    HttpRequest.newBuilder(URI.create(ranks.base + "/health")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(503, health.statusCode(), health.body());
            assertTrue(health.body().contains(reason), health.body());
            HttpResponse<String> after = complete(ranks.base, PROMPTS.get(2), 4);
            assertEquals(503, after.statusCode(), "a request after the loss must be refused: " + after.body());
        }
    }
}
