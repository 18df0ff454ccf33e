package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.generate.GenerateStep;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationResult;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.exec.sample.TokenLogprobs;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import dev.mlxring.pipeline.SamplingParams;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Live sampling parity with mlx-lm: for each (model, setting) cell, scripts/oracle/sample.py runs
 * mlx-lm's own make_sampler + make_logits_processors + generate_step after
 * {@code mx.random.seed(seed)}, and this test runs the same prompts through GenerateStep with the
 * same {@link SamplingParams}. Per prompt, bit for bit: the 64 token ids, the sha256 of every
 * step's full logprobs vector, the first step's full vector, each chosen token's logprob, the
 * top logprobs (ids in argpartition order and values) when asked, and - where the key comes from
 * an {@link EngineRng} - the random key the request ends with.
 *
 * <p>Seeding: in "per-prompt" cells even-indexed prompts carry the seed in the params and
 * odd-indexed ones draw from a fresh {@code EngineRng.seeded(seed)} (both equal
 * {@code mx.random.seed(seed)} before the prompt); in the "once" cell every prompt draws from one
 * engine generator, as consecutive unseeded mlx-lm requests after one {@code mx.random.seed}.
 */
class SamplingParityTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int MAX_TOKENS = 64;
    private static final int PREFILL_STEP = 32;
    private static final long SEED = 1234;

    private static Path work;
    private static Path prompts;

    /** One sampler configuration; {@code tiny} picks thresholds that bite on the flat tiny-model distributions. */
    record Setting(String name, Function<Boolean, SamplingParams> params, boolean seedOnce) {}

    private static final List<Setting> SETTINGS = List.of(
            new Setting("temp", tiny -> base().temperature(0.8).build(), false),
            new Setting("top_p", tiny -> base().temperature(1.0).topP(0.9).build(), false),
            new Setting("min_p", tiny -> base().temperature(1.0).minP(0.1).build(), false),
            new Setting(
                    "min_p_keep",
                    tiny -> base().temperature(1.0).minP(0.5).minTokensToKeep(7).build(),
                    false),
            new Setting("top_k", tiny -> base().temperature(1.0).topK(20).build(), false),
            new Setting(
                    "xtc",
                    tiny -> base().temperature(1.0)
                            .xtcProbability(0.5)
                            .xtcThreshold(tiny ? 0.005 : 0.1)
                            .xtcSpecialTokens(tiny ? new int[] {0, 1, 2} : new int[] {198, 2})
                            .build(),
                    false),
            new Setting("logit_bias", tiny -> base().logitBias(bias(tiny)).build(), false),
            new Setting(
                    "repetition",
                    tiny -> base().repetitionPenalty(1.5)
                            .repetitionContextSize(20)
                            .build(),
                    false),
            new Setting(
                    "presence",
                    tiny -> base().temperature(0.7)
                            .presencePenalty(0.8)
                            .presenceContextSize(10)
                            .build(),
                    false),
            new Setting(
                    "frequency",
                    tiny -> base().temperature(0.7)
                            .frequencyPenalty(0.5)
                            .frequencyContextSize(0)
                            .build(),
                    false),
            new Setting("temp_top_p", tiny -> base().temperature(0.7).topP(0.9).build(), false),
            new Setting(
                    "min_p_repetition",
                    tiny -> base().temperature(0.8)
                            .minP(0.05)
                            .repetitionPenalty(1.2)
                            .build(),
                    false),
            new Setting(
                    "everything",
                    tiny -> base().temperature(0.9)
                            .topP(0.95)
                            .minP(0.02)
                            .xtcProbability(0.3)
                            .xtcThreshold(tiny ? 0.004 : 0.1)
                            .xtcSpecialTokens(tiny ? new int[] {3} : new int[] {198, 2})
                            .topK(40)
                            .logitBias(bias(tiny))
                            .repetitionPenalty(1.1)
                            .repetitionContextSize(30)
                            .presencePenalty(0.3)
                            .presenceContextSize(15)
                            .frequencyPenalty(-0.2)
                            .frequencyContextSize(40)
                            .topLogprobs(5)
                            .build(),
                    false),
            new Setting(
                    "engine_stream", tiny -> base().temperature(1.0).topK(50).build(), true));

    /**
     * The default model (slow on CPU: about 10 tok/s on each side here) runs the realistic
     * combinations on two prompts (9 and 40 tokens; the second prefills in a 32-token chunk).
     */
    private static final List<String> DEFAULT_MODEL_SETTINGS = List.of("temp_top_p", "min_p_repetition", "everything");

    private static SamplingParams.Builder base() {
        return SamplingParams.builder().logprobs(true);
    }

    private static Map<Integer, Double> bias(boolean tiny) {
        Map<Integer, Double> b = new LinkedHashMap<>();
        b.put(tiny ? 17 : 9906, 4.5);
        b.put(tiny ? 300 : 28, -100.0);
        b.put(tiny ? 5 : 314, 1.25);
        return b;
    }

    @BeforeAll
    static void buildOracleModels() throws Exception {
        OracleFixtures fixtures = OracleFixtures.build();
        work = fixtures.work();
        prompts = fixtures.prompts();
    }

    static Stream<String> cells() {
        List<String> names = new ArrayList<>();
        for (String model : List.of("llama-bf16", "qwen3-q4", "qwen2-f32")) {
            for (Setting s : SETTINGS) {
                names.add(model + "/" + s.name());
            }
        }
        // gemma3_text over its rotating caches: tied (mlx-lm builds, then drops, lm_head: one more
        // initial random draw) with every processor, and quantized untied with plain temperature.
        names.add("gemma3-bf16/everything");
        names.add("gemma3-q4/temp");
        names.add("phi3-bf16/temp_top_p");
        // gemma4_text: the seeded key starts after its construction draws (the per-layer
        // embedding and projection, no K/V projections on the KV-shared layers); soft-capped
        // logits into every processor (tied, bf16) and plain temperature (4-bit, untied).
        names.add("gemma4-bf16/everything");
        names.add("gemma4-q4/temp");
        names.add("gemma4_moe-q4/top_k");
        // qwen3_moe: the seeded key starts after mlx-lm's construction draws, which include each
        // SwitchLinear's and (4-bit) each QuantizedSwitchLinear's and the 8-bit router's.
        names.add("qwen3_moe-q4/temp");
        names.add("qwen3_moe-f32/top_k");
        // gpt_oss: biased router and projections (two draws each), zero-initialised expert biases
        // and sinks (none); over its rotating sliding-window caches.
        names.add("gpt_oss-q4/temp_top_p");
        // qwen3_5: the seeded key starts after the construction draws of each gated delta net's
        // conv1d and A besides its Linears; untied bf16 and tied 4-bit.
        names.add("qwen3_5-bf16/temp");
        names.add("qwen3_5-q4/top_p");
        names.add("qwen3_5_moe-q4/temp");
        names.add("qwen3_next-q4/top_k");
        for (String s : DEFAULT_MODEL_SETTINGS) {
            names.add("default/" + s);
        }
        // -Dsampling.cells=REGEX runs a subset (e.g. 'llama-bf16/.*' or '.*/xtc').
        String only = System.getProperty("sampling.cells");
        return only == null || only.isBlank() ? names.stream() : names.stream().filter(n -> n.matches(only));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cells")
    void samplingMatchesMlxLm(String cell) throws Exception {
        String modelName = cell.substring(0, cell.indexOf('/'));
        String settingName = cell.substring(cell.indexOf('/') + 1);
        Setting setting = SETTINGS.stream()
                .filter(s -> s.name().equals(settingName))
                .findFirst()
                .orElseThrow();
        boolean tiny = !modelName.equals("default");
        SamplingParams params = setting.params().apply(tiny);

        Path modelDir = tiny
                ? work.resolve("models").resolve(modelName)
                : ProjectHome.get().resolve("models/smollm2-135m-instruct");
        assertTrue(
                Files.isRegularFile(modelDir.resolve("config.json")),
                "model " + modelDir + " is missing (the default model comes from ./mlx-ring setup)");
        Path promptFile = prompts;
        if (!tiny) {
            promptFile = work.resolve("prompts-default-sampling.json");
            PythonScript.run(
                    "oracle/prompts.py",
                    60,
                    List.of("--vocab", "49152", "--seed", "11", "--lengths", "9,40", "--out", promptFile.toString()));
        }
        Path expectedFile = work.resolve("expected-sample-" + modelName + "-" + settingName + ".json");
        List<String> args = new ArrayList<>(List.of(
                "--model",
                modelDir.toString(),
                "--prompts",
                promptFile.toString(),
                "--max-tokens",
                String.valueOf(MAX_TOKENS),
                "--prefill-step-size",
                String.valueOf(PREFILL_STEP),
                "--seed",
                String.valueOf(SEED),
                "--seed-mode",
                setting.seedOnce() ? "once" : "per-prompt",
                "--out",
                expectedFile.toString()));
        args.addAll(oracleArgs(params));
        PythonScript.run("oracle/sample.py", 900, args);
        JsonNode expected = JSON.readTree(expectedFile.toFile());

        try (LanguageModel model = Models.load(modelDir)) {
            assertEquals(
                    expected.get("load_model_random_draws").asInt(),
                    model.initRandomDraws(),
                    cell + ": random draws of mlx-lm's model construction");
            EngineRng once = EngineRng.seeded(SEED);
            int i = 0;
            for (JsonNode r : expected.get("results")) {
                int[] prompt = JSON.convertValue(r.get("prompt"), int[].class);
                String where = cell + " prompt " + i + " (" + prompt.length + " tokens)";
                EngineRng engine;
                SamplingParams p;
                if (setting.seedOnce()) {
                    engine = once;
                    p = params;
                } else if (i % 2 == 0) {
                    engine = null;
                    p = params.toBuilder().seed(SEED).build();
                } else {
                    engine = EngineRng.seeded(SEED);
                    p = params;
                }
                List<String> digests = new ArrayList<>();
                byte[][] firstLogprobs = new byte[1][];
                MessageDigest sha = MessageDigest.getInstance("SHA-256");
                GenerationResult got = GenerateStep.run(
                        model,
                        prompt,
                        new GenerationOptions(MAX_TOKENS, PREFILL_STEP, new int[0], false),
                        p,
                        engine,
                        (token, logprobs) -> {
                            digests.add(HexFormat.of().formatHex(sha.digest(logprobs.toBytes())));
                            if (digests.size() == 1) {
                                firstLogprobs[0] = logprobs.toBytes();
                            }
                            return true;
                        });

                assertArrayEquals(
                        JSON.convertValue(r.get("tokens"), int[].class),
                        got.tokens(),
                        where + ": token ids differ from mlx-lm");
                List<String> want = JSON.convertValue(
                        r.get("logprobs_sha256"),
                        JSON.getTypeFactory().constructCollectionType(List.class, String.class));
                for (int s = 0; s < want.size(); s++) {
                    if (!want.get(s).equals(digests.get(s))) {
                        fail(where + ": the logprobs vector of step " + s + " differs from mlx-lm's");
                    }
                }
                assertEquals(want.size(), digests.size(), where + ": steps");
                assertArrayEquals(
                        Base64.getDecoder().decode(r.get("logprobs0").get("b64").asText()),
                        firstLogprobs[0],
                        where + ": first-step logprobs bytes differ");
                List<TokenLogprobs> lps = got.tokenLogprobs();
                for (int s = 0; s < lps.size(); s++) {
                    TokenLogprobs t = lps.get(s);
                    assertEquals(
                            r.get("chosen_logprob").get(s).asDouble(),
                            (double) t.logprob(),
                            where + ": step " + s + " chosen logprob");
                    JsonNode tops = r.get("top_logprobs").get(s);
                    assertEquals(tops.size(), t.topIds().length, where + ": step " + s + " top_logprobs count");
                    for (int k = 0; k < tops.size(); k++) {
                        assertEquals(tops.get(k).get(0).asInt(), t.topIds()[k], where + ": step " + s + " top id " + k);
                        assertEquals(
                                tops.get(k).get(1).asDouble(),
                                (double) t.topLogprobs()[k],
                                where + ": step " + s + " top logprob " + k);
                    }
                }
                if (engine != null) {
                    JsonNode key = r.get("final_key");
                    int[] have = engine.keyWords();
                    assertEquals(
                            key.get(0).asLong() + "," + key.get(1).asLong(),
                            Integer.toUnsignedString(have[0]) + "," + Integer.toUnsignedString(have[1]),
                            where + ": the random key after the request differs from mx.random.state[0]");
                }
                i++;
            }
            assertTrue(i >= 2, "the oracle returned " + i + " prompts");
        }
    }

    /** sample.py flags for {@code p} (penalties only when set, as make_logits_processors skips 0). */
    static List<String> oracleArgs(SamplingParams p) throws Exception {
        List<String> a = new ArrayList<>();
        a.addAll(List.of(
                "--temp",
                Double.toString(p.temperature()),
                "--top-p",
                Double.toString(p.topP()),
                "--min-p",
                Double.toString(p.minP()),
                "--min-tokens-to-keep",
                Integer.toString(p.minTokensToKeep()),
                "--top-k",
                Integer.toString(p.topK()),
                "--xtc-probability",
                Double.toString(p.xtcProbability()),
                "--xtc-threshold",
                Double.toString(p.xtcThreshold()),
                "--top-logprobs",
                Integer.toString(p.topLogprobs())));
        int[] special = p.xtcSpecialTokens();
        if (special.length > 0) {
            StringBuilder sb = new StringBuilder();
            for (int t : special) {
                sb.append(sb.isEmpty() ? "" : ",").append(t);
            }
            a.addAll(List.of("--xtc-special-tokens", sb.toString()));
        }
        if (!p.logitBias().isEmpty()) {
            Map<String, Double> m = new LinkedHashMap<>();
            p.logitBias().forEach((k, v) -> m.put(Integer.toString(k), v));
            a.addAll(List.of("--logit-bias", JSON.writeValueAsString(m)));
        }
        if (p.repetitionPenalty() != 0) {
            a.addAll(List.of(
                    "--repetition-penalty",
                    Double.toString(p.repetitionPenalty()),
                    "--repetition-context-size",
                    Integer.toString(p.repetitionContextSize())));
        }
        if (p.presencePenalty() != 0) {
            a.addAll(List.of(
                    "--presence-penalty",
                    Double.toString(p.presencePenalty()),
                    "--presence-context-size",
                    Integer.toString(p.presenceContextSize())));
        }
        if (p.frequencyPenalty() != 0) {
            a.addAll(List.of(
                    "--frequency-penalty",
                    Double.toString(p.frequencyPenalty()),
                    "--frequency-context-size",
                    Integer.toString(p.frequencyContextSize())));
        }
        return a;
    }
}
