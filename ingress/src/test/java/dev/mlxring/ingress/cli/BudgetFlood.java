package dev.mlxring.ingress.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.ingress.pool.ModelCost;
import dev.mlxring.ingress.pool.PromptCacheCap;
import dev.mlxring.kvstore.RamPrefixCache;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;
import java.util.stream.Stream;

/**
 * A flood of long prompts against {@code serve --memory-budget} in a process of its own, its
 * resident set sampled throughout ({@link RssSampler}). The server's default model is the tiny
 * llama of the oracle models; the flooded model is the default model of the project
 * (SmolLM2-135M), listed by {@code --model-dir} and so loaded by the first request, inside the
 * measured window. The server's JVM heap is fixed and touched at start ({@code -Xms} = {@code
 * -Xmx}, {@code -XX:+AlwaysPreTouch}), so the baseline (RSS right after start-up, before any
 * request) holds it. Before the flood each distinct prompt is asked alone, for the text every
 * flooded answer to it must equal.
 */
final class BudgetFlood {
    static final int PROMPT_TOKENS = 600;
    static final int MAX_TOKENS = 8;
    static final int DISTINCT_PROMPTS = 3;
    private static final String FLOODED = "smollm2";
    private static final List<String> SERVER_JVM = List.of("-Xms256m", "-Xmx256m", "-XX:+AlwaysPreTouch");
    private static final List<String> TOKENIZER_FILES =
            List.of("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json");
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    private BudgetFlood() {}

    /**
     * What a flood saw.
     *
     * @param answers the flood's responses, in the order sent
     * @param expected per answer, the text its prompt got alone
     * @param budgetBytes {@code --memory-budget}
     * @param roomBytes what the budget leaves beside the default model and its prompt cache's cap
     *     (reserved in the baseline): the bound on RSS − baseline
     * @param floodedWeightsBytes the flooded model's weights and tokenizer (its resident bytes less
     *     {@link ModelCost#RUNTIME_BASE_BYTES}), loaded during the window
     * @param after a request sent alone after the flood, and {@code expected} of it
     * @param metricsAfter the server's {@code /metrics} after the flood (empty if it died)
     */
    record Outcome(
            List<HttpResponse<String>> answers,
            List<String> expected,
            long budgetBytes,
            long roomBytes,
            long requestBytes,
            long floodedWeightsBytes,
            long baselineBytes,
            long peakBytes,
            long samples,
            boolean aliveAfter,
            HttpResponse<String> after,
            String afterExpected,
            String metricsAfter,
            String log) {
        long growthBytes() {
            return peakBytes - baselineBytes;
        }

        long served() {
            return answers.stream().filter(r -> r.statusCode() == 200).count();
        }
    }

    /**
     * Floods a fresh server with {@code requests} concurrent requests of {@link #PROMPT_TOKENS}
     * prompt tokens, under a budget with room for both models' weights and prompt cache caps and
     * {@code roomInRequests} requests' peaks ({@link ModelCost#requestBytes}); {@code
     * moreServeFlags} follow the budget's.
     */
    static Outcome run(double roomInRequests, int requests, String... moreServeFlags) throws Exception {
        Path home = ProjectHome.get();
        Path folder = home.resolve("build/pool-flood");
        Path defaultModel = tinyDefaultModel(home, folder.resolve("default"));
        Path dir = folder.resolve("models");
        Files.createDirectories(dir);
        Path flooded = dir.resolve(FLOODED);
        if (!Files.exists(flooded)) {
            Files.createSymbolicLink(flooded, home.resolve(GenerateCommand.DEFAULT_MODEL));
        }
        ModelCost floodedCost = ModelCost.of(flooded);
        long defaultResident = ModelCost.of(defaultModel).residentBytes();
        long need = floodedCost.requestBytes(PROMPT_TOKENS, MAX_TOKENS, GenerationOptions.DEFAULT_PREFILL_STEP_SIZE, 0);
        // Both models' prefix caches are capped and their caps reserved beside their weights: the
        // budget holds the two models' weights, their caps and roomInRequests requests' peaks.
        long peaksBytes = (long) (need * roomInRequests);
        long budget = budgetFor(defaultResident + floodedCost.residentBytes() + peaksBytes, moreServeFlags);
        long room = budget - defaultResident - cacheCapBytes(budget, moreServeFlags);
        List<String> flags = new ArrayList<>(List.of(
                "--model",
                defaultModel.toString(),
                "--model-dir",
                dir.toString(),
                "--memory-budget",
                Long.toString(budget)));
        flags.addAll(List.of(moreServeFlags));
        List<String> jvm = new ArrayList<>(SERVER_JVM);
        String moreJvm = System.getProperty("mlxring.bench.serverJvm", "").trim();
        if (!moreJvm.isEmpty()) {
            jvm.addAll(List.of(moreJvm.split("\\s+")));
        }
        try (ServerProcess server = ServerProcess.start(jvm, flags.toArray(String[]::new));
                RssSampler rss = new RssSampler(server.serverPid())) {
            List<String> alone = new ArrayList<>();
            for (int p = 0; p < DISTINCT_PROMPTS; p++) {
                HttpResponse<String> r = send(server, tokenBody(p));
                if (r.statusCode() != 200) {
                    throw new AssertionError("prompt " + p + " alone: HTTP " + r.statusCode() + " " + r.body());
                }
                alone.add(text(r));
            }
            List<CompletableFuture<HttpResponse<String>>> flood = IntStream.range(0, requests)
                    .mapToObj(i -> HTTP.sendAsync(
                            request(server, tokenBody(i % DISTINCT_PROMPTS)), HttpResponse.BodyHandlers.ofString()))
                    .toList();
            List<HttpResponse<String>> answers = new ArrayList<>();
            List<String> expected = new ArrayList<>();
            for (int i = 0; i < requests; i++) {
                answers.add(flood.get(i).join());
                expected.add(alone.get(i % DISTINCT_PROMPTS));
            }
            long peak = rss.stop();
            boolean alive = server.process.isAlive();
            String metrics = alive
                    ? HTTP.send(
                                    HttpRequest.newBuilder(URI.create(server.base + "/metrics"))
                                            .build(),
                                    HttpResponse.BodyHandlers.ofString())
                            .body()
                    : "";
            HttpResponse<String> after = alive ? send(server, tokenBody(0)) : null;
            return new Outcome(
                    answers,
                    expected,
                    budget,
                    room,
                    need,
                    floodedCost.residentBytes() - ModelCost.RUNTIME_BASE_BYTES,
                    rss.baselineBytes(),
                    peak,
                    rss.samples(),
                    alive,
                    after,
                    alone.get(0),
                    metrics,
                    server.logText());
        }
    }

