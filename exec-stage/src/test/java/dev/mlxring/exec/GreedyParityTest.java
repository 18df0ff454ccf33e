package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.generate.GenerateStep;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationResult;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Live parity with mlx-lm: the oracle scripts build tiny random-weight models of every family
 * and dtype with mlx-lm's own classes, run mlx-lm's {@code generate_step} on them, and this test
 * runs the same prompts through our graphs. Tokens must match for 64 steps and the first step's
 * logits and logprobs must match byte for byte. The default model is a cell too.
 */
class GreedyParityTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int MAX_TOKENS = 64;
    /** Smaller than the 70-token prompt so prefill runs in chunks with a tail, on both sides. */
    private static final int PREFILL_STEP = 32;

    private static Path work;
    private static Path prompts;

    @BeforeAll
    static void buildOracleModels() throws Exception {
        OracleFixtures fixtures = OracleFixtures.build();
        work = fixtures.work();
        prompts = fixtures.prompts();
    }

    static Stream<String> cells() throws Exception {
        List<String> names = new ArrayList<>();
        for (String family : List.of("llama", "qwen2", "qwen3")) {
            for (String dtype : List.of("bf16", "f32", "q4", "q8")) {
                names.add(family + "-" + dtype);
            }
        }
        // rope_scaling types beyond default / linear / llama3 (see make_tiny_models.py): yarn with an
        // input mscale, deepseek_yarn without, dynamic NTK with a base that grows past 48 positions,
        // longrope with per-frequency factors and an input scale.
        names.addAll(List.of("llama-yarn", "qwen3-yarn", "qwen2-dynamic", "llama-longrope"));
        names.add("default");
        return names.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cells")
    void greedyTokensAndFirstLogitsMatchMlxLm(String cell) throws Exception {
        Path modelDir = cell.equals("default")
                ? ProjectHome.get().resolve("models/smollm2-135m-instruct")
                : work.resolve("models").resolve(cell);
        assertTrue(Files.isRegularFile(modelDir.resolve("config.json")),
                "model " + modelDir + " is missing (the default model comes from ./mlx-ring setup)");
        Path promptFile = prompts;
        if (cell.equals("default")) {
            promptFile = work.resolve("prompts-default.json");
            PythonScript.run("oracle/prompts.py", 60,
                    List.of("--vocab", "49152", "--seed", "11", "--long", "70", "--out", promptFile.toString()));
        }
        Path expectedFile = work.resolve("expected-" + cell + ".json");
        PythonScript.run("oracle/greedy.py", 900, List.of("--model", modelDir.toString(), "--prompts",
                promptFile.toString(), "--max-tokens", String.valueOf(MAX_TOKENS), "--prefill-step-size",
                String.valueOf(PREFILL_STEP), "--out", expectedFile.toString()));
        JsonNode expected = JSON.readTree(expectedFile.toFile());

        try (LanguageModel model = Models.load(modelDir)) {
            int i = 0;
            for (JsonNode r : expected.get("results")) {
                int[] prompt = JSON.convertValue(r.get("prompt"), int[].class);
                int[] tokens = JSON.convertValue(r.get("tokens"), int[].class);
                GenerationResult got = GenerateStep.run(model, prompt,
                        new GenerationOptions(MAX_TOKENS, PREFILL_STEP, new int[0], true), t -> true);
                String where = cell + " prompt " + i + " (" + prompt.length + " tokens)";
                assertArrayEquals(tokens, got.tokens(), where + ": greedy tokens differ from mlx-lm");
                assertEquals(r.get("logits0").get("dtype").asText(), got.logitsDtype(), where + ": logits dtype");
                assertArrayEquals(Base64.getDecoder().decode(r.get("logits0").get("b64").asText()), got.firstLogits(),
                        where + ": first-step logits bytes differ from mlx-lm");
                assertArrayEquals(Base64.getDecoder().decode(r.get("logprobs0").get("b64").asText()),
                        got.firstLogprobs(), where + ": first-step logprobs bytes differ from mlx-lm");
                i++;
            }
            assertTrue(i >= 3, "the oracle returned " + i + " prompts");
        }
    }
}
