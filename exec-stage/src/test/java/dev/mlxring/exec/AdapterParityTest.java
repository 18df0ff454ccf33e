package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.generate.GenerateStep;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationResult;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Numerics;
import dev.mlxring.mlx.PythonScript;
import dev.mlxring.pipeline.SamplingParams;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Live parity of adapters with mlx-lm: {@code make_adapter.py} writes an adapter folder as
 * mlx_lm.lora writes one (mlx-lm's own {@code linear_to_lora_layers} on the tiny model, its
 * trainable parameters given random values, saved with {@code mx.save_safetensors}); the oracles
 * load it with mlx-lm's {@code load_adapters} (as {@code mlx_lm.utils.load(adapter_path=...)}),
 * we with {@code Models.load(..., adapterDir)}. Greedy: tokens for 64 steps and the first step's
 * logits and logprobs bytes; seeded: tokens and every step's logprobs bytes; batched: every
 * BatchGenerator step. Each cell also checks that the adapter changes the base model's tokens
 * (an adapter applied as a no-op would pass parity with a broken oracle).
 */
class AdapterParityTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int MAX_TOKENS = 64;
    private static final int PREFILL_STEP = 32;

    private static Path work;
    private static Path prompts;

    /**
     * An adapter over a tiny model: {@code type} lora/dora/full on the last {@code numLayers}
     * blocks (0: all), rank, scale, and {@code keys} (null: every linear layer).
     */
    record AdapterCell(String model, String type, int numLayers, int rank, double scale, String keys) {
        String name() {
            return model + "+" + type + "-L" + numLayers + "r" + rank + (keys == null ? "" : "-keys");
        }

        @Override
        public String toString() {
            return name();
        }
    }

    @BeforeAll
    static void buildOracleModels() throws Exception {
        OracleFixtures fixtures = OracleFixtures.build();
        work = fixtures.work();
        prompts = fixtures.prompts();
        BatchParityTest.useWork(work);
    }

    static Stream<AdapterCell> greedyCells() {
        List<AdapterCell> cells = new ArrayList<>();
        for (String model : List.of("llama-f32", "llama-q4", "qwen3-f32", "qwen3-q4")) {
            cells.add(new AdapterCell(model, "lora", 0, 8, 20.0, null));
            cells.add(new AdapterCell(model, "dora", 1, 4, 10.0, null));
        }
        // keys-restricted: two projections of the last block, on a 4-bit base with bf16 activations
        cells.add(new AdapterCell("qwen3-q4", "lora", 1, 4, 16.0, "self_attn.q_proj,mlp.down_proj"));
        // 8-bit base with float32 activations
        cells.add(new AdapterCell("llama-f32q8", "lora", 2, 8, 20.0, null));
        // a full fine-tune of the last block
        cells.add(new AdapterCell("llama-f32", "full", 1, 0, 0, null));
        return only(cells.stream());
    }

    static Stream<AdapterCell> sampledCells() {
        return only(Stream.of(
                new AdapterCell("llama-q4", "lora", 0, 8, 20.0, null),
                new AdapterCell("qwen3-f32", "dora", 0, 4, 10.0, null)));
    }

    static Stream<AdapterCell> batchCells() {
        return only(Stream.of(
                new AdapterCell("llama-f32", "lora", 0, 8, 20.0, null),
                new AdapterCell("llama-q4", "lora", 0, 8, 20.0, null),
                new AdapterCell("qwen3-q4", "dora", 1, 4, 10.0, null)));
    }

    /** -Dadapter.cells=REGEX runs a subset of the cells by name. */
    private static Stream<AdapterCell> only(Stream<AdapterCell> cells) {
        String only = System.getProperty("adapter.cells");
        return only == null || only.isBlank()
                ? cells
                : cells.filter(c -> c.name().matches(only));
    }

    /** The cell's adapter folder under build/oracle/adapters, written by make_adapter.py. */
    static Path adapter(AdapterCell cell) throws Exception {
        List<String> flags = new ArrayList<>();
        if (!cell.type().equals("full")) {
            flags.addAll(List.of("--rank", String.valueOf(cell.rank()), "--scale", String.valueOf(cell.scale())));
        }
        if (cell.keys() != null) {
            flags.addAll(List.of("--keys", cell.keys()));
        }
        return OracleAdapters.write(
                work.resolve("models").resolve(cell.model()),
                work.resolve("adapters").resolve(cell.name()),
                cell.type(),
                cell.numLayers(),
                flags.toArray(String[]::new));
    }

    static LanguageModel load(Path modelDir, Path adapterDir) {
        return Models.load(modelDir, CpuKernels.DEFAULT, Numerics.EXACT, false, null, adapterDir);
    }

    @ParameterizedTest(name = "{0}", allowZeroInvocations = true)
    @MethodSource("greedyCells")
    void greedyTokensAndFirstLogitsMatchMlxLm(AdapterCell cell) throws Exception {
        Path modelDir = work.resolve("models").resolve(cell.model());
        Path adapterDir = adapter(cell);
        Path expectedFile = work.resolve("expected-adapter-" + cell.name() + ".json");
        PythonScript.run(
                "oracle/greedy.py",
                900,
                List.of(
                        "--model",
                        modelDir.toString(),
                        "--prompts",
                        prompts.toString(),
                        "--max-tokens",
                        String.valueOf(MAX_TOKENS),
                        "--prefill-step-size",
                        String.valueOf(PREFILL_STEP),
                        "--adapter",
                        adapterDir.toString(),
                        "--out",
                        expectedFile.toString()));
        JsonNode expected = JSON.readTree(expectedFile.toFile());
        GenerationOptions options = new GenerationOptions(MAX_TOKENS, PREFILL_STEP, new int[0], true, null, 0);
        boolean differs = false;
        try (LanguageModel model = load(modelDir, adapterDir);
                LanguageModel base = Models.load(modelDir)) {
            int i = 0;
            for (JsonNode r : expected.get("results")) {
                int[] prompt = JSON.convertValue(r.get("prompt"), int[].class);
                int[] tokens = JSON.convertValue(r.get("tokens"), int[].class);
                GenerationResult got = GenerateStep.run(model, prompt, options, t -> true);
                String where = cell + " prompt " + i + " (" + prompt.length + " tokens)";
                assertArrayEquals(
                        tokens, got.tokens(), where + ": greedy tokens differ from mlx-lm's with the adapter");
                assertEquals(r.get("logits0").get("dtype").asText(), got.logitsDtype(), where + ": logits dtype");
                assertArrayEquals(
                        Base64.getDecoder().decode(r.get("logits0").get("b64").asText()),
                        got.firstLogits(),
                        where + ": first-step logits bytes differ from mlx-lm's");
                assertArrayEquals(
                        Base64.getDecoder().decode(r.get("logprobs0").get("b64").asText()),
                        got.firstLogprobs(),
                        where + ": first-step logprobs bytes differ from mlx-lm's");
                GenerationResult plain = GenerateStep.run(base, prompt, options, t -> true);
                differs |= !java.util.Arrays.equals(plain.firstLogits(), got.firstLogits());
                i++;
            }
            assertTrue(i >= 3, "the oracle returned " + i + " prompts");
        }
        assertTrue(differs, cell + ": the adapter left the base model's logits unchanged");
    }

    @ParameterizedTest(name = "{0}+seeded", allowZeroInvocations = true)
    @MethodSource("sampledCells")
    void seededSamplingMatchesMlxLm(AdapterCell cell) throws Exception {
        Path modelDir = work.resolve("models").resolve(cell.model());
        Path adapterDir = adapter(cell);
        SamplingParams params = SamplingParams.builder()
                .logprobs(true)
                .temperature(0.9)
                .topP(0.95)
                .build();
        Path expectedFile = work.resolve("expected-adapter-sample-" + cell.name() + ".json");
        List<String> args = new ArrayList<>(List.of(
                "--model",
                modelDir.toString(),
                "--prompts",
                prompts.toString(),
                "--max-tokens",
                String.valueOf(MAX_TOKENS),
                "--prefill-step-size",
                String.valueOf(PREFILL_STEP),
                "--seed",
                "42",
                "--seed-mode",
                "per-prompt",
                "--adapter",
                adapterDir.toString(),
                "--out",
                expectedFile.toString()));
        args.addAll(SamplingParityTest.oracleArgs(params));
        PythonScript.run("oracle/sample.py", 900, args);
        JsonNode expected = JSON.readTree(expectedFile.toFile());
        try (LanguageModel model = load(modelDir, adapterDir)) {
            assertEquals(
                    expected.get("load_model_random_draws").asInt(),
                    model.initRandomDraws(),
                    cell + ": random draws of mlx-lm's model construction and adapter conversion");
            int i = 0;
            for (JsonNode r : expected.get("results")) {
                int[] prompt = JSON.convertValue(r.get("prompt"), int[].class);
                List<String> digests = new ArrayList<>();
                MessageDigest sha = MessageDigest.getInstance("SHA-256");
                GenerationResult got = GenerateStep.run(
                        model,
                        prompt,
                        new GenerationOptions(MAX_TOKENS, PREFILL_STEP, new int[0], false),
                        params.toBuilder().seed(42L).build(),
                        null,
                        (token, logprobs) -> {
                            digests.add(HexFormat.of().formatHex(sha.digest(logprobs.toBytes())));
                            return true;
                        });
                String where = cell + " prompt " + i;
                assertArrayEquals(
                        JSON.convertValue(r.get("tokens"), int[].class),
                        got.tokens(),
                        where + ": sampled tokens differ from mlx-lm's");
                List<String> want = new ArrayList<>();
                r.get("logprobs_sha256").forEach(n -> want.add(n.asText()));
                assertEquals(want, digests, where + ": logprobs bytes of some step differ from mlx-lm's");
                i++;
            }
            assertTrue(i >= 2, "the oracle returned " + i + " prompts");
        }
    }

    @ParameterizedTest(name = "{0}+batch", allowZeroInvocations = true)
    @MethodSource("batchCells")
    void everyBatchStepMatchesBatchGenerator(AdapterCell cell) throws Exception {
        Path modelDir = work.resolve("models").resolve(cell.model());
        Path adapterDir = adapter(cell);
        BatchParityTest.Cell batch = new BatchParityTest.Cell(
                "adapter-" + cell.name(),
                cell.model(),
                16,
                8,
                32,
                List.of(
                        BatchParityTest.greedy(0, 12, 1, 24),
                        BatchParityTest.greedy(2, 5, 2, 20),
                        BatchParityTest.restored(3, 30, 3, 16, 0, Map.of("temp", 0.8, "top_k", 20, "seed", 3)),
                        BatchParityTest.greedy(5, 40, 4, 12)));
        Path script = BatchParityTest.writeScript(batch);
        Path out = script.resolveSibling("expected-" + batch.name() + ".json");
        PythonScript.run(
                "oracle/batch.py",
                900,
                List.of(
                        "--model",
                        modelDir.toString(),
                        "--script",
                        script.toString(),
                        "--adapter",
                        adapterDir.toString(),
                        "--out",
                        out.toString()));
        List<List<String>> expected = BatchParityTest.steps(JSON.readTree(out.toFile()));
        List<List<String>> got;
        List<List<String>> plain;
        try (LanguageModel model = load(modelDir, adapterDir)) {
            got = BatchParityTest.run(model, batch);
        }
        try (LanguageModel base = Models.load(modelDir)) {
            plain = BatchParityTest.run(base, batch);
        }
        assertTrue(expected.stream().mapToInt(List::size).sum() > 0, "the oracle generated nothing");
        assertEquals(expected, got, cell + ": BatchGenerator steps with the adapter (uid:token:finish:sha)");
        assertFalse(plain.equals(got), cell + ": the adapter left the base model's batch unchanged");
        assertTrue(Files.isDirectory(adapterDir));
    }
}