    /**
     * The smallest budget that leaves {@code bytes} beside two models' prompt cache caps ({@link
     * PromptCacheCap}, from {@code serveFlags}' {@code --prompt-cache-size} and plain-count {@code
     * --prompt-cache-bytes}).
     */
    static long budgetFor(long bytes, String... serveFlags) {
        long budget = bytes;
        while (budget - 2 * cacheCapBytes(budget, serveFlags) < bytes) {
            budget += Math.max(1, (bytes - (budget - 2 * cacheCapBytes(budget, serveFlags))));
        }
        return budget;
    }

    /** Each model's prompt cache cap under {@code budget} with {@code serveFlags}. */
    static long cacheCapBytes(long budget, String... serveFlags) {
        List<String> f = List.of(serveFlags);
        int size = f.indexOf("--prompt-cache-size");
        int bytes = f.indexOf("--prompt-cache-bytes");
        return PromptCacheCap.bytes(
                budget,
                size < 0 ? RamPrefixCache.DEFAULT_MAX_ENTRIES : Integer.parseInt(f.get(size + 1)),
                bytes < 0 ? -1 : Long.parseLong(f.get(bytes + 1)));
    }

    /** The text of a completion's first choice. */
    static String text(HttpResponse<String> r) throws IOException {
        return JSON.readTree(r.body()).at("/choices/0/text").asText();
    }

    /** The error code of a refusal. */
    static String errorCode(HttpResponse<String> r) throws IOException {
        return JSON.readTree(r.body()).at("/error/code").asText();
    }

    /** The tiny llama of the oracle models with the default model's tokenizer, under {@code dir}. */
    private static Path tinyDefaultModel(Path home, Path dir) throws IOException {
        Path built = home.resolve("build/oracle/models");
        PythonScript.run(
                "oracle/make_tiny_models.py", 600, List.of("--out", built.toString(), "--only", "llama-serve"));
        Files.createDirectories(dir);
        try (Stream<Path> files = Files.list(built.resolve("llama-serve"))) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                Files.copy(f, dir.resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
            }
        }
        for (String name : TOKENIZER_FILES) {
            Files.copy(
                    home.resolve(GenerateCommand.DEFAULT_MODEL).resolve(name),
                    dir.resolve(name),
                    StandardCopyOption.REPLACE_EXISTING);
        }
        return dir;
    }

    private static String tokenBody(int promptIndex) {
        String ids = String.join(
                ",",
                IntStream.range(0, PROMPT_TOKENS)
                        .mapToObj(i -> Integer.toString(100 + (i * 7 + promptIndex * 131) % 5000))
                        .toList());
        return "{\"model\":\"" + FLOODED + "\",\"prompt\":[" + ids + "],\"max_tokens\":" + MAX_TOKENS
                + ",\"temperature\":0}";
    }

    private static HttpRequest request(ServerProcess server, String body) {
        return HttpRequest.newBuilder(URI.create(server.base + "/v1/completions"))
                .timeout(Duration.ofMinutes(3))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build();
    }

    private static HttpResponse<String> send(ServerProcess server, String body) throws Exception {
        return HTTP.send(request(server, body), HttpResponse.BodyHandlers.ofString());
    }
}
