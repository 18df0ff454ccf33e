package dev.mlxring.ingress.cli;

import static dev.mlxring.ingress.cli.CliRun.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.OracleAdapters;
import dev.mlxring.exec.model.ModelLoadException;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code --adapter-path} through the commands, against mlx-lm with the same adapter: a tiny llama
 * (SmolLM2's vocabulary and tokenizer) and a LoRA adapter over all its blocks written as
 * mlx_lm.lora writes one. {@code generate} gives mlx-lm's greedy tokens (greedy.py with the
 * adapter loaded by load_adapters) and not the base model's; {@code serve} answers the openai
 * SDK's greedy chat and completions requests with mlx_lm.server {@code --adapter-path}'s texts,
 * refuses an {@code adapters} field naming another folder with a 400 and keeps serving; a broken
 * adapter stops {@code serve} at start-up naming the file.
 */
class AdapterServerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String CELL = "llama-serve";
    private static final String PROMPT = "1,900,31,7,4242,18000,5";
    private static Path modelDir;
    private static Path adapter;

    @BeforeAll
    static void buildModelAndAdapter() throws Exception {
        Path home = ProjectHome.get();
        modelDir = TinyServeModels.build(home.resolve("build/oracle/serve"), CELL);
        adapter = OracleAdapters.write(
                modelDir, home.resolve("build/oracle/adapters/serve-lora"), "lora", 0, "--rank", "8", "--scale", "20");
    }

    private static List<Integer> generate(Path adapterDir) throws Exception {
        List<String> args = new ArrayList<>(List.of(
                "generate", "--model", modelDir.toString(), "--prompt-tokens", PROMPT, "--max-tokens", "16", "--json"));
        if (adapterDir != null) {
            args.addAll(List.of("--adapter-path", adapterDir.toString()));
        }
        CliRun r = run(args.toArray(new String[0]));
        assertEquals(0, r.status(), r.err());
        List<Integer> ids = new ArrayList<>();
        JSON.readTree(r.out()).get("generated_tokens").forEach(t -> ids.add(t.asInt()));
        return ids;
    }

    @Test
    void generateGivesMlxLmsTokensWithTheAdapter() throws Exception {
        Path prompts = Files.createTempFile("adapter-prompts", ".json");
        Path out = Files.createTempFile("adapter-greedy", ".json");
        try {
            List<Integer> prompt = new ArrayList<>();
            for (String t : PROMPT.split(",")) {
                prompt.add(Integer.parseInt(t));
            }
            JSON.writeValue(
                    prompts.toFile(), JSON.createObjectNode().set("prompts", JSON.valueToTree(List.of(prompt))));
            PythonScript.run(
                    "oracle/greedy.py",
                    300,
                    List.of(
                            "--model",
                            modelDir.toString(),
                            "--prompts",
                            prompts.toString(),
                            "--max-tokens",
                            "16",
                            "--prefill-step-size",
                            "2048",
                            "--adapter",
                            adapter.toString(),
                            "--out",
                            out.toString()));
            List<Integer> want = new ArrayList<>();
            JSON.readTree(out.toFile()).get("results").get(0).get("tokens").forEach(t -> want.add(t.asInt()));
            List<Integer> got = generate(adapter);
            // generate stops at an EOS id, which greedy.py does not
            assertEquals(want.subList(0, got.size()), got, "generate --adapter-path against mlx-lm");
            assertNotEquals(generate(null), got, "the adapter changed nothing");
        } finally {
            Files.deleteIfExists(prompts);
            Files.deleteIfExists(out);
        }
    }

    @Test
    void generateNamesAMissingAdapter() {
        CliRun r = run(
                "generate",
                "--model",
                modelDir.toString(),
                "--prompt-tokens",
                "1,2",
                "--adapter-path",
                modelDir.resolve("no-such-adapter").toString());
        assertNotEquals(0, r.status());
        assertTrue(r.err().contains("no-such-adapter"), r.err());
    }

    @Test
    void serveAnswersAsMlxLmServerWithTheAdapter() throws Exception {
        try (ServeCommand.Running server =
                InProcessServer.start("--model", modelDir.toString(), "--adapter-path", adapter.toString())) {
            String base = InProcessServer.base(server);
            MlxLmServerComparison.assertSameGreedyAnswers(
                    base,
                    modelDir,
                    // mlx_lm.server applies its --adapter-path to requests for default_model only
                    List.of("--mlx-lm-model-id", "default_model"),
                    List.of("--adapter-path", adapter.toString()),
                    "greedy output differs from mlx_lm.server --adapter-path");
            HttpClient http = HttpClient.newHttpClient();
            String other = modelDir.resolve("other-adapter").toString();
            HttpResponse<String> refused = http.send(
                    HttpRequest.newBuilder(URI.create(base + "/v1/completions"))
                            .header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString(
                                    "{\"prompt\":\"hi\",\"max_tokens\":2,\"adapters\":\"" + other + "\"}"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(400, refused.statusCode(), refused.body());
            assertTrue(refused.body().contains(other), refused.body());
            HttpResponse<String> served = http.send(
                    HttpRequest.newBuilder(URI.create(base + "/v1/completions"))
                            .header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString(
                                    "{\"prompt\":\"hi\",\"max_tokens\":2,\"adapters\":"
                                            + JSON.writeValueAsString(adapter.toString()) + "}"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, served.statusCode(), served.body());
        }
    }

    @Test
    void serveRefusesABrokenAdapterAtStartUpNamingTheFile() throws Exception {
        Path broken = Files.createTempDirectory("broken-adapter");
        try {
            Files.copy(adapter.resolve("adapter_config.json"), broken.resolve("adapter_config.json"));
            ModelLoadException e = assertThrows(
                    ModelLoadException.class,
                    () -> InProcessServer.start("--model", modelDir.toString(), "--adapter-path", broken.toString())
                            .close());
            assertTrue(
                    e.getMessage().contains("adapters.safetensors")
                            && e.getMessage().contains(broken.toString()),
                    e.getMessage());
        } finally {
            Files.deleteIfExists(broken.resolve("adapter_config.json"));
            Files.delete(broken);
        }
    }
}
