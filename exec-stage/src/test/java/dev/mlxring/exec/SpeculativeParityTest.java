package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.exec.spec.Speculation;
import dev.mlxring.exec.spec.SpeculativeGenerate;
import dev.mlxring.exec.spec.SpeculativeRun;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import dev.mlxring.pipeline.KvQuantization;
import dev.mlxring.pipeline.SamplingParams;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Live speculative-decoding parity with mlx-lm: for each cell, scripts/oracle/speculative.py runs
 * mlx-lm's own {@code speculative_generate_step} (a draft model, or for prompt lookup a stand-in
 * draft proposing the n-gram tokens through the same loop) and this test runs the same prompts
 * through {@link SpeculativeGenerate}. Per prompt, bit for bit: the token ids, the sha256 of every
 * emitted token's logprobs vector, each chosen logprob, how many emitted tokens came from the
 * proposal, and for sampled cells whose key comes from an {@link EngineRng} the key the request
 * ends with (the draft's draws and the one draw per verification round, in mlx-lm's order).
 * Seeded cells: even prompts carry the seed in their params, odd ones draw from
 * {@code EngineRng.seeded(seed)}. The prompts are the fixture's three (5, 23 and 70 tokens; the
 * last prefills in chunks) and one that repeats a 9-token phrase, where prompt lookup matches.
 * After all cells it prints, for the greedy cells, how many prompts' speculative output equals
 * mlx-lm's plain {@code generate_step} output token for token; for a hybrid target (qwen3_5,
 * qwen3_next: the oracle rolls mlx-lm's recurrent caches back with scripts/oracle/recurrent_rollback.py)
 * a greedy cell also asserts it, since a wrong rollback in the oracle and here alike would
 * otherwise pass.
 */
class SpeculativeParityTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int MAX_TOKENS = 32;
    private static final int PREFILL_STEP = 32;
    private static final int NUM_DRAFT = 3;
    private static final long SEED = 97;

    private static Path work;
    private static Path prompts;
    /** Prompts of at most 23 tokens, which with {@link #WINDOW_MAX_TOKENS} stay inside gemma3-q4's 48-position window. */
    private static Path windowPrompts;

    private static final int WINDOW_MAX_TOKENS = 20;
    private static final List<String> plainReport = new ArrayList<>();

    /**
     * @param target the tiny model cell
     * @param draft the draft model cell, or null for prompt lookup (n-grams 1..3)
     * @param sampled temperature 0.15 and top-p 0.9 with a seed (low enough that the tiny models agree with
     *     their drafts often), else greedy
     * @param kvBits 4-bit KV cache from position 20 in groups of 32, or 0 for none
     * @param window the prompts and max_tokens that fit a 48-position sliding window (gemma3-q4)
     *     ({@code target} "default": the default model on two prompts of 9 and 40 tokens)
     */
    record Cell(String name, String target, String draft, boolean sampled, int kvBits, boolean window) {
        Cell(String name, String target, String draft, boolean sampled, int kvBits) {
            this(name, target, draft, sampled, kvBits, false);
        }

        @Override
        public String toString() {
            return name;
        }
    }

    static Stream<Cell> cells() {
        List<Cell> cells = new ArrayList<>();
        for (String model : List.of("llama-bf16", "qwen3-q4")) {
            for (boolean sampled : List.of(false, true)) {
                String mode = sampled ? "seeded" : "greedy";
                cells.add(new Cell(model + "/draft-self/" + mode, model, model, sampled, 0));
                cells.add(new Cell(model + "/ngram/" + mode, model, null, sampled, 0));
            }
        }
        // A draft of another family that the target rarely agrees with: every round rolls back.
        cells.add(new Cell("llama-bf16/draft-qwen2/greedy", "llama-bf16", "qwen2-bf16", false, 0));
        cells.add(new Cell("qwen3-bf16/draft-self-kv4/greedy", "qwen3-bf16", "qwen3-bf16", false, 4));
        cells.add(new Cell("qwen3-bf16/ngram-kv4/seeded", "qwen3-bf16", null, true, 4));
        // Sliding-window layers (rotating caches) rolled back before they wrap.
        for (boolean sampled : List.of(false, true)) {
            String mode = sampled ? "seeded" : "greedy";
            cells.add(new Cell("gemma3-q4/draft-self/" + mode, "gemma3-q4", "gemma3-q4", sampled, 0, true));
            cells.add(new Cell("gemma3-q4/ngram/" + mode, "gemma3-q4", null, sampled, 0, true));
        }
        // gemma4_text (window 48, KV-shared layers): the shared layers' source caches rolled back.
        cells.add(new Cell("gemma4-q4/draft-self/greedy", "gemma4-q4", "gemma4-q4", false, 0, true));
        cells.add(new Cell("gemma4-q4/ngram/seeded", "gemma4-q4", null, true, 0, true));
        // Hybrid families (gated delta net + attention): the recurrent layers' conv and recurrence
        // state rolled back to the accepted tokens, the draft's too; drafts of another model roll back
        // nearly every round.
        for (String model : List.of("qwen3_5-bf16", "qwen3_5-q4", "qwen3_next-q4")) {
            for (boolean sampled : List.of(false, true)) {
                String mode = sampled ? "seeded" : "greedy";
                cells.add(new Cell(model + "/draft-self/" + mode, model, model, sampled, 0));
                cells.add(new Cell(model + "/ngram/" + mode, model, null, sampled, 0));
            }
        }
        cells.add(new Cell("qwen3_5-bf16/draft-qwen3_next/greedy", "qwen3_5-bf16", "qwen3_next-q4", false, 0));
        cells.add(new Cell("llama-bf16/draft-qwen3_5/greedy", "llama-bf16", "qwen3_5-bf16", false, 0));
        cells.add(new Cell("qwen3_5_moe-q4/ngram/greedy", "qwen3_5_moe-q4", null, false, 0));
        // A quantized KV cache on the attention layers beside the rolled-back recurrent ones.
        cells.add(new Cell("qwen3_5-q8/ngram-kv4/seeded", "qwen3_5-q8", null, true, 4));
        // The default model (SmolLM2, 4-bit, the exact native kernels over m + 1 rows).
        cells.add(new Cell("default/draft-self/greedy", "default", "default", false, 0));
        cells.add(new Cell("default/ngram/seeded", "default", null, true, 0));
        String only = System.getProperty("speculative.cells");
        return only == null || only.isBlank()
                ? cells.stream()
                : cells.stream().filter(c -> c.name().matches(only));
    }

    @BeforeAll
    static void buildOracleInputs() throws Exception {
        OracleFixtures fixtures = OracleFixtures.build();
        work = fixtures.work();
        List<int[]> list = new ArrayList<>();
        for (JsonNode p : JSON.readTree(fixtures.prompts().toFile()).get("prompts")) {
            list.add(JSON.convertValue(p, int[].class));
        }
        int[] phrase = {11, 250, 37, 402, 99, 7, 310, 64, 128};
        list.add(IntStream.range(0, 31).map(i -> phrase[i % phrase.length]).toArray());
        prompts = work.resolve("prompts-speculative.json");
        Files.writeString(prompts, JSON.writeValueAsString(Map.of("prompts", list)));
        List<int[]> fitting =
                new ArrayList<>(list.stream().filter(p -> p.length <= 23).toList());
        fitting.add(IntStream.range(0, 17).map(i -> phrase[i % 5]).toArray());
        windowPrompts = work.resolve("prompts-speculative-window.json");
        Files.writeString(windowPrompts, JSON.writeValueAsString(Map.of("prompts", fitting)));
    }

    @AfterAll
    static void printPlainReport() {
        System.out.println("greedy speculative output equal to plain generate_step output, per cell:");
        plainReport.forEach(line -> System.out.println("  " + line));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cells")
    void speculativeMatchesMlxLm(Cell cell) throws Exception {
        Path promptFile = cell.window() ? windowPrompts : prompts;
        if (cell.target().equals("default")) {
            promptFile = work.resolve("prompts-default-speculative.json");
            PythonScript.run(
                    "oracle/prompts.py",
                    60,
                    List.of("--vocab", "49152", "--seed", "11", "--lengths", "9,40", "--out", promptFile.toString()));
        }
        Path expectedFile = work.resolve("expected-speculative-" + cell.name().replace('/', '_') + ".json");
        int maxTokens = cell.window() ? WINDOW_MAX_TOKENS : MAX_TOKENS;
        List<String> args = new ArrayList<>(List.of(
                "--model",
                modelDir(cell.target()).toString(),
                "--prompts",
                promptFile.toString(),
                "--max-tokens",
                String.valueOf(maxTokens),
                "--prefill-step-size",
                String.valueOf(PREFILL_STEP),
                "--num-draft-tokens",
                String.valueOf(NUM_DRAFT),
                "--plain",
                "--out",
                expectedFile.toString()));
        args.addAll(
                cell.draft() == null
                        ? List.of("--ngram", "1,3")
                        : List.of("--draft-model", modelDir(cell.draft()).toString()));
        if (cell.sampled()) {
            args.addAll(List.of("--temp", "0.15", "--top-p", "0.9", "--seed", String.valueOf(SEED)));
        }
        KvQuantization kv = null;
        if (cell.kvBits() > 0) {
            kv = new KvQuantization(cell.kvBits(), 32, 20);
            args.addAll(List.of(
                    "--kv-bits",
                    String.valueOf(kv.bits()),
                    "--kv-group-size",
                    String.valueOf(kv.groupSize()),
                    "--quantized-kv-start",
                    String.valueOf(kv.quantizedKvStart())));
        }
        PythonScript.run("oracle/speculative.py", 900, args);
        JsonNode expected = JSON.readTree(expectedFile.toFile());

        SamplingParams base = cell.sampled()
                ? SamplingParams.builder()
                        .temperature(0.15)
                        .topP(0.9)
                        .logprobs(true)
                        .build()
                : SamplingParams.builder().logprobs(true).build();
        GenerationOptions options = new GenerationOptions(maxTokens, PREFILL_STEP, new int[0], false, kv);
        int equalToPlain = 0;
        int i = 0;
        try (LanguageModel target = Models.load(modelDir(cell.target()));
                LanguageModel draftModel = cell.draft() == null || cell.draft().equals(cell.target())
                        ? null
                        : Models.load(modelDir(cell.draft()))) {
            Speculation speculation = cell.draft() == null
                    ? new Speculation.PromptLookup(1, 3, NUM_DRAFT)
                    : new Speculation.DraftModel(draftModel == null ? target : draftModel, NUM_DRAFT);
            for (JsonNode r : expected.get("results")) {
                int[] prompt = JSON.convertValue(r.get("prompt"), int[].class);
                String where = cell + " prompt " + i + " (" + prompt.length + " tokens)";
                EngineRng engine = cell.sampled() && i % 2 == 1 ? EngineRng.seeded(SEED) : null;
                SamplingParams params = cell.sampled() && engine == null
                        ? base.toBuilder().seed(SEED).build()
                        : base;
                List<String> digests = new ArrayList<>();
                MessageDigest sha = MessageDigest.getInstance("SHA-256");
                SpeculativeGenerate.Result got = SpeculativeGenerate.run(
                        target, prompt, options, params, engine, speculation, (token, logprobs) -> {
                            digests.add(HexFormat.of().formatHex(sha.digest(logprobs.toBytes())));
                            return true;
                        });

                int[] want = JSON.convertValue(r.get("tokens"), int[].class);
                assertArrayEquals(want, got.tokens(), where + ": token ids differ from mlx-lm");
                assertEquals(
                        JSON.convertValue(r.get("logprobs_sha256"), List.class),
                        digests,
                        where + ": a logprobs vector differs from mlx-lm's");
                for (int s = 0; s < want.length; s++) {
                    assertEquals(
                            r.get("chosen_logprob").get(s).asDouble(),
                            (double) got.tokenLogprobs().get(s).logprob(),
                            where + ": token " + s + " chosen logprob");
                }
                int fromDraft = 0;
                for (JsonNode d : r.get("from_draft")) {
                    fromDraft += d.asBoolean() ? 1 : 0;
                }
                assertEquals(
                        fromDraft,
                        Math.min(got.acceptedTokens(), got.tokens().length),
                        where + ": emitted tokens that came from the proposal");
                if (engine != null) {
                    JsonNode key = r.get("final_key");
                    int[] have = engine.keyWords();
                    assertEquals(
                            key.get(0).asLong() + "," + key.get(1).asLong(),
                            Integer.toUnsignedString(have[0]) + "," + Integer.toUnsignedString(have[1]),
                            where + ": the random key after the request differs from mx.random.state[0]");
                }
                int[] plain = JSON.convertValue(r.get("plain_tokens"), int[].class);
                if (Arrays.equals(want, plain)) {
                    equalToPlain++;
                }
                if (!cell.sampled() && isHybrid(cell.target())) {
                    // The rolled-back recurrent state is the one plain decoding reaches: greedy output equal.
                    assertArrayEquals(plain, got.tokens(), where + ": greedy speculative tokens differ from plain");
                }
                i++;
            }
        }
        assertTrue(i >= (cell.target().equals("default") ? 2 : 3), "the oracle returned " + i + " prompts");
        if (!cell.sampled()) {
            plainReport.add(cell + ": " + equalToPlain + " of " + i);
        }
    }

    /** Whether the cell's model is a hybrid (gated delta net layers with recurrent state). */
    private static boolean isHybrid(String model) {
        return model.startsWith("qwen3_5") || model.startsWith("qwen3_next");
    }

    /** A tiny model cell under build/oracle/models, or "default": the default model. */
    private static Path modelDir(String name) {
        return name.equals("default")
                ? ProjectHome.get().resolve("models/smollm2-135m-instruct")
                : work.resolve("models").resolve(name);
    }

    /**
     * A hybrid model (qwen3_5) speculates serially, while a row of the continuous batch cannot
     * (its recurrent caches keep no rollback points per row): the batch's refusal names the model
     * type and the recurrent state, for the target and for a hybrid draft of another target.
     */
    @Test
    void aHybridModelSpeculatesSeriallyButNotInTheBatch() throws Exception {
        try (LanguageModel model = Models.load(work.resolve("models").resolve("qwen3_5-bf16"));
                LanguageModel plain = Models.load(work.resolve("models").resolve("llama-bf16"))) {
            GenerationOptions options = new GenerationOptions(8, PREFILL_STEP, new int[0], false);
            Speculation lookup = new Speculation.PromptLookup(1, 3, NUM_DRAFT);
            assertEquals(null, SpeculativeRun.refusal(model, 30, options, SamplingParams.GREEDY, lookup));
            String target = SpeculativeRun.batchRefusal(model, 30, options, SamplingParams.GREEDY, lookup);
            assertTrue(
                    target != null
                            && target.contains("the model (model_type 'qwen3_5')")
                            && target.contains("recurrent state"),
                    target);
            Speculation hybridDraft = new Speculation.DraftModel(model, NUM_DRAFT);
            assertEquals(null, SpeculativeRun.batchRefusal(plain, 30, options, SamplingParams.GREEDY, lookup));
            String draft = SpeculativeRun.batchRefusal(plain, 30, options, SamplingParams.GREEDY, hybridDraft);
            assertTrue(draft != null && draft.contains("the draft model (model_type 'qwen3_5')"), draft);
        }
    }

    /** A request that could wrap gemma3-q4's 48-position sliding window is refused before any work. */
    @Test
    void aRequestLongerThanASlidingWindowIsRefused() throws Exception {
        try (LanguageModel model = Models.load(work.resolve("models").resolve("gemma3-q4"))) {
            int[] prompt = IntStream.range(0, 30).map(i -> (i * 7) % 512).toArray();
            GenerationOptions options = new GenerationOptions(18, PREFILL_STEP, new int[0], false);
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> new SpeculativeRun(
                            model,
                            prompt,
                            options,
                            SamplingParams.GREEDY,
                            null,
                            new Speculation.PromptLookup(1, 3, NUM_DRAFT)));
            assertTrue(
                    e.getMessage()
                            .contains("prompt (30 tokens) and max_tokens (18) to stay below its sliding window of 48"),
                    e.getMessage());
            // One token less fits, and runs.
            GenerationOptions fits = new GenerationOptions(17, PREFILL_STEP, new int[0], false);
            SpeculativeGenerate.Result r = SpeculativeGenerate.run(
                    model,
                    prompt,
                    fits,
                    SamplingParams.GREEDY,
                    null,
                    new Speculation.PromptLookup(1, 3, NUM_DRAFT),
                    (token, logprobs) -> true);
            assertEquals(17, r.tokens().length);
        }
    }
}
