package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.mlxring.ingress.pool.ModelCost;
import dev.mlxring.mlx.ProjectHome;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * docs/benchmarks.md's model-pool figures (not part of the suite: {@code -Dmlxring.bench.pool=true}):
 * per model, the load seconds the pool records and the first-token latency of a request to the
 * model cold (its load included) and then warm, over fresh servers. Needs the models
 * {@link ModelPoolServerTest} builds under build/pool-test/models and the default model.
 */
@EnabledIfSystemProperty(named = "mlxring.bench.pool", matches = "true")
class ModelPoolBench {
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    @Test
    void loadTimeAndColdFirstToken() throws Exception {
        Path home = ProjectHome.get();
        Path tiny = home.resolve("build/pool-test/models");
        Map<String, Path> models = new java.util.LinkedHashMap<>(Map.of(
                "gemma3-serve", tiny.resolve("gemma3-serve"),
                "qwen3_moe-serve", tiny.resolve("qwen3_moe-serve"),
                "smollm2-135m", home.resolve(GenerateCommand.DEFAULT_MODEL)));
        // The larger random-weight models scripts/bench/make_pool_models.py builds, where built.
        Path larger = home.resolve("build/bench/pool-models");
        for (String name : List.of("llama-pool-820m-q4", "llama-pool-820m-bf16")) {
            if (Files.exists(larger.resolve(name).resolve(".complete"))) {
                models.put(name, larger.resolve(name));
            }
        }
        Path file = Files.createTempFile("pool-bench", ".json");
        StringBuilder json = new StringBuilder("{");
        models.forEach((name, dir) -> json.append(json.length() > 1 ? "," : "")
                .append('"')
                .append(name)
                .append("\":{\"path\":\"")
                .append(dir)
                .append("\"}"));
        Files.writeString(file, json.append('}').toString());
        int rounds = Integer.getInteger("mlxring.bench.rounds", 3);
        System.out.printf(
                "load average at start: %s%n",
                Files.readString(Path.of("/proc/loadavg")).trim());
        for (int round = 0; round < rounds; round++) {
            String[] argv = {
                "serve", "--port", "0", "--model", tiny.resolve("llama-serve").toString(), "--models", file.toString()
            };
            try (ServeCommand.Running s = ServeCommand.start(
                    CliArgs.parse(argv, 1, ServeCommand.FLAGS), new PrintStream(new ByteArrayOutputStream()))) {
                for (String name : List.of(
                        "gemma3-serve",
                        "qwen3_moe-serve",
                        "smollm2-135m",
                        "llama-pool-820m-q4",
                        "llama-pool-820m-bf16")) {
                    if (!models.containsKey(name)) {
                        continue;
                    }
                    double cold = firstTokenSeconds(s, name);
                    double warm = firstTokenSeconds(s, name);
                    String metrics = get(s, "/metrics");
                    String load = metrics.lines()
                            .filter(l -> l.startsWith("mlxring_model_load_seconds_total{model=\"" + name + "\"}"))
                            .findFirst()
                            .orElseThrow();
                    System.out.printf(
                            "round %d %-16s weights %6.1f MB resident %6.1f MB load %s s cold TTFT %.3f s warm TTFT %.3f s%n",
                            round,
                            name,
                            weightsBytes(models.get(name)) / 1e6,
                            ModelCost.of(models.get(name)).residentBytes() / 1e6,
                            load.substring(load.lastIndexOf(' ') + 1),
                            cold,
                            warm);
                }
            }
        }
        System.out.printf(
                "load average at end: %s%n",
                Files.readString(Path.of("/proc/loadavg")).trim());
    }

    /**
     * RSS against the budget under a flood ({@link BudgetFlood}): per budget (room for the flooded
     * model and 1, 2.5, 5 and 10 requests' peaks), 24 concurrent 600-token prompts on a fresh
     * server process; how many were served, and the RSS growth over the baseline against the room.
     */
    @Test
    void rssUnderAFlood() throws Exception {
        System.out.printf(
                "load average at start: %s%n",
                Files.readString(Path.of("/proc/loadavg")).trim());
        System.out.println("| room (requests' peaks) | budget, MB | room, MB | served / sent | RSS baseline, MB"
                + " | RSS peak − baseline, MB | peak growth / room | samples |");
        String[] flags = System.getProperty("mlxring.bench.serveFlags", "").isBlank()
                ? new String[0]
                : System.getProperty("mlxring.bench.serveFlags").trim().split("\\s+");
        for (String r : System.getProperty("mlxring.bench.rooms", "1,2.5,5,10").split(",")) {
            double room = Double.parseDouble(r);
            BudgetFlood.Outcome o = BudgetFlood.run(room, 24, flags);
            System.out.printf(
                    "| %.1f | %.1f | %.1f | %d / %d | %.1f | %.1f | %.2f | %d |%n",
                    room,
                    o.budgetBytes() / 1e6,
                    o.roomBytes() / 1e6,
                    o.served(),
                    o.answers().size(),
                    o.baselineBytes() / 1e6,
                    o.growthBytes() / 1e6,
                    (double) o.growthBytes() / o.roomBytes(),
                    o.samples());
            o.metricsAfter()
                    .lines()
                    .filter(l -> l.startsWith("mlxring_mlx_") || l.startsWith("process_resident"))
                    .forEach(l -> System.out.println("| metrics after room " + room + ": " + l));
        }
        System.out.printf(
                "load average at end: %s%n",
                Files.readString(Path.of("/proc/loadavg")).trim());
    }

    private static long weightsBytes(Path dir) throws Exception {
        try (Stream<Path> files = Files.list(dir)) {
            long sum = 0;
            for (Path f :
                    files.filter(f -> f.toString().endsWith(".safetensors")).toList()) {
                sum += Files.size(f);
            }
            return sum;
        }
    }

    /** Seconds from sending a streaming chat request to its first content chunk. */
    private static double firstTokenSeconds(ServeCommand.Running s, String model) throws Exception {
        String body = "{\"model\":\"" + model + "\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}],"
                + "\"max_tokens\":4,\"temperature\":0,\"stream\":true}";
        long t0 = System.nanoTime();
        HttpResponse<Stream<String>> r = HTTP.send(
                HttpRequest.newBuilder(
                                URI.create("http://127.0.0.1:" + s.server().port() + "/v1/chat/completions"))
                        .timeout(Duration.ofMinutes(5))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofLines());
        assertEquals(200, r.statusCode());
        List<Long> at = new ArrayList<>();
        r.body().forEach(line -> {
            if (line.startsWith("data: {") && line.contains("\"content\"")) {
                at.add(System.nanoTime());
            }
        });
        return (at.getFirst() - t0) / 1e9;
    }

    private static String get(ServeCommand.Running s, String path) throws Exception {
        return HTTP.send(
                        HttpRequest.newBuilder(URI.create(
                                        "http://127.0.0.1:" + s.server().port() + path))
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
    }
}
