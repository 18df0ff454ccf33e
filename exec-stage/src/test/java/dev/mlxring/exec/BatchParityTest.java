package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.exec.batch.BatchGenerator;
import dev.mlxring.exec.batch.BatchRequest;
import dev.mlxring.exec.batch.BatchToken;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import dev.mlxring.pipeline.SamplingParams;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Live parity of continuous batching with mlx-lm's {@code BatchGenerator}: a scripted arrival
 * schedule (rows inserted just before given {@code next()} calls) runs through
 * {@code scripts/oracle/batch.py} and through our {@link BatchGenerator}; every call must yield
 * the same rows with the same tokens, the same finish reasons and the same logprobs bytes (sha256
 * of each row's {@code [V]} vector), so joins, prefill interleaving, padding, merges and filters
 * happen at the same steps with the same numerics on both sides. Rows may carry a scripted token
 * constraint ({@link ScriptedConstraint}; batch.py appends its twin to the row's
 * {@code logits_processors}): constrained and free rows share the batch, and a row whose
 * constraint runs dry ends alone with {@code error} at the same call on both sides.
 */
public class BatchParityTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Path work;
    /** The document the last {@link #oracle} call wrote. */
    private static Path lastOracleOutput;

    @BeforeAll
    static void buildOracleModels() throws Exception {
        work = OracleFixtures.build().work();
    }

    /**
     * One scripted row: inserted before call {@code at}; {@code sampling} null = greedy;
     * {@code removeAt} &ge; 0: removed (cancelled) before that call, after its inserts;
     * {@code mask} null = unconstrained, else the rule each run's fresh constraint follows.
     */
    record ScriptRow(
            int at,
            int[] prompt,
            int maxTokens,
            int[] stop,
            Map<String, Object> sampling,
            int removeAt,
            int history,
            ScriptedConstraint mask) {
        ScriptRow(
                int at,
                int[] prompt,
                int maxTokens,
                int[] stop,
                Map<String, Object> sampling,
                int removeAt,
                int history) {
            this(at, prompt, maxTokens, stop, sampling, removeAt, history, null);
        }

        ScriptRow(int at, int[] prompt, int maxTokens, int[] stop, Map<String, Object> sampling) {
            this(at, prompt, maxTokens, stop, sampling, -1);
        }

        ScriptRow(int at, int[] prompt, int maxTokens, int[] stop, Map<String, Object> sampling, int removeAt) {
            this(at, prompt, maxTokens, stop, sampling, removeAt, 0);
        }
    }

    /** A greedy or {@code sampling} row whose first {@code history} prompt tokens arrive already cached. */
    static ScriptRow restored(int at, int length, int seed, int maxTokens, int history, Map<String, Object> sampling) {
        return new ScriptRow(at, prompt(length, seed, 512), maxTokens, new int[0], sampling, -1, history);
    }

    /**
     * A cell: a model, mlx-lm's three batch sizes and the rows; {@code shortPromptsFirst} and the
     * calls that are decode-only units ({@code decodeOnly}) are our schedule's departures, which
     * batch.py reproduces with mlx-lm's own batch objects.
     */
    record Cell(
            String name,
            String model,
            int prefillStep,
            int prefillBatch,
            int completionBatch,
            List<ScriptRow> rows,
            int maxKvSize,
            boolean shortPromptsFirst,
            java.util.Set<Integer> decodeOnly) {
        Cell(String name, String model, int prefillStep, int prefillBatch, int completionBatch, List<ScriptRow> rows) {
            this(name, model, prefillStep, prefillBatch, completionBatch, rows, 0);
        }

        Cell(
                String name,
                String model,
                int prefillStep,
                int prefillBatch,
                int completionBatch,
                List<ScriptRow> rows,
                int maxKvSize) {
            this(name, model, prefillStep, prefillBatch, completionBatch, rows, maxKvSize, false, java.util.Set.of());
        }

        @Override
        public String toString() {
            return name;
        }
    }

    static int[] prompt(int length, int seed, int vocab) {
        return IntStream.range(0, length)
                .map(i -> (int) ((i * 131L + seed * 977L + (long) i * i * 7) % vocab))
                .toArray();
    }

    static ScriptRow greedy(int at, int length, int seed, int maxTokens) {
        return new ScriptRow(at, prompt(length, seed, 512), maxTokens, new int[0], null);
    }

    /** A row under {@code mask} ({@code sampling} null = greedy) with {@code stop} as its stop ids. */
    static ScriptRow masked(
            int at,
            int length,
            int seed,
            int maxTokens,
            Map<String, Object> sampling,
            ScriptedConstraint mask,
            int... stop) {
        return new ScriptRow(at, prompt(length, seed, 512), maxTokens, stop, sampling, -1, 0, mask);
    }

    /** -Dbatch.cells=REGEX runs the cells whose name matches (none may match). */
    static Stream<Cell> cells() {
        String only = System.getProperty("batch.cells");
        return only == null || only.isBlank()
                ? allCells()
                : allCells().filter(c -> c.name().matches(only));
    }

    static Stream<Cell> allCells() {
        Map<String, Object> seededTopK = new LinkedHashMap<>(Map.of("temp", 0.8, "top_k", 20, "seed", 3));
        Map<String, Object> seededTopP =
                new LinkedHashMap<>(Map.of("temp", 1.1, "top_p", 0.9, "min_p", 0.05, "seed", 11));
        Map<String, Object> penalties = new LinkedHashMap<>(Map.of(
                "repetition_penalty", 1.3, "logit_bias", Map.of("7", 2.5, "100", -1.5), "presence_penalty", 0.4));
        return Stream.of(
                // Four rows at once, prompts 3..70 tokens in chunks of 16: right padding rolled
                // into left padding, rows leaving the prompt batch at different calls.
                new Cell(
                        "all-at-once",
                        "llama-bf16",
                        16,
                        8,
                        32,
                        List.of(greedy(0, 3, 1, 20), greedy(0, 10, 2, 20), greedy(0, 37, 3, 20), greedy(0, 70, 4, 20))),
                // Rows joining a running batch one by one (extend of a decoding batch).
                new Cell(
                        "staggered",
                        "qwen3-f32",
                        16,
                        8,
                        32,
                        List.of(greedy(0, 12, 1, 24), greedy(2, 5, 2, 20), greedy(5, 30, 3, 16), greedy(9, 2, 4, 12))),
                // Rows finishing early while others continue (filter, padding trimmed), then a
                // late joiner into the filtered batch.
                new Cell(
                        "early-finish",
                        "llama-bf16",
                        16,
                        8,
                        32,
                        List.of(greedy(0, 20, 5, 3), greedy(0, 6, 6, 25), greedy(1, 40, 7, 5), greedy(12, 9, 8, 10))),
                // A 150-token prompt joining two decoding rows: prefilled in chunks of 32 between
                // their decode steps; quantized weights.
                new Cell(
                        "long-joiner",
                        "qwen2-q4",
                        32,
                        8,
                        32,
                        List.of(greedy(0, 8, 9, 30), greedy(0, 14, 10, 30), greedy(4, 150, 11, 8))),
                // The exact tier's fused block over a batch's rows (4-bit llama, qwen3 and llama3's
                // rope at 8 bits): ragged prompts (left padding), a row finishing early, a joiner.
                new Cell(
                        "fused-rows-llama",
                        "llama-q4",
                        16,
                        8,
                        32,
                        List.of(
                                greedy(0, 5, 31, 18),
                                greedy(0, 23, 32, 6),
                                greedy(0, 41, 33, 18),
                                greedy(7, 11, 34, 9))),
                new Cell(
                        "fused-rows-qwen3",
                        "qwen3-q4",
                        16,
                        8,
                        32,
                        List.of(greedy(0, 9, 35, 16), greedy(0, 30, 36, 16), greedy(3, 4, 37, 10))),
                new Cell(
                        "fused-rows-llama3",
                        "llama-q8",
                        16,
                        8,
                        32,
                        List.of(greedy(0, 17, 38, 14), greedy(0, 3, 39, 14), greedy(2, 26, 40, 8))),
                // Admission caps: at most 2 prefilling and 3 in flight, 5 rows waiting at once.
                new Cell(
                        "capped",
                        "qwen3-bf16",
                        16,
                        2,
                        3,
                        List.of(
                                greedy(0, 18, 12, 6),
                                greedy(0, 4, 13, 9),
                                greedy(0, 25, 14, 7),
                                greedy(0, 7, 15, 5),
                                greedy(0, 11, 16, 8))),
                // Mixed sampling per row: greedy, seeded top-k, penalties and logit bias (greedy),
                // seeded top-p + min-p; staggered.
                new Cell(
                        "mixed-sampling",
                        "llama-bf16",
                        16,
                        8,
                        32,
                        List.of(
                                greedy(0, 9, 17, 16),
                                new ScriptRow(0, prompt(21, 18, 512), 16, new int[0], seededTopK),
                                new ScriptRow(2, prompt(33, 19, 512), 14, new int[0], penalties),
                                new ScriptRow(3, prompt(5, 20, 512), 12, new int[0], seededTopP))),
                // Rows cancelled (BatchGenerator.remove) while queued behind the cap, while
                // prefilling and while generating; the others continue unchanged.
                new Cell(
                        "cancel",
                        "llama-bf16",
                        16,
                        2,
                        3,
                        List.of(
                                new ScriptRow(0, prompt(10, 27, 512), 20, new int[0], null, 6),
                                new ScriptRow(0, prompt(50, 28, 512), 20, new int[0], null, 2),
                                greedy(0, 6, 29, 18),
                                new ScriptRow(0, prompt(8, 30, 512), 10, new int[0], null, 1),
                                greedy(3, 12, 31, 10))),
                // Rows arriving with restored prefixes (mlx_lm.server's prompt-cache hits): two
                // merged at admission with a fresh row, a lone one joining the decoding batch,
                // one with penalties whose context starts with the cached ids (all_tokens).
                new Cell(
                        "restored-prefix",
                        "llama-bf16",
                        16,
                        8,
                        32,
                        List.of(
                                restored(0, 30, 32, 12, 20, null),
                                restored(0, 12, 33, 10, 5, null),
                                greedy(0, 9, 34, 10),
                                restored(3, 40, 35, 8, 37, null),
                                restored(5, 26, 36, 9, 18, penalties))),
                // Mixture of experts (qwen3_moe, 4-bit experts, top-2): a 3-row prefill call routes
                // 3 x 16 x 2 = 96 (token, expert) pairs through mlx-lm's sorted path, decode
                // steps 2 per row unsorted; rows join and leave (left padding routed too).
                new Cell(
                        "moe",
                        "qwen3_moe-q4",
                        16,
                        8,
                        32,
                        List.of(
                                greedy(0, 30, 32, 12),
                                greedy(0, 7, 33, 16),
                                greedy(0, 45, 34, 6),
                                greedy(5, 20, 35, 10))),
                // qwen3_5 (hybrid): the gated delta nets' conv and recurrence states batched
                // (ArraysCache.merge of empty caches: left padding zeros, the masked step), unequal
                // prompts at once in chunks of 16 (prepare(lengths): the padded positions masked
                // out of the recurrence and the conv state taken at each row's end), rows joining
                // a decoding batch (extend) and finishing early (filter).
                new Cell(
                        "qwen3_5-hybrid",
                        "qwen3_5-bf16",
                        16,
                        8,
                        32,
                        List.of(
                                greedy(0, 23, 61, 20),
                                greedy(0, 5, 62, 8),
                                greedy(0, 40, 63, 16),
                                greedy(3, 11, 64, 12),
                                greedy(9, 30, 65, 6))),
                // A lone row (solo caches, the serial graph) decoding, then a joiner: its conv and
                // recurrence states merged into a batch of two (ArraysCache.merge with history);
                // 4-bit weights, 2 key heads repeated to 4 value heads.
                new Cell(
                        "qwen3_5-lone-then-join",
                        "qwen3_5-q4",
                        16,
                        8,
                        32,
                        List.of(greedy(0, 30, 66, 24), greedy(6, 19, 67, 10))),
                // Hybrid rows arriving with restored prefixes (a prefix-cache hit's conv and
                // recurrence states): two merged at admission with a fresh row (ArraysCache.merge
                // of full and empty states), a lone one joining the decoding batch (extend), one
                // seeded.
                new Cell(
                        "qwen3_5-restored-prefix",
                        "qwen3_5-bf16",
                        16,
                        8,
                        32,
                        List.of(
                                restored(0, 30, 73, 12, 20, null),
                                restored(0, 12, 74, 10, 5, null),
                                greedy(0, 9, 75, 10),
                                restored(3, 40, 76, 8, 37, seededTopK))),
                // Capped admission with a row cancelled while prefilling and one while generating,
                // seeded sampling beside greedy rows (f32, tied, 3-tap convolution).
                new Cell(
                        "qwen3_5-capped",
                        "qwen3_5-f32",
                        16,
                        2,
                        3,
                        List.of(
                                new ScriptRow(0, prompt(45, 68, 512), 12, new int[0], null, 2),
                                new ScriptRow(0, prompt(14, 69, 512), 14, new int[0], seededTopK),
                                greedy(0, 9, 70, 10),
                                new ScriptRow(0, prompt(20, 71, 512), 16, new int[0], null, 8),
                                greedy(2, 33, 72, 7))),
                // qwen3_5_moe: the hybrid layers batched with routed experts and a shared expert
                // (4-bit); unequal prompts at once, a joiner.
                new Cell(
                        "qwen3_5_moe-batch",
                        "qwen3_5_moe-q4",
                        16,
                        8,
                        32,
                        List.of(greedy(0, 27, 73, 12), greedy(0, 6, 74, 14), greedy(4, 18, 75, 8))),
                // gemma3_text's sliding layers (window 16) over BatchRotatingKVCache, its global
                // layer over BatchKVCache: prompts longer than the window (trimmed concat), decode
                // past it (in-place rotation), rows joining a rotated batch at a different index
                // (temporal order in extend) and leaving early (filter, no padding trim).
                new Cell(
                        "gemma3-sliding",
                        "gemma3-bf16",
                        16,
                        8,
                        32,
                        List.of(
                                greedy(0, 23, 41, 30),
                                greedy(0, 5, 42, 24),
                                greedy(3, 40, 43, 12),
                                greedy(8, 10, 44, 20),
                                greedy(30, 3, 45, 8))),
                // A lone row (the fast path: solo rotating caches, the serial graph) decoding past
                // its window, then a joiner: the rotated solo caches merged (RotatingKVCache.merge).
                new Cell(
                        "gemma3-lone-then-join",
                        "gemma3-bf16",
                        16,
                        8,
                        32,
                        List.of(greedy(0, 40, 58, 30), greedy(20, 12, 59, 10))),
                // Window 48 above the 32-token chunk, unequal prompts at once: right padding rolled
                // by lengths in prepare/finalize and in a later chunk's concat; linear rope on the
                // global layer; 4-bit weights; a capped prompt batch so rows wait.
                new Cell(
                        "gemma3-chunks",
                        "gemma3-q4",
                        32,
                        2,
                        3,
                        List.of(
                                greedy(0, 70, 46, 20),
                                greedy(0, 100, 47, 16),
                                greedy(0, 9, 48, 60),
                                greedy(2, 55, 49, 10))),
                // gemma4_text: sliding layers (window 16) over BatchRotatingKVCache, full ones over
                // BatchKVCache, the KV-shared layers attending over their source's batch keys and
                // values with the per-row rope offsets; rows joining, leaving and rotating; seeded
                // top-k sampling on one row.
                new Cell(
                        "gemma4-shared",
                        "gemma4-bf16",
                        16,
                        8,
                        32,
                        List.of(
                                greedy(0, 23, 81, 30),
                                greedy(0, 5, 82, 24),
                                new ScriptRow(
                                        3,
                                        prompt(40, 83, 512),
                                        12,
                                        new int[0],
                                        new LinkedHashMap<>(Map.of("temp", 0.8, "top_k", 20, "seed", 5))),
                                greedy(8, 10, 84, 20),
                                greedy(30, 3, 85, 8))),
                // Window 48 above the 32-token chunk, unequal prompts (right padding rolled by
                // lengths), 4-bit weights, a lone row joined later (solo caches merged).
                new Cell(
                        "gemma4-chunks",
                        "gemma4-q4",
                        32,
                        2,
                        3,
                        List.of(greedy(0, 70, 86, 20), greedy(0, 9, 87, 40), greedy(2, 55, 88, 10))),
                // gemma4_text's mixture-of-experts block over a batch (the sorted expert path over
                // the batch's routed pairs), 4-bit experts, 8-bit router; joins and leaves.
                new Cell(
                        "gemma4-moe",
                        "gemma4_moe-q4",
                        32,
                        8,
                        32,
                        List.of(greedy(0, 40, 89, 16), greedy(0, 6, 90, 24), greedy(5, 20, 91, 10))),
                // gpt_oss (sinks, alternating sliding / full layers, window 16, f32 experts):
                // rows joining and leaving over rotated sliding caches.
                new Cell(
                        "gpt_oss-sliding",
                        "gpt_oss-f32",
                        16,
                        8,
                        32,
                        List.of(
                                greedy(0, 30, 50, 24),
                                greedy(0, 6, 51, 20),
                                greedy(4, 21, 52, 10),
                                greedy(9, 3, 53, 14))),
                // BatchGenerator(max_kv_size=24) on qwen3: every layer a BatchRotatingKVCache (no
                // kept prefix; a lone row too), prompts and decodes past 24 positions, rows joining
                // and leaving.
                new Cell(
                        "max-kv-size",
                        "qwen3-bf16",
                        16,
                        8,
                        32,
                        List.of(
                                greedy(0, 30, 54, 20),
                                greedy(0, 7, 55, 30),
                                greedy(3, 40, 56, 8),
                                greedy(12, 4, 57, 12)),
                        24),
                // Short prompts first: a 120-token prompt reading in chunks of 16 is parked for two
                // short arrivals (read together, unpadded by its chunk) and resumes once they
                // generate; a short row arriving while it is parked waits, then joins it (no
                // parking before it read another chunk); a later short row parks it again, and a
                // long arrival meanwhile waits for it to resume.
                new Cell(
                        "short-prompts-first",
                        "llama-bf16",
                        16,
                        8,
                        32,
                        List.of(
                                greedy(0, 6, 60, 30),
                                greedy(0, 120, 61, 6),
                                greedy(3, 9, 62, 8),
                                greedy(3, 14, 63, 5),
                                greedy(4, 12, 64, 6),
                                greedy(7, 10, 65, 4),
                                greedy(8, 40, 66, 4)),
                        0,
                        true,
                        java.util.Set.of()),
                // Decode-only units (the policy's time share) between the chunks of a long prompt,
                // with short prompts first: rows generating through them, a row joining after.
                new Cell(
                        "decode-only-units",
                        "qwen3-f32",
                        16,
                        8,
                        32,
                        List.of(
                                greedy(0, 8, 66, 40),
                                greedy(1, 90, 67, 6),
                                greedy(4, 7, 68, 10),
                                greedy(12, 20, 69, 6)),
                        0,
                        true,
                        java.util.Set.of(3, 4, 5, 7, 8, 10, 11, 12, 14, 20, 21)),
                // Token masks (issue 42): constrained rows (greedy, seeded top-k, penalties, top-p)
                // and free rows in one batch, joining at different calls; the free rows' bytes
                // are the ones they have with no mask anywhere.
                new Cell(
                        "masked-mixed",
                        "llama-bf16",
                        16,
                        8,
                        32,
                        List.of(
                                greedy(0, 9, 70, 16),
                                masked(0, 21, 71, 16, null, new ScriptedConstraint(3, 0, new int[0], -1)),
                                masked(1, 33, 72, 14, seededTopK, new ScriptedConstraint(4, 1, new int[0], -1)),
                                masked(2, 5, 73, 12, penalties, new ScriptedConstraint(2, 1, new int[0], -1)),
                                new ScriptRow(3, prompt(12, 74, 512), 12, new int[0], seededTopP))),
                // Constraints that run dry: a greedy row after 4 tokens and a seeded row at its
                // first step end alone with "error"; a complete constraint (only its stop id from
                // step 3) ends its row on the stop token; the free rows go on, one joining after.
                new Cell(
                        "masked-dry",
                        "qwen3-f32",
                        16,
                        8,
                        32,
                        List.of(
                                greedy(0, 12, 75, 20),
                                masked(0, 7, 76, 20, null, new ScriptedConstraint(3, 2, new int[0], 4)),
                                masked(1, 18, 77, 20, seededTopK, new ScriptedConstraint(5, 0, new int[0], 0)),
                                masked(1, 10, 78, 20, null, new ScriptedConstraint(4, 0, new int[] {7}, -1, 3), 7),
                                greedy(6, 9, 79, 8))),
                // A lone constrained row: the solo fast path with its mask, then a joiner.
                new Cell(
                        "masked-lone",
                        "qwen2-bf16",
                        16,
                        8,
                        32,
                        List.of(
                                masked(0, 14, 80, 16, seededTopP, new ScriptedConstraint(3, 1, new int[0], -1)),
                                greedy(8, 6, 81, 6))),
                // The default model (SmolLM2, bf16 activations over Q4_1-converted weights).
                new Cell(
                        "default",
                        "default",
                        8,
                        8,
                        32,
                        List.of(
                                new ScriptRow(0, prompt(20, 21, 49152), 6, new int[0], null),
                                new ScriptRow(1, prompt(7, 22, 49152), 6, new int[0], null),
                                new ScriptRow(2, prompt(12, 23, 49152), 4, new int[0], null))),
                // The default model with masks over its 49152 ids: greedy and seeded masked rows
                // next to a free one.
                new Cell(
                        "masked-default",
                        "default",
                        8,
                        8,
                        32,
                        List.of(
                                new ScriptRow(
                                        0,
                                        prompt(20, 24, 49152),
                                        6,
                                        new int[0],
                                        null,
                                        -1,
                                        0,
                                        new ScriptedConstraint(7, 0, new int[0], -1)),
                                new ScriptRow(1, prompt(7, 25, 49152), 6, new int[0], null),
                                new ScriptRow(
                                        1,
                                        prompt(12, 26, 49152),
                                        5,
                                        new int[0],
                                        seededTopK,
                                        -1,
                                        0,
                                        new ScriptedConstraint(5, 2, new int[0], -1)))));
    }

    @ParameterizedTest(name = "{0}", allowZeroInvocations = true)
    @MethodSource("cells")
    void everyStepMatchesBatchGenerator(Cell cell) throws Exception {
        Path modelDir = modelDir(cell.model());
        List<List<String>> expected = oracle(cell, modelDir);
        List<List<String>> got;
        List<Integer> parked = new ArrayList<>();
        try (LanguageModel model = Models.load(modelDir)) {
            got = run(model, cell, parked);
        }
        if (cell.shortPromptsFirst()) {
            // The schedule itself: the same calls hold a parked batch of the same size on both sides.
            List<Integer> oracleParked = new ArrayList<>();
            JSON.readTree(lastOracleOutput.toFile()).get("parked").forEach(n -> oracleParked.add(n.asInt()));
            assertEquals(oracleParked, parked, cell + ": rows parked after each call");
            assertTrue(parked.stream().anyMatch(n -> n > 0), cell + ": the script never parks a prompt batch");
        }
        assertTrue(expected.stream().mapToInt(List::size).sum() > 0, "the oracle generated nothing");
        for (int i = 0; i < Math.min(expected.size(), got.size()); i++) {
            assertEquals(expected.get(i), got.get(i), cell + ": call " + i + " (uid:token:finish:logprobs sha256)");
        }
        assertEquals(expected.size(), got.size(), cell + ": number of next() calls until every row finished");
    }

    /** A stop token ends its row with "stop" (the token still reported), the others continue. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("stopCells")
    void stopTokenMatchesBatchGenerator(String modelName) throws Exception {
        // The stop token is one the oracle's own unstopped run produces third in row 1.
        Cell plain = new Cell(
                "stop-probe",
                modelName,
                16,
                8,
                32,
                List.of(greedy(0, 13, 24, 20), greedy(0, 8, 25, 20), greedy(2, 17, 26, 12)));
        Path modelDir = modelDir(modelName);
        List<List<String>> probe = oracle(plain, modelDir);
        int stopToken = probe.stream()
                .flatMap(List::stream)
                .filter(s -> s.startsWith("1:"))
                .skip(2)
                .map(s -> Integer.parseInt(s.split(":")[1]))
                .findFirst()
                .orElseThrow();
        List<ScriptRow> rows = new ArrayList<>(plain.rows());
        ScriptRow r1 = rows.get(1);
        rows.set(1, new ScriptRow(r1.at(), r1.prompt(), r1.maxTokens(), new int[] {stopToken}, null));
        Cell cell = new Cell("stop", modelName, 16, 8, 32, rows);
        List<List<String>> expected = oracle(cell, modelDir);
        assertTrue(
                expected.stream().flatMap(List::stream).anyMatch(s -> s.startsWith("1:") && s.contains(":stop:")),
                "the oracle's row 1 must end on its stop token");
        try (LanguageModel model = Models.load(modelDir)) {
            assertEquals(expected, run(model, cell), "stop cell on " + modelName);
        }
    }

    static Stream<String> stopCells() {
        return Stream.of("qwen2-bf16");
    }

    static Path modelDir(String name) {
        Path dir = name.equals("default")
                ? ProjectHome.get().resolve("models/smollm2-135m-instruct")
                : work.resolve("models").resolve(name);
        assertTrue(Files.isRegularFile(dir.resolve("config.json")), "model " + dir + " is missing");
        return dir;
    }

    /** Runs batch.py on the cell's script; returns its steps as {@code uid:token:finish:sha}. */
    static List<List<String>> oracle(Cell cell, Path modelDir) throws Exception {
        Path scriptFile = writeScript(cell);
        Path out = scriptFile.resolveSibling("expected-" + cell.name() + "-" + cell.model() + ".json");
        PythonScript.run(
                "oracle/batch.py",
                900,
                List.of("--model", modelDir.toString(), "--script", scriptFile.toString(), "--out", out.toString()));
        lastOracleOutput = out;
        return steps(JSON.readTree(out.toFile()));
    }

    /** The cell's schedule as batch.py reads it, written under build/oracle/batch. */
    static Path writeScript(Cell cell) throws Exception {
        ObjectNode script = JSON.createObjectNode();
        script.put("prefill_step_size", cell.prefillStep());
        script.put("prefill_batch_size", cell.prefillBatch());
        script.put("completion_batch_size", cell.completionBatch());
        if (cell.maxKvSize() > 0) {
            script.put("max_kv_size", cell.maxKvSize());
        }
        if (cell.shortPromptsFirst()) {
            script.put("short_prompts_first", true);
        }
        if (!cell.decodeOnly().isEmpty()) {
            script.set(
                    "decode_only",
                    JSON.valueToTree(cell.decodeOnly().stream().sorted().toList()));
        }
        ArrayNode rows = script.putArray("rows");
        for (ScriptRow r : cell.rows()) {
            ObjectNode o = rows.addObject();
            o.put("at", r.at());
            o.set("prompt", JSON.valueToTree(r.prompt()));
            o.put("max_tokens", r.maxTokens());
            o.set("stop", JSON.valueToTree(r.stop()));
            if (r.sampling() != null) {
                o.set("sampling", JSON.valueToTree(r.sampling()));
            }
            if (r.removeAt() >= 0) {
                o.put("remove_at", r.removeAt());
            }
            if (r.history() > 0) {
                o.put("history", r.history());
            }
            if (r.mask() != null) {
                o.set("mask", JSON.valueToTree(r.mask().spec()));
            }
        }
        Path dir = work.resolve("batch");
        Files.createDirectories(dir);
        Path scriptFile = dir.resolve("script-" + cell.name() + "-" + cell.model() + ".json");
        JSON.writeValue(scriptFile.toFile(), script);
        return scriptFile;
    }

    /** batch.py's document as steps of {@code uid:token:finish:sha}. */
    static List<List<String>> steps(JsonNode doc) {
        List<List<String>> steps = new ArrayList<>();
        for (JsonNode step : doc.get("steps")) {
            List<String> s = new ArrayList<>();
            for (JsonNode t : step) {
                s.add(t.get("uid").asInt() + ":" + t.get("token").asInt() + ":"
                        + (t.get("finish").isNull() ? "-" : t.get("finish").asText()) + ":"
                        + t.get("logprobs_sha256").asText());
            }
            steps.add(s);
        }
        return steps;
    }

    /** The cell named {@code name} among {@link #allCells()}. */
    static Cell cell(String name) {
        return allCells().filter(c -> c.name().equals(name)).findFirst().orElseThrow();
    }

    /** Where the oracle models live, for a helper that runs outside this class's set-up. */
    static void useWork(Path dir) {
        work = dir;
    }

    /** The same script through our generator. */
    static List<List<String>> run(LanguageModel model, Cell cell) throws Exception {
        return run(model, cell, new ArrayList<>());
    }

    /** {@link #run(LanguageModel, Cell)}, noting the rows parked after each call in {@code parked}. */
    static List<List<String>> run(LanguageModel model, Cell cell, List<Integer> parked) throws Exception {
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        List<List<String>> steps = new ArrayList<>();
        int inserted = 0;
        int finished = 0;
        int[] uids = new int[cell.rows().size()];
        java.util.Set<Integer> done = new java.util.HashSet<>();
        List<ScriptedConstraint> constraints = new ArrayList<>();
        try (BatchGenerator gen = new BatchGenerator(
                model,
                cell.prefillStep(),
                cell.prefillBatch(),
                cell.completionBatch(),
                null,
                cell.maxKvSize(),
                cell.shortPromptsFirst())) {
            for (int step = 0; ; step++) {
                for (int i = 0; i < uids.length; i++) {
                    ScriptRow r = cell.rows().get(i);
                    if (r.at() == step) {
                        int h = r.history();
                        ScriptedConstraint c =
                                r.mask() == null ? null : r.mask().copy();
                        if (c != null) {
                            constraints.add(c);
                        }
                        uids[i] = gen.insert(
                                new BatchRequest(
                                        Arrays.copyOfRange(r.prompt(), h, r.prompt().length),
                                        null,
                                        r.maxTokens(),
                                        params(r.sampling()),
                                        r.stop(),
                                        c),
                                h == 0 ? null : history(model, r.prompt(), h),
                                Arrays.copyOf(r.prompt(), h));
                        inserted++;
                    }
                }
                for (int i = 0; i < uids.length; i++) {
                    if (cell.rows().get(i).removeAt() == step && !done.contains(uids[i])) {
                        assertTrue(gen.remove(uids[i]), "row " + i + " is in flight when removed");
                        done.add(uids[i]);
                        finished++;
                    }
                }
                if (inserted == cell.rows().size() && finished == cell.rows().size()) {
                    assertTrue(gen.idle(), "every row finished but the generator is not idle");
                    for (ScriptedConstraint c : constraints) {
                        assertEquals(1, c.closes, cell + ": a finished row's constraint is closed once");
                    }
                    return steps;
                }
                assertFalse(step > 10_000, "the script does not finish");
                List<String> s = new ArrayList<>();
                for (BatchToken t : gen.next(!cell.decodeOnly().contains(step))) {
                    if (t.error() != null) {
                        assertTrue(t.error().contains("scripted constraint can no longer be satisfied"), t.error());
                        s.add(t.uid() + ":-1:error:-");
                        done.add(t.uid());
                        finished++;
                        continue;
                    }
                    s.add(t.uid() + ":" + t.token() + ":" + (t.finishReason() == null ? "-" : t.finishReason()) + ":"
                            + HexFormat.of().formatHex(sha.digest(t.logprobs().toBytes())));
                    if (t.finishReason() != null) {
                        done.add(t.uid());
                        finished++;
                    }
                }
                steps.add(s);
                parked.add(gen.parked());
            }
        }
    }

    /** The oracle's history: one model call over the first {@code h} ids into fresh caches. */
    static KvCache[] history(LanguageModel model, int[] prompt, int h) {
        KvCache[] caches = model.newCache();
        try (ArrayScope scope = ArrayScope.open()) {
            model.forward(Mlx.fromInts(Arrays.copyOf(prompt, h), 1, h), caches);
            List<MlxArray> state = new ArrayList<>();
            for (KvCache c : caches) {
                state.addAll(List.of(c.state()));
            }
            Mlx.eval(state.toArray(new MlxArray[0]));
        }
        return caches;
    }

    /** The script's {@code sampling} object as our settings (greedy when null). */
    public static SamplingParams params(Map<String, Object> s) {
        if (s == null) {
            return SamplingParams.GREEDY;
        }
        SamplingParams.Builder b = SamplingParams.builder();
        if (s.containsKey("temp")) {
            b.temperature(((Number) s.get("temp")).doubleValue());
        }
        if (s.containsKey("top_k")) {
            b.topK(((Number) s.get("top_k")).intValue());
        }
        if (s.containsKey("top_p")) {
            b.topP(((Number) s.get("top_p")).doubleValue());
        }
        if (s.containsKey("min_p")) {
            b.minP(((Number) s.get("min_p")).doubleValue());
        }
        if (s.containsKey("seed")) {
            b.seed(((Number) s.get("seed")).longValue());
        }
        if (s.containsKey("repetition_penalty")) {
            b.repetitionPenalty(((Number) s.get("repetition_penalty")).doubleValue());
        }
        if (s.containsKey("presence_penalty")) {
            b.presencePenalty(((Number) s.get("presence_penalty")).doubleValue());
        }
        if (s.containsKey("logit_bias")) {
            Map<Integer, Double> bias = new LinkedHashMap<>();
            ((Map<?, ?>) s.get("logit_bias"))
                    .forEach((k, v) -> bias.put(Integer.parseInt((String) k), ((Number) v).doubleValue()));
            b.logitBias(bias);
        }
        return b.build();
    }
}
