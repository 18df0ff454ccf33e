package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.generate.GenerateStep;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationResult;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.ModelLoadException;
import dev.mlxring.exec.model.Models;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.Numerics;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import dev.mlxring.pipeline.KvQuantization;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Live parity with mlx-lm: the oracle scripts build tiny random-weight models of every family
 * and dtype with mlx-lm's own classes, run mlx-lm's {@code generate_step} on them, and this test
 * runs the same prompts through our graphs. Tokens must match for 64 steps and the first step's
 * logits and logprobs must match byte for byte. The default model is a cell too.
 *
 * <p>The KV cells run the same check with mlx-lm's KV-cache quantization
 * ({@code generate_step(kv_bits, kv_group_size, quantized_kv_start)}).
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
        // quantized from float32 (float32 activations): the exact fused block (FusedBlock) against
        // mlx-lm, with linear and llama3 rope scaling, qwen2's biases and qwen3's q/k norms, 4, 8
        // and 6 bits.
        names.addAll(List.of("llama-f32q4", "llama-f32q8", "qwen2-f32q8", "qwen3-f32q6"));
        // 3 and 6 bits (values straddling 32-bit words; the native kernels' pack decode).
        names.addAll(List.of("llama-q3", "qwen3-q6"));
        // rope_scaling types beyond default / linear / llama3 (see make_tiny_models.py): yarn with an
        // input mscale, deepseek_yarn without, dynamic NTK with a base that grows past 48 positions,
        // longrope with per-frequency factors and an input scale.
        names.addAll(List.of("llama-yarn", "qwen3-yarn", "qwen2-dynamic", "llama-longrope"));
        // gemma3_text: sliding windows of 16, 48 and 24 positions (RotatingKVCache) against the
        // 5-, 23- and 70-token prompts in chunks of 32 and 64 decode steps.
        names.addAll(List.of("gemma3-bf16", "gemma3-q4", "gemma3-q8"));
        // gemma4_text: per-layer inputs, a global head dim with proportional rope over part of it,
        // KV-shared layers (sliding and full), K = V full layers and soft-capped logits; windows of
        // 16, 48 and 24 positions against the 5-, 23- and 70-token prompts in chunks of 32.
        names.addAll(List.of("gemma4-bf16", "gemma4-f32", "gemma4-q4", "gemma4-q8"));
        // gemma4_text with enable_moe_block: router and GELU-gated experts beside every MLP
        // (float32 gather_mm with the sorted path in prefill chunks; 4-bit experts, 8-bit router).
        // gemma4_moe-fused: the Hugging Face layout (fused experts.gate_up_proj) split at load.
        names.addAll(List.of("gemma4_moe-f32", "gemma4_moe-q4", "gemma4_moe-fused"));
        // phi3: fused projections; longrope over 3/4 of the head (bf16), plain rope (4-bit, tied),
        // linear scaling over half the head (8-bit).
        names.addAll(List.of("phi3-bf16", "phi3-q4", "phi3-q8"));
        // qwen3_moe: top-k routing over SwitchGLU experts (gather_mm in float32, gather_qmm 4- and
        // 8-bit); the 70-token prompt's 32-token chunks take mlx-lm's sorted path (64 routed
        // pairs with top-2, 96 with top-3 in q8), the 5- and 23-token prompts and decode the
        // unsorted one.
        // qwen3_moe-experts: per-expert weights (the Hugging Face layout) stacked at load.
        names.addAll(List.of("qwen3_moe-f32", "qwen3_moe-q4", "qwen3_moe-q8", "qwen3_moe-experts"));
        // gpt_oss: attention sinks, sliding/full layers (windows 16, 48 and 24), biased experts with
        // the clamped swiglu_oai (f32 gather_mm, 4-bit top-4 of 8 with yarn, 8-bit).
        names.addAll(List.of("gpt_oss-f32", "gpt_oss-q4", "gpt_oss-q8"));
        // qwen3_5: gated delta net layers (conv state and recurrence state in an ArraysCache, the
        // ops path of gated_delta_update) between gated attention layers; the 70-token prompt's
        // 32-token chunks carry both states from chunk to chunk. bf16 and 4-bit repeat 2 key heads
        // to 4 value heads; f32 is tied with a 3-tap convolution; 8-bit is hidden 128.
        names.addAll(List.of("qwen3_5-bf16", "qwen3_5-f32", "qwen3_5-q4", "qwen3_5-q8"));
        // qwen3_5-hf: the Hugging Face layout sanitize converts (names, conv1d axes, norms + 1, mtp.).
        names.add("qwen3_5-hf");
        // qwen3_5_moe: every MLP routed SwitchGLU experts plus a sigmoid-gated shared expert
        // (f32 gather_mm; 4-bit, tied, without norm_topk_prob).
        names.addAll(List.of("qwen3_5_moe-f32", "qwen3_5_moe-q4"));
        // qwen3_next: the delta net's projections packed per key head; a dense mlp_only layer (f32).
        names.addAll(List.of("qwen3_next-f32", "qwen3_next-q4"));
        names.add("default");
        return only(names.stream());
    }

    /**
     * -Dgreedy.cells=REGEX runs a subset of the named cells (e.g. 'qwen3_moe.*'); a parameterized
     * test it leaves without cells runs none (allowZeroInvocations).
     */
    private static Stream<String> only(Stream<String> names) {
        String only = System.getProperty("greedy.cells");
        return only == null || only.isBlank() ? names : names.filter(n -> n.matches(only));
    }

    /**
     * A KV-quantization cell: {@code model} (a tiny cell or "default") with {@code --kv-bits},
     * {@code --kv-group-size} and {@code --quantized-kv-start}; {@code lengths} null = the
     * standard prompts (5, 23, 70 tokens), else prompts of those lengths.
     */
    record KvCell(String model, KvQuantization kv, int prefillStep, String lengths) {
        String name() {
            return model + "+kv" + kv.bits() + "g" + kv.groupSize() + "s" + kv.quantizedKvStart()
                    + (prefillStep == PREFILL_STEP ? "" : "p" + prefillStep)
                    + (lengths == null ? "" : "L" + lengths.replace(',', '_'));
        }

        @Override
        public String toString() {
            return name();
        }
    }

    static Stream<KvCell> kvCells() {
        // The tiny models' head dims are 16 or 32, and mx.quantize needs group_size | head_dim, so
        // the tiny cells use group 32 on the head_dim-32 models; group 64 runs on the default model.
        Stream<KvCell> cells = Stream.of(
                // bf16 activations; the 70-token prompt (chunks 32 + 32 + 5, then 1) converts after
                // the second chunk, so the 5-token chunk attends over the quantized cache through
                // the materialized causal mask; the short prompts convert during decode.
                new KvCell("llama-q8", new KvQuantization(4, 32, 40), PREFILL_STEP, null),
                // start 0: every prompt converts after its first model call.
                new KvCell("qwen3-q8", new KvQuantization(8, 32, 0), PREFILL_STEP, null),
                // f32; only the 70-token prompt reaches 100, during decode (step 30).
                new KvCell("qwen3-f32", new KvQuantization(4, 32, 100), PREFILL_STEP, null),
                // a mixture of experts (head_dim 32) over a 4-bit cache, converting inside the
                // 70-token prompt's prefill.
                new KvCell("qwen3_moe-q8", new KvQuantization(4, 32, 40), PREFILL_STEP, null),
                // gemma4_text with full attention only (global_head_dim 32), no KV-shared layers:
                // the quantized attention at scale 1, converting inside the 70-token prefill.
                new KvCell("gemma4-fullkv", new KvQuantization(4, 32, 40), PREFILL_STEP, null),
                // a hybrid model (head_dim 32): the attention layers' caches quantize after the
                // second chunk of the 70-token prompt, the delta nets' states stay as they are.
                new KvCell("qwen3_5-q8", new KvQuantization(4, 32, 40), PREFILL_STEP, null),
                // 3 bits (10 values per word); a 300-token prompt in chunks of 50 converts after
                // the first chunk, then the quantized buffers grow at offset 250 (trim + concat).
                new KvCell("qwen3-bf16", new KvQuantization(3, 32, 40), 50, "300"),
                // group 64 on SmolLM2 (head_dim 64, 3 repeats); one 40-token prompt (the default model
                // costs ~15 s a prompt here): converts after the 32-token chunk, so the 7-token chunk,
                // the first step and the decode run over the quantized cache.
                new KvCell("default", new KvQuantization(8, 64, 16), PREFILL_STEP, "40"));
        String only = System.getProperty("greedy.cells");
        return only == null || only.isBlank()
                ? cells
                : cells.filter(c -> c.name().matches(only));
    }

    /**
     * {@code --max-kv-size} cells (mlx-lm's {@code max_kv_size}): rotating caches keeping 4
     * positions. 24 is below the 70-token prompt (its second 32-token chunk trims the temporally
     * ordered buffer, later chunks and decode rotate in place) and below the 23-token prompt plus
     * decode (the buffer grows by 2 to 24, then rotates); phi3 and qwen3_moe take it too. llama, gemma3_text and gpt_oss ignore it, as
     * their mlx-lm Models have make_cache.
     */
    static Stream<String> maxKvSizeCells() {
        return only(Stream.of(
                "qwen3-bf16", "qwen2-q4", "llama-q4", "gemma3-bf16", "phi3-q8", "qwen3_moe-q4", "gpt_oss-f32"));
    }

    private static final int MAX_KV_SIZE = 24;

    @ParameterizedTest(name = "{0}", allowZeroInvocations = true)
    @MethodSource("cells")
    void greedyTokensAndFirstLogitsMatchMlxLm(String cell) throws Exception {
        check(cell, cell, null, PREFILL_STEP, null, 0, false);
    }

    /**
     * Quantized cells with bfloat16 activations, 3 to 8 bits, tied and untied heads, rotating
     * caches (gemma3).
     */
    static Stream<String> dequantizedCells() {
        return only(Stream.of("qwen3-q4", "llama-q8", "qwen2-q4", "llama-q3", "qwen3-q6", "phi3-q4", "gemma3-q4"));
    }

    /**
     * {@code --dequantized-weights}: the kernels over dequantized weights keep mlx-lm's tokens and
     * first logits bytes, and the layouts were built (the loaded model holds more memory after a
     * run than the packed one does).
     */
    @ParameterizedTest(name = "{0}+dequantized", allowZeroInvocations = true)
    @MethodSource("dequantizedCells")
    void dequantizedWeightsMatchMlxLm(String model) throws Exception {
        check(model + "+dequantized", model, null, PREFILL_STEP, null, 0, true);
        Path dir = work.resolve("models").resolve(model);
        long packed = heldAfterOneStep(dir, false);
        long dequantized = heldAfterOneStep(dir, true);
        assertTrue(
                dequantized > packed,
                model + ": " + dequantized + " bytes held with dequantized weights, " + packed
                        + " without: the layouts were not built");
    }

    /** Active bytes a loaded model holds after one generation step (its weights, and layouts once built). */
    private static long heldAfterOneStep(Path dir, boolean dequantized) {
        Mlx.clearCache();
        long before = Mlx.memory().activeBytes();
        try (LanguageModel model = Models.load(dir, CpuKernels.DEFAULT, Numerics.EXACT, dequantized, null)) {
            GenerateStep.run(
                    model,
                    new int[] {1, 2, 3},
                    new GenerationOptions(1, PREFILL_STEP, new int[0], false, null, 0),
                    t -> true);
            Mlx.clearCache();
            return Mlx.memory().activeBytes() - before;
        }
    }

    /**
     * A hybrid model's prompt chunk of more than 1024 positions (1100 tokens, prefill step 2048:
     * one chunk of 1099): the delta net's per-position outputs are joined in one piece, as
     * mlx-lm's, not refused by the shim's array-count limit.
     */
    @Test
    void aHybridChunkOfMoreThan1024PositionsMatchesMlxLm() throws Exception {
        check("qwen3_5-bf16+p2048L1100", "qwen3_5-bf16", null, 2048, "1100", 0, false);
    }

    @ParameterizedTest(name = "{0}", allowZeroInvocations = true)
    @MethodSource("kvCells")
    void quantizedKvCacheMatchesMlxLm(KvCell cell) throws Exception {
        check(cell.name(), cell.model(), cell.kv(), cell.prefillStep(), cell.lengths(), 0, false);
    }

    @ParameterizedTest(name = "{0}+maxkv24", allowZeroInvocations = true)
    @MethodSource("maxKvSizeCells")
    void rotatingKvCacheMatchesMlxLm(String model) throws Exception {
        check(model + "+maxkv" + MAX_KV_SIZE, model, null, PREFILL_STEP, null, MAX_KV_SIZE, false);
    }

    /**
     * An unquantized bfloat16 mixture of experts cannot run on this CPU (MLX's gather_mm is float32
     * only; mlx-lm fails at the first forward with {@code [GatherMM::eval] Currently only
     * supports float32.}): the load refuses it, naming the parameter and the cause.
     */
    @Test
    void unquantizedBfloat16ExpertsAreRefusedAtLoad() {
        Path dir = work.resolve("models/qwen3_moe-bf16");
        ModelLoadException e =
                assertThrows(ModelLoadException.class, () -> Models.load(dir).close());
        assertTrue(
                e.getMessage().contains("model.layers.0.mlp.switch_mlp.")
                        && e.getMessage().contains("bfloat16")
                        && e.getMessage().contains("float32 only"),
                e.getMessage());
    }

    /**
     * A model's head dim is the last axis of its KV caches, which KV quantization groups: for
     * gemma4_text with full attention only, {@code global_head_dim} (32), not {@code head_dim} (16).
     */
    @Test
    void gemma4HeadDimIsTheCachedLayersOne() {
        try (LanguageModel model = Models.load(work.resolve("models/gemma4-fullkv"))) {
            assertEquals(32, model.headDim());
        }
        try (LanguageModel model = Models.load(work.resolve("models/gemma4-bf16"))) {
            assertEquals(16, model.headDim());
        }
    }

    /**
     * gemma4_text's KV-shared layers read their source layer's fetched keys and values, which a
     * quantized cache returns as tuples mlx-lm's attention cannot take: {@code --kv-bits} is
     * refused before any work (a full-attention-only model, so no rotating cache refuses it first).
     */
    @Test
    void kvBitsIsRefusedForKvSharedLayers() {
        try (LanguageModel model = Models.load(work.resolve("models/gemma4-full"))) {
            String why = dev.mlxring.exec.generate.GenerationRun.kvQuantizationRefusal(model, 0);
            assertTrue(why != null && why.contains("KV-shared layers"), String.valueOf(why));
            GenerationOptions options =
                    new GenerationOptions(4, PREFILL_STEP, new int[0], false, new KvQuantization(4, 32, 0));
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> GenerateStep.run(model, new int[] {1, 2, 3, 4, 5}, options, t -> true));
            assertTrue(e.getMessage().contains("KV-shared layers"), e.getMessage());
        }
    }

    /**
     * A config.json whose sizes disagree with the weights (hidden_size doubled) is refused at
     * load naming a parameter and both shapes, as mlx-lm's strict load_weights refuses it; before,
     * the 4-bit weights were read as 2-bit ones and the model answered garbage.
     */
    @ParameterizedTest
    @ValueSource(strings = {"llama-q4", "phi3-bf16"})
    void aConfigThatDisagreesWithTheWeightsIsRefusedAtLoad(String model) throws Exception {
        Path dir = Files.createTempDirectory("mlxring-wrong-config");
        try (var files = Files.list(work.resolve("models/" + model))) {
            for (Path f : files.toList()) {
                Files.copy(f, dir.resolve(f.getFileName()));
            }
        }
        var config = (com.fasterxml.jackson.databind.node.ObjectNode)
                JSON.readTree(dir.resolve("config.json").toFile());
        config.put("hidden_size", config.get("hidden_size").asInt() * 2);
        JSON.writeValue(dir.resolve("config.json").toFile(), config);
        try {
            ModelLoadException e = assertThrows(
                    ModelLoadException.class, () -> Models.load(dir).close());
            assertTrue(
                    e.getMessage().startsWith("parameter '") && e.getMessage().contains("config.json"), e.getMessage());
        } finally {
            try (var files = Files.list(dir)) {
                for (Path f : files.toList()) {
                    Files.delete(f);
                }
            }
            Files.delete(dir);
        }
    }

    /**
     * The dense caches replaced at conversion, the quantized buffers superseded as they grow and
     * the quantized caches themselves are all freed: a run leaves MLX's active memory as it found it.
     */
    @Test
    void quantizedKvRunReleasesItsArrays() {
        int[] prompt = IntStream.range(0, 300).map(i -> (i * 131) % 512).toArray();
        GenerationOptions options = new GenerationOptions(8, 50, new int[0], false, new KvQuantization(3, 32, 40));
        try (LanguageModel model = Models.load(work.resolve("models/qwen3-bf16"))) {
            GenerateStep.run(model, prompt, options, t -> true); // compiles and caches what it needs
            Mlx.synchronize();
            Mlx.clearCache();
            long before = Mlx.memory().activeBytes();
            GenerationResult r = GenerateStep.run(model, prompt, options, t -> true);
            assertEquals(8, r.tokens().length);
            Mlx.synchronize();
            Mlx.clearCache();
            assertEquals(before, Mlx.memory().activeBytes(), "active bytes after a quantized-KV run");
        }
    }

    /**
     * Rotating caches (gemma3's and gpt_oss's sliding layers; --max-kv-size on qwen3 and qwen3_moe) free what they replace,
     * including the first chunk's keys and values they take over, and themselves: a run leaves
     * MLX's active memory as it found it.
     */
    @Test
    void rotatingKvRunReleasesItsArrays() {
        int[] prompt = IntStream.range(0, 300).map(i -> (i * 131) % 512).toArray();
        for (String name : List.of("gemma3-bf16", "qwen3-bf16", "gpt_oss-f32", "qwen3_moe-q4")) {
            GenerationOptions options = new GenerationOptions(40, 50, new int[0], false, null, MAX_KV_SIZE);
            try (LanguageModel model = Models.load(work.resolve("models/" + name))) {
                GenerateStep.run(model, prompt, options, t -> true); // compiles and caches what it needs
                Mlx.synchronize();
                Mlx.clearCache();
                long before = Mlx.memory().activeBytes();
                GenerationResult r = GenerateStep.run(model, prompt, options, t -> true);
                assertEquals(40, r.tokens().length);
                Mlx.synchronize();
                Mlx.clearCache();
                assertEquals(before, Mlx.memory().activeBytes(), name + ": active bytes after a rotating-cache run");
            }
        }
    }

    /**
     * A hybrid model's run frees what its delta net layers replace each forward (conv and
     * recurrence states, in chunks of 50 and in decode) and its caches at the end: a run leaves
     * MLX's active memory as it found it.
     */
    @Test
    void hybridRunReleasesItsArrays() {
        int[] prompt = IntStream.range(0, 120).map(i -> (i * 131) % 512).toArray();
        GenerationOptions options = new GenerationOptions(20, 50, new int[0], false, null);
        for (String name : List.of("qwen3_5-bf16", "qwen3_next-q4")) {
            try (LanguageModel model = Models.load(work.resolve("models/" + name))) {
                GenerateStep.run(model, prompt, options, t -> true); // compiles and caches what it needs
                Mlx.synchronize();
                Mlx.clearCache();
                long before = Mlx.memory().activeBytes();
                GenerationResult r = GenerateStep.run(model, prompt, options, t -> true);
                assertEquals(20, r.tokens().length);
                Mlx.synchronize();
                Mlx.clearCache();
                assertEquals(before, Mlx.memory().activeBytes(), name + ": active bytes after a hybrid run");
            }
        }
    }

    private static void check(
            String cell,
            String modelName,
            KvQuantization kv,
            int prefillStep,
            String lengths,
            int maxKvSize,
            boolean dequantizedWeights)
            throws Exception {
        boolean isDefault = modelName.equals("default");
        Path modelDir = isDefault
                ? ProjectHome.get().resolve("models/smollm2-135m-instruct")
                : work.resolve("models").resolve(modelName);
        assertTrue(
                Files.isRegularFile(modelDir.resolve("config.json")),
                "model " + modelDir + " is missing (the default model comes from ./mlx-ring setup)");
        Path promptFile = prompts;
        if (isDefault || lengths != null) {
            promptFile = work.resolve("prompts-" + (isDefault ? "default" : "512")
                    + (lengths == null ? "" : "-" + lengths.replace(',', '_')) + ".json");
            List<String> args = new ArrayList<>(List.of(
                    "--vocab",
                    isDefault ? "49152" : "512",
                    "--seed",
                    isDefault ? "11" : "7",
                    "--out",
                    promptFile.toString()));
            args.addAll(lengths == null ? List.of("--long", "70") : List.of("--lengths", lengths));
            PythonScript.run("oracle/prompts.py", 60, args);
        }
        Path expectedFile = work.resolve("expected-" + cell + ".json");
        List<String> oracleArgs = new ArrayList<>(List.of(
                "--model",
                modelDir.toString(),
                "--prompts",
                promptFile.toString(),
                "--max-tokens",
                String.valueOf(MAX_TOKENS),
                "--prefill-step-size",
                String.valueOf(prefillStep),
                "--out",
                expectedFile.toString()));
        if (kv != null) {
            oracleArgs.addAll(List.of(
                    "--kv-bits",
                    String.valueOf(kv.bits()),
                    "--kv-group-size",
                    String.valueOf(kv.groupSize()),
                    "--quantized-kv-start",
                    String.valueOf(kv.quantizedKvStart())));
        }
        if (maxKvSize > 0) {
            oracleArgs.addAll(List.of("--max-kv-size", String.valueOf(maxKvSize)));
        }
        PythonScript.run("oracle/greedy.py", 900, oracleArgs);
        JsonNode expected = JSON.readTree(expectedFile.toFile());

        try (LanguageModel model =
                Models.load(modelDir, CpuKernels.DEFAULT, Numerics.EXACT, dequantizedWeights, null)) {
            int i = 0;
            for (JsonNode r : expected.get("results")) {
                int[] prompt = JSON.convertValue(r.get("prompt"), int[].class);
                int[] tokens = JSON.convertValue(r.get("tokens"), int[].class);
                GenerationResult got = GenerateStep.run(
                        model,
                        prompt,
                        new GenerationOptions(MAX_TOKENS, prefillStep, new int[0], true, kv, maxKvSize),
                        t -> true);
                String where = cell + " prompt " + i + " (" + prompt.length + " tokens"
                        + (kv == null ? "" : ", KV quantized from call " + r.get("kv_quantized_from_call")) + ")";
                assertArrayEquals(tokens, got.tokens(), where + ": greedy tokens differ from mlx-lm");
                assertEquals(r.get("logits0").get("dtype").asText(), got.logitsDtype(), where + ": logits dtype");
                assertArrayEquals(
                        Base64.getDecoder().decode(r.get("logits0").get("b64").asText()),
                        got.firstLogits(),
                        where + ": first-step logits bytes differ from mlx-lm");
                assertArrayEquals(
                        Base64.getDecoder().decode(r.get("logprobs0").get("b64").asText()),
                        got.firstLogprobs(),
                        where + ": first-step logprobs bytes differ from mlx-lm");
                i++;
            }
            assertTrue(i >= (lengths == null ? 3 : lengths.split(",").length), "the oracle returned " + i + " prompts");
        }
    }
}
