package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.ingress.pool.ModelCost;
import dev.mlxring.mlx.ProjectHome;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code serve --model-dir}: three tiny random-weight models (llama, qwen3_moe, gemma3; SmolLM2's
 * vocabulary, the default model's tokenizer) and one broken model folder served from one folder,
 * each loaded on first use; under {@code --memory-budget}, LRU unloading and admission by memory.
 * Each model's own output is what a server of that model alone answers.
 */
class ModelPoolServerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Each model's RAM prefix cache cap ({@code --prompt-cache-bytes}), reserved with its weights. */
    private static final long PROMPT_CACHE_BYTES = 4_000_000;

    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private static final List<String> CELLS = List.of("llama-serve", "qwen3_moe-serve", "gemma3-serve");
    private static final String DEFAULT = "llama-serve";
    private static final String PROMPT = "Say something about rivers.";

    private static Path folder;
    /** Each model's greedy answer to {@link #PROMPT}, from a server of that model alone. */
    private static final Map<String, String> OWN = new HashMap<>();

    @BeforeAll
    static void buildModels() throws Exception {
        folder = ProjectHome.get().resolve("build/pool-test/models");
        TinyServeModels.build(folder, CELLS);
        // A folder that looks like a model (config.json, tokenizer, weights file) whose weights are not safetensors.
        Path broken = folder.resolve("broken");
        Files.createDirectories(broken);
        for (String name : List.of("config.json", "tokenizer.json", "tokenizer_config.json")) {
            Files.copy(
                    folder.resolve(DEFAULT).resolve(name), broken.resolve(name), StandardCopyOption.REPLACE_EXISTING);
        }
        Files.writeString(broken.resolve("model.safetensors"), "these are not weights");
        for (String cell : CELLS) {
            try (ServeCommand.Running alone =
                    serve("--model", folder.resolve(cell).toString())) {
                HttpResponse<String> r = complete(alone, cell, PROMPT, 12);
                assertEquals(200, r.statusCode(), r.body());
                OWN.put(cell, text(r));
            }
        }
    }

    @Test
    void concurrentRequestsToThreeModelsGiveEachModelsOwnOutput() throws Exception {
        try (ServeCommand.Running pool = pooled()) {
            assertEquals("loaded", state(pool, DEFAULT));
            assertEquals("unloaded", state(pool, "gemma3-serve"));
            List<String> asked = new ArrayList<>();
            List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
            for (int round = 0; round < 2; round++) {
                for (String cell : CELLS) {
                    asked.add(cell);
                    answers.add(CompletableFuture.supplyAsync(() -> uncheckedComplete(pool, cell, PROMPT, 12)));
                }
            }
            for (int i = 0; i < asked.size(); i++) {
                HttpResponse<String> r = answers.get(i).join();
                assertEquals(200, r.statusCode(), r.body());
                assertEquals(OWN.get(asked.get(i)), text(r), asked.get(i));
            }
            for (String cell : CELLS) {
                assertEquals("loaded", state(pool, cell));
            }
            String metrics = get(pool, "/metrics").body();
            assertTrue(metrics.contains("mlxring_model_loads_total{model=\"gemma3-serve\"} 1.0"), metrics);
            assertTrue(
                    metrics.contains("mlxring_model_state{model=\"qwen3_moe-serve\",state=\"loaded\"} 1.0"), metrics);
        }
    }

    @Test
    void aModelLoadsOnDemandWhileAnotherStreams() throws Exception {
        try (ServeCommand.Running pool = pooled()) {
            ConcurrentLinkedQueue<Long> chunkNs = new ConcurrentLinkedQueue<>();
            CompletableFuture<Void> firstChunk = new CompletableFuture<>();
            CompletableFuture<HttpResponse<Stream<String>>> stream = HTTP.sendAsync(
                    post(pool, "/v1/chat/completions", body(DEFAULT, PROMPT, 400, true)),
                    HttpResponse.BodyHandlers.ofLines());
            CompletableFuture<Void> streamed = stream.thenAccept(r -> {
                        r.body().forEach(line -> {
                            if (line.startsWith("data: {")) {
                                chunkNs.add(System.nanoTime());
                                firstChunk.complete(null);
                            }
                        });
                        firstChunk.completeExceptionally(
                                new AssertionError("the stream ended without a chunk: HTTP " + r.statusCode()));
                    })
                    .whenComplete((v, e) -> {
                        if (e != null) {
                            firstChunk.completeExceptionally(e);
                        }
                    });
            firstChunk.get(5, java.util.concurrent.TimeUnit.MINUTES);
            long loadStartNs = System.nanoTime();
            HttpResponse<String> other = complete(pool, "qwen3_moe-serve", PROMPT, 12);
            long loadEndNs = System.nanoTime();
            assertEquals(200, other.statusCode(), other.body());
            assertEquals(OWN.get("qwen3_moe-serve"), text(other));
            streamed.get(5, java.util.concurrent.TimeUnit.MINUTES);
            long during = chunkNs.stream()
                    .filter(t -> t > loadStartNs && t < loadEndNs)
                    .count();
            assertTrue(during > 0, "the default model's stream wrote nothing while qwen3_moe loaded and answered");
        }
    }

    @Test
    void anUnknownModelIs404InEachDialect() throws Exception {
        try (ServeCommand.Running pool = pooled()) {
            HttpResponse<String> openAi = complete(pool, "nobody", PROMPT, 4);
            assertEquals(404, openAi.statusCode(), openAi.body());
            assertEquals(
                    "model_not_found",
                    JSON.readTree(openAi.body()).at("/error/code").asText());
            HttpResponse<String> anthropic = HTTP.send(
                    post(
                            pool,
                            "/v1/messages",
                            "{\"model\":\"nobody\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(404, anthropic.statusCode(), anthropic.body());
            assertEquals(
                    "not_found_error",
                    JSON.readTree(anthropic.body()).at("/error/type").asText());
            HttpResponse<String> responses = HTTP.send(
                    post(pool, "/v1/responses", "{\"model\":\"nobody\",\"input\":\"hi\"}"),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(404, responses.statusCode(), responses.body());
            assertEquals(
                    "model_not_found",
                    JSON.readTree(responses.body()).at("/error/code").asText());
        }
    }

    @Test
    void aBrokenModelFailsItsLoadClearlyAndTheOthersServe() throws Exception {
        try (ServeCommand.Running pool = pooled()) {
            HttpResponse<String> r = complete(pool, "broken", PROMPT, 4);
            assertEquals(503, r.statusCode(), r.body());
            JsonNode error = JSON.readTree(r.body()).get("error");
            assertEquals("model_load_failed", error.get("code").asText(), r.body());
            assertTrue(error.get("message").asText().startsWith("model 'broken' failed to load: "), r.body());
            JsonNode listed = model(pool, "broken");
            assertEquals("failed", listed.get("state").asText(), listed.toString());
            assertTrue(listed.has("error"), listed.toString());
            HttpResponse<String> other = complete(pool, "gemma3-serve", PROMPT, 12);
            assertEquals(200, other.statusCode(), other.body());
            assertEquals(OWN.get("gemma3-serve"), text(other));
        }
    }

    @Test
    void aBudgetThatFitsTwoOfThreeUnloadsTheLeastRecentlyUsed() throws Exception {
        long budget = resident(DEFAULT) + resident("qwen3_moe-serve") + resident("gemma3-serve") - 1;
        try (ServeCommand.Running pool = pooled("--memory-budget", Long.toString(budget))) {
            for (String cell : CELLS) {
                JsonNode listed = model(pool, cell);
                assertEquals(resident(cell), listed.get("resident_bytes").asLong(), "the cache cap is counted");
                assertEquals(
                        PROMPT_CACHE_BYTES, listed.get("prompt_cache_bytes").asLong());
            }
            for (String cell : List.of("qwen3_moe-serve", "gemma3-serve", "qwen3_moe-serve")) {
                HttpResponse<String> r = complete(pool, cell, PROMPT, 12);
                assertEquals(200, r.statusCode(), r.body());
                assertEquals(OWN.get(cell), text(r), cell);
                assertEquals("loaded", state(pool, cell));
                String other = cell.equals("gemma3-serve") ? "qwen3_moe-serve" : "gemma3-serve";
                assertEquals("unloaded", state(pool, other), "the other model made room for " + cell);
                assertEquals("loaded", state(pool, DEFAULT), "the default model is never unloaded");
            }
            String metrics = get(pool, "/metrics").body();
            assertTrue(metrics.contains("mlxring_model_unloads_total{model=\"qwen3_moe-serve\"} 1.0"), metrics);
            assertTrue(metrics.contains("mlxring_model_unloads_total{model=\"gemma3-serve\"} 1.0"), metrics);
        }
    }

    @Test
    void aPromptThatCouldNeverFitIs400WithTheNumbers() throws Exception {
        long budget = resident(DEFAULT) + request(64, 8) * 2;
        try (ServeCommand.Running pool =
                serve("--model", folder.resolve(DEFAULT).toString(), "--memory-budget", Long.toString(budget))) {
            HttpResponse<String> fits =
                    HTTP.send(post(pool, "/v1/completions", tokenBody(64, 8)), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, fits.statusCode(), fits.body());
            HttpResponse<String> r =
                    HTTP.send(post(pool, "/v1/completions", tokenBody(1500, 8)), HttpResponse.BodyHandlers.ofString());
            assertEquals(400, r.statusCode(), r.body());
            JsonNode error = JSON.readTree(r.body()).get("error");
            assertEquals("memory_budget_exceeded", error.get("code").asText(), r.body());
            String message = error.get("message").asText();
            assertTrue(message.contains("1500 prompt tokens"), message);
            assertTrue(message.contains(Long.toString(budget)), message);
            assertTrue(message.contains(Long.toString(request(1500, 8))), message);
        }
    }

    @Test
    void aFloodUnderASmallBudgetIsAnswered503WithRetryAfter() throws Exception {
        int promptTokens = 600;
        long need = request(promptTokens, 8);
        long budget = resident(DEFAULT) + need + need / 2;
        try (ServeCommand.Running pool =
                serve("--model", folder.resolve(DEFAULT).toString(), "--memory-budget", Long.toString(budget))) {
            List<CompletableFuture<HttpResponse<String>>> flood = IntStream.range(0, 12)
                    .mapToObj(i -> HTTP.sendAsync(
                            post(pool, "/v1/completions", tokenBody(promptTokens, 8)),
                            HttpResponse.BodyHandlers.ofString()))
                    .toList();
            int ok = 0;
            int busy = 0;
            for (var f : flood) {
                HttpResponse<String> r = f.join();
                if (r.statusCode() == 200) {
                    ok++;
                } else {
                    assertEquals(503, r.statusCode(), r.body());
                    assertEquals(
                            "memory_busy",
                            JSON.readTree(r.body()).at("/error/code").asText(),
                            r.body());
                    assertEquals("1", r.headers().firstValue("Retry-After").orElse(null), r.body());
                    busy++;
                }
            }
            assertTrue(ok >= 1, "none of the flood was served");
            assertTrue(busy >= 1, "the flood never exceeded a budget that fits one request");
            assertEquals(200, get(pool, "/health").statusCode());
            HttpResponse<String> after = HTTP.send(
                    post(pool, "/v1/completions", tokenBody(promptTokens, 8)), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, after.statusCode(), "every reservation was returned: " + after.body());
            String metrics = get(pool, "/metrics").body();
            assertTrue(
                    metrics.contains(
                            "mlxring_model_refused_requests_total{model=\"llama-serve\",reason=\"memory_busy\"} " + busy
                                    + ".0"),
                    metrics);
        }
    }

    @Test
    void aModelsFilePinsAndIdleModelsAreUnloadedAfterTheirTtl() throws Exception {
        Path file = folder.resolve("../models.json");
        Files.writeString(
                file,
                "{\"pinned-gemma\": {\"path\": \"models/gemma3-serve\", \"pinned\": true},"
                        + " \"qwen\": {\"path\": \"models/qwen3_moe-serve\", \"max-kv-size\": 64}}");
        try (ServeCommand.Running pool = pooled("--models", file.toString(), "--model-ttl", "1")) {
            assertEquals("loaded", state(pool, "pinned-gemma"), "a pinned model loads at start");
            assertTrue(model(pool, "pinned-gemma").get("pinned").asBoolean());
            HttpResponse<String> r = complete(pool, "qwen", PROMPT, 12);
            assertEquals(200, r.statusCode(), r.body());
            assertEquals(OWN.get("qwen3_moe-serve"), text(r), "a rotating cache of 64 holds this whole answer");
            HttpResponse<String> gemma = complete(pool, "pinned-gemma", PROMPT, 12);
            assertEquals(OWN.get("gemma3-serve"), text(gemma));
            long deadlineNs = System.nanoTime() + Duration.ofMinutes(2).toNanos();
            while (!state(pool, "qwen").equals("unloaded") && System.nanoTime() < deadlineNs) {
                Thread.onSpinWait();
            }
            assertEquals("unloaded", state(pool, "qwen"), "idle past --model-ttl");
            assertEquals("loaded", state(pool, "pinned-gemma"), "pinned: never unloaded");
            assertEquals("loaded", state(pool, DEFAULT), "the default: never unloaded");
            HttpResponse<String> again = complete(pool, "qwen", PROMPT, 12);
            assertEquals(OWN.get("qwen3_moe-serve"), text(again), "loaded again on its next request");
        }
    }

    // ---- helpers -------------------------------------------------------------------------------

    /** A model's resident cost as the pool counts it: weights and runtime, and its prompt cache's cap. */
    private static long resident(String cell) {
        return ModelCost.of(folder.resolve(cell)).residentBytes() + PROMPT_CACHE_BYTES;
    }

    private static long request(int promptTokens, int maxTokens) {
        return ModelCost.of(folder.resolve(DEFAULT))
                .requestBytes(promptTokens, maxTokens, GenerationOptions.DEFAULT_PREFILL_STEP_SIZE, 0);
    }

    private static String tokenBody(int promptTokens, int maxTokens) {
        String ids = String.join(
                ",",
                IntStream.range(0, promptTokens)
                        .mapToObj(i -> Integer.toString(100 + i % 500))
                        .toList());
        return "{\"model\":\"" + DEFAULT + "\",\"prompt\":[" + ids + "],\"max_tokens\":" + maxTokens
                + ",\"temperature\":0}";
    }

    private static ServeCommand.Running pooled(String... more) {
        List<String> flags = new ArrayList<>(
                List.of("--model", folder.resolve(DEFAULT).toString(), "--model-dir", folder.toString()));
        flags.addAll(List.of(more));
        return serve(flags.toArray(String[]::new));
    }

    private static ServeCommand.Running serve(String... flagValuePairs) {
        List<String> flags = new ArrayList<>(List.of("--prompt-cache-bytes", Long.toString(PROMPT_CACHE_BYTES)));
        flags.addAll(List.of(flagValuePairs));
        return InProcessServer.start(flags);
    }

    private static String body(String model, String prompt, int maxTokens, boolean stream) {
        return "{\"model\":\"" + model + "\",\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt
                + "\"}],\"max_tokens\":" + maxTokens + ",\"temperature\":0,\"stream\":" + stream + "}";
    }

    private static HttpRequest post(ServeCommand.Running server, String path, String body) {
        return HttpRequest.newBuilder(URI.create(InProcessServer.base(server) + path))
                .timeout(Duration.ofMinutes(5))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build();
    }

    private static HttpResponse<String> complete(
            ServeCommand.Running server, String model, String prompt, int maxTokens) throws Exception {
        return HTTP.send(
                post(server, "/v1/chat/completions", body(model, prompt, maxTokens, false)),
                HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> uncheckedComplete(
            ServeCommand.Running server, String model, String prompt, int maxTokens) {
        try {
            return complete(server, model, prompt, maxTokens);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static String text(HttpResponse<String> r) throws Exception {
        return JSON.readTree(r.body()).at("/choices/0/message/content").asText();
    }

    private static HttpResponse<String> get(ServeCommand.Running server, String path) throws Exception {
        return HTTP.send(
                HttpRequest.newBuilder(URI.create(InProcessServer.base(server) + path))
                        .timeout(Duration.ofMinutes(1))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static JsonNode model(ServeCommand.Running server, String id) throws Exception {
        HttpResponse<String> r = get(server, "/v1/models/" + id);
        assertEquals(200, r.statusCode(), r.body());
        return JSON.readTree(r.body());
    }

    private static String state(ServeCommand.Running server, String id) throws Exception {
        return model(server, id).get("state").asText();
    }
}
