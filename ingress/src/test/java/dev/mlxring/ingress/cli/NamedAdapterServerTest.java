package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
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
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code serve --adapter NAME=DIR} through the openai SDK on a tiny llama (SmolLM2's tokenizer)
 * with a LoRA adapter {@code a} and a DoRA adapter {@code b}: each named adapter answers greedy
 * chat and completions requests with mlx_lm.server {@code --adapter-path DIR}'s texts; requests
 * for the base model and both adapters sent all at once (rows of one batch) get the same texts
 * as sent one at a time, and each adapter's differ from the base model's and the other's; the
 * {@code adapters} field picks an adapter as its model id does; an unknown adapter is a 404 (model)
 * or 400 (field) naming it and the server keeps serving; a prompt cached under one adapter is
 * restored under it and not under the other; under a model pool the adapters belong to the
 * default model; a broken adapter stops start-up naming it.
 */
class NamedAdapterServerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String CELL = "llama-serve";
    private static Path modelDir;
    private static Path adapterA;
    private static Path adapterB;

    @BeforeAll
    static void buildModelAndAdapters() throws Exception {
        Path home = ProjectHome.get();
        modelDir = TinyServeModels.build(home.resolve("build/oracle/serve-named"), CELL);
        adapterA = OracleAdapters.write(
                modelDir,
                home.resolve("build/oracle/adapters/serve-named-a"),
                "lora",
                0,
                "--rank",
                "8",
                "--scale",
                "20",
                "--seed",
                "21");
        adapterB = OracleAdapters.write(
                modelDir,
                home.resolve("build/oracle/adapters/serve-named-b"),
                "dora",
                1,
                "--rank",
                "4",
                "--scale",
                "10",
                "--seed",
                "22");
    }

    private static ServeCommand.Running serve(String... adapters) {
        return serve(List.of(), adapters);
    }

    private static ServeCommand.Running serve(List<String> flags, String... adapters) {
        List<String> args = new java.util.ArrayList<>(List.of("--model", modelDir.toString()));
        args.addAll(flags);
        for (String a : adapters) {
            args.addAll(List.of("--adapter", a));
        }
        return InProcessServer.start(args);
    }

    @Test
    void eachAdapterAnswersAsMlxLmServerWithItAlsoInOneBatch() throws Exception {
        try (ServeCommand.Running server = serve("a=" + adapterA, "b=" + adapterB)) {
            String base = InProcessServer.base(server) + "/v1";
            for (Object[] named : new Object[][] {{"a", adapterA}, {"b", adapterB}}) {
                MlxLmServerComparison.assertSameGreedyAnswers(
                        InProcessServer.base(server),
                        modelDir,
                        List.of("--model-id", CELL + ":" + named[0], "--mlx-lm-model-id", "default_model"),
                        List.of("--adapter-path", named[1].toString()),
                        "adapter " + named[0] + ": greedy output differs from mlx_lm.server --adapter-path");
            }
            JsonNode r = JSON.readTree(PythonScript.run(
                    "e2e/adapters_client_check.py",
                    900,
                    List.of("--base-url", base, "--base", CELL, "--adapter", "a", "--adapter", "b")));
            assertEquals(0, r.get("errors").size(), r.toString());
            assertEquals(r.get("sequential"), r.get("concurrent"), "answers in one batch differ from answers alone");
            JsonNode seq = r.get("sequential");
            assertNotEquals(seq.get("base"), seq.get("a"), "adapter a answers as the base model");
            assertNotEquals(seq.get("base"), seq.get("b"), "adapter b answers as the base model");
            assertNotEquals(seq.get("a"), seq.get("b"), "adapters a and b answer alike");
            assertEquals(seq.get("b"), seq.get("b@field"), "the adapters field picks b as its model id does");
            JsonNode refusals = r.get("refusals");
            assertEquals(404, refusals.at("/model/status").asInt(), refusals.toString());
            assertTrue(refusals.at("/model/message").asText().contains(CELL + ":no-such"), refusals.toString());
            assertEquals(400, refusals.at("/field/status").asInt(), refusals.toString());
            assertTrue(refusals.at("/field/message").asText().contains("no-such"), refusals.toString());
            assertTrue(refusals.get("served_after").asBoolean(), refusals.toString());
            JsonNode prefix = r.get("prefix");
            assertTrue(prefix.get(1).get("cached_tokens").asInt() > 0, "a did not restore its own prefix: " + prefix);
            assertEquals(0, prefix.get(2).get("cached_tokens").asInt(), "b restored a's prefix: " + prefix);
        }
    }

    /**
     * Under a pool ({@code --models}), the named adapters belong to the default model: listed
     * right after it, retrievable, answering as on a server of that model alone; another model's
     * {@code <model>:<NAME>} is the pool's 404 and its {@code adapters} field cannot name them.
     */
    @Test
    void namedAdaptersBelongToThePoolsDefaultModel() throws Exception {
        Path models = Files.createTempFile("named-adapter-pool", ".json");
        Files.writeString(models, "{\"other\": {\"path\": " + JSON.writeValueAsString(modelDir.toString()) + "}}");
        String alone;
        try (ServeCommand.Running server = serve("a=" + adapterA)) {
            alone = chat(server, CELL + ":a", null)
                    .at("/choices/0/message/content")
                    .asText();
        }
        try (ServeCommand.Running pool = serve(List.of("--models", models.toString()), "a=" + adapterA)) {
            List<String> ids = new java.util.ArrayList<>();
            get(pool, "/v1/models").get("data").forEach(m -> ids.add(m.get("id").asText()));
            assertEquals(List.of(CELL, CELL + ":a", "other"), ids);
            JsonNode retrieved = get(pool, "/v1/models/" + CELL + ":a");
            assertEquals(CELL + ":a", retrieved.get("id").asText(), retrieved.toString());
            assertEquals("a", retrieved.get("adapter").asText(), retrieved.toString());

            JsonNode viaModel = chat(pool, CELL + ":a", null);
            assertEquals(alone, viaModel.at("/choices/0/message/content").asText(), viaModel.toString());
            assertEquals(
                    alone,
                    chat(pool, CELL, "a").at("/choices/0/message/content").asText(),
                    "the adapters field picks a as its model id does");
            assertNotEquals(
                    alone,
                    chat(pool, CELL, null).at("/choices/0/message/content").asText(),
                    "a answers as the base");

            JsonNode otherAdapter = chat(pool, "other:a", null);
            assertEquals("model_not_found", otherAdapter.at("/error/code").asText(), otherAdapter.toString());
            assertTrue(otherAdapter.at("/error/message").asText().contains("other:a"), otherAdapter.toString());
            JsonNode otherField = chat(pool, "other", "a");
            assertEquals("adapters", otherField.at("/error/param").asText(), otherField.toString());
            JsonNode unknown = get(pool, "/v1/models/" + CELL + ":nope");
            assertEquals("model_not_found", unknown.at("/error/code").asText(), unknown.toString());
        } finally {
            Files.delete(models);
        }
    }

    private static JsonNode chat(ServeCommand.Running server, String model, String adapters) throws Exception {
        String body =
                "{\"model\":\"" + model + "\",\"messages\":[{\"role\":\"user\",\"content\":\"Tell me about rivers.\"}],"
                        + "\"max_tokens\":12,\"temperature\":0"
                        + (adapters == null ? "" : ",\"adapters\":\"" + adapters + "\"") + "}";
        return JSON.readTree(HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create(InProcessServer.base(server) + "/v1/chat/completions"))
                                .header("Content-Type", "application/json")
                                .POST(HttpRequest.BodyPublishers.ofString(body))
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body());
    }

    private static JsonNode get(ServeCommand.Running server, String path) throws Exception {
        return JSON.readTree(HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create(InProcessServer.base(server) + path))
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body());
    }

    @Test
    void aBrokenAdapterStopsStartUpNamingIt() throws Exception {
        Path broken = Files.createTempDirectory("broken-named-adapter");
        try {
            Files.copy(adapterA.resolve("adapter_config.json"), broken.resolve("adapter_config.json"));
            ModelLoadException e = assertThrows(
                    ModelLoadException.class,
                    () -> serve("a=" + adapterA, "bad=" + broken).close());
            assertTrue(
                    e.getMessage().contains("'bad'") && e.getMessage().contains("adapters.safetensors"),
                    e.getMessage());
        } finally {
            Files.deleteIfExists(broken.resolve("adapter_config.json"));
            Files.delete(broken);
        }
    }
}
