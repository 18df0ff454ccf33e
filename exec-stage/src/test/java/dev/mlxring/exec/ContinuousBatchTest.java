package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.exec.generate.ModelExecutor;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.kvstore.CacheNamespace;
import dev.mlxring.kvstore.ModelFingerprint;
import dev.mlxring.kvstore.PrefixHit;
import dev.mlxring.kvstore.RamPrefixCache;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.pipeline.BatchStep;
import dev.mlxring.pipeline.ExecutionBatch;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.StepResult;
import dev.mlxring.pipeline.Usage;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The pipeline's batch contract over the real mechanics ({@code ContinuousBatch}): a lone row
 * equals the serial executor bit for bit (tokens, logprobs, top logprobs, usage), also when it
 * starts from a prefix-cache hit; removing one row mid-generation leaves the other rows' tokens
 * and logprobs exactly as in the run where nobody left.
 */
class ContinuousBatchTest {
    private static final int PREFILL_STEP = 16;
    private static Path models;

    @BeforeAll
    static void buildOracleModels() throws Exception {
        models = OracleFixtures.build().work().resolve("models");
    }

    static ExecutionPlan plan(String id, int[] prompt, int maxTokens, SamplingParams params) {
        return ExecutionPlan.builder()
                .requestId(id)
                .prompt(new PreparedPrompt(prompt, prompt.length))
                .sampling(params)
                .maxTokens(maxTokens)
                .logprobs(true)
                .topLogprobs(3)
                .build();
    }

    /**
     * Inserts {@code plans} at once and steps until every row ended; {@code removeAfter} maps a
     * plan index to the unit after which that row is removed. Returns each plan's entries.
     */
    private static Map<Integer, List<String>> batched(
            ExecutionBatch batch,
            List<ExecutionPlan> plans,
            Map<Integer, Integer> removeAfter,
            Map<Integer, Usage> usages)
            throws Exception {
        Map<Integer, Integer> planOfRow = new HashMap<>();
        Map<Integer, List<String>> out = new HashMap<>();
        for (int i = 0; i < plans.size(); i++) {
            planOfRow.put(batch.insert(plans.get(i)), i);
            out.put(i, new ArrayList<>());
        }
        BatchStep step = new BatchStep(8, 3);
        for (int unit = 0; batch.rows() > 0; unit++) {
            assertTrue(unit < 10_000, "the rows do not finish");
            batch.step(step);
            StepEntries.collect(step, planOfRow, out, usages);
            for (var rm : removeAfter.entrySet()) {
                if (rm.getValue() == unit) {
                    int row = planOfRow.entrySet().stream()
                            .filter(x -> x.getValue().equals(rm.getKey()))
                            .findFirst()
                            .orElseThrow()
                            .getKey();
                    usages.put(rm.getKey(), batch.remove(row));
                    out.get(rm.getKey()).add("removed");
                }
            }
        }
        return out;
    }

    /**
     * A hybrid model (qwen3_5) batches with the prefix cache: a lone row publishes the same entry
     * as the serial executor (prompt and output, its recurrent state at its end), and a prompt
     * extending that entry restores it whole on both paths, giving the serial executor's tokens
     * and usage.
     */
    @Test
    void aHybridLoneRowEqualsTheSerialExecutorAlsoFromAPrefixHit() throws Exception {
        Path dir = models.resolve("qwen3_5-bf16");
        int[] first = BatchParityTest.prompt(40, 51, 512);
        try (LanguageModel model = Models.load(dir);
                RamPrefixCache serialCache = new RamPrefixCache(10, Long.MAX_VALUE);
                RamPrefixCache batchCache = new RamPrefixCache(10, Long.MAX_VALUE)) {
            ModelExecutor serial =
                    new ModelExecutor(model, PREFILL_STEP, 0, new PrefixReuse(serialCache, ModelFingerprint.of(dir)));
            ModelExecutor batching =
                    new ModelExecutor(model, PREFILL_STEP, 0, new PrefixReuse(batchCache, ModelFingerprint.of(dir)));
            try (ExecutionBatch batch = batching.openBatch(8, 8)) {
                assertNotNull(batch, "a hybrid model batches");
                ExecutionPlan p1 = plan("first", first, 10, SamplingParams.GREEDY);
                assertEquals(
                        StepEntries.serial(serial, p1).entries(),
                        batched(batch, List.of(p1), Map.of(), new HashMap<>()).get(0));
                int[] entry = serialCache.entries().getLast();
                assertArrayEquals(entry, batchCache.entries().getLast(), "the finished entry on both paths");
                int[] second = Arrays.copyOf(entry, entry.length + 5);
                System.arraycopy(BatchParityTest.prompt(5, 52, 512), 0, second, entry.length, 5);
                ExecutionPlan p2 = plan("second", second, 8, SamplingParams.GREEDY);
                StepEntries.Serial expected = StepEntries.serial(serial, p2);
                Map<Integer, Usage> usages = new HashMap<>();
                assertEquals(
                        expected.entries(),
                        batched(batch, List.of(p2), Map.of(), usages).get(0),
                        "lone row vs serial");
                assertEquals(entry.length, expected.usage().cachedTokens(), "serial: the entry restored whole");
                assertEquals(expected.usage(), usages.get(0), "usage");
            }
            assertTrue(serialCache.hits() > 0 && batchCache.hits() > 0, "prefix hits on both paths");
        }
    }

    /**
     * Hybrid rows of different prompt lengths prefilled and decoded in one batch (right-padded
     * chunks, rows finishing at different steps) each publish the entry the serial executor
     * publishes, and their prompt segment: their recurrent state at their own position, not the
     * batch's padded one. Each
     * entry extended by a few ids is then restored whole on both paths, and the rows batched
     * again give the serial executor's tokens, logprobs bits and usage.
     */
    @Test
    void hybridRowsOfDifferentLengthsEachPublishTheirOwnPrefix() throws Exception {
        Path dir = models.resolve("qwen3_5-bf16");
        int[][] prompts = {
            BatchParityTest.prompt(23, 53, 512), BatchParityTest.prompt(5, 54, 512), BatchParityTest.prompt(40, 55, 512)
        };
        int[] maxTokens = {10, 6, 8};
        try (LanguageModel model = Models.load(dir);
                RamPrefixCache serialCache = new RamPrefixCache(16, Long.MAX_VALUE);
                RamPrefixCache batchCache = new RamPrefixCache(16, Long.MAX_VALUE)) {
            ModelExecutor serial =
                    new ModelExecutor(model, PREFILL_STEP, 0, new PrefixReuse(serialCache, ModelFingerprint.of(dir)));
            ModelExecutor batching =
                    new ModelExecutor(model, PREFILL_STEP, 0, new PrefixReuse(batchCache, ModelFingerprint.of(dir)));
            try (ExecutionBatch batch = batching.openBatch(8, 8)) {
                List<ExecutionPlan> firsts = new ArrayList<>();
                for (int i = 0; i < prompts.length; i++) {
                    firsts.add(plan("first" + i, prompts[i], maxTokens[i], SamplingParams.GREEDY));
                }
                Map<Integer, List<String>> firstOut = batched(batch, firsts, Map.of(), new HashMap<>());
                for (int i = 0; i < firsts.size(); i++) {
                    assertEquals(
                            StepEntries.serial(serial, firsts.get(i)).entries(),
                            firstOut.get(i),
                            "first turn, row " + i);
                }
                List<String> serialEntries = sortedEntries(serialCache);
                assertEquals(prompts.length, serialEntries.size(), "the serial runs' entries");
                // The batch also publishes each row's prompt segment (its prompt less the id its
                // first step feeds), as mlx_lm.server's batch loop does; the serial path does not.
                List<String> batchExpected = new ArrayList<>(serialEntries);
                for (int[] p : prompts) {
                    batchExpected.add(Arrays.toString(Arrays.copyOf(p, p.length - 1)));
                }
                assertEquals(
                        batchExpected.stream().sorted().toList(),
                        sortedEntries(batchCache),
                        "every batched row published its segment and finished entries at its own length");

                List<ExecutionPlan> seconds = new ArrayList<>();
                List<List<String>> expected = new ArrayList<>();
                List<Usage> expectedUsage = new ArrayList<>();
                int i = 0;
                for (int[] entry : serialCache.entries()) {
                    int[] second = Arrays.copyOf(entry, entry.length + 5);
                    System.arraycopy(BatchParityTest.prompt(5, 56 + i, 512), 0, second, entry.length, 5);
                    ExecutionPlan p = plan("second" + i, second, 6, SamplingParams.GREEDY);
                    StepEntries.Serial alone = StepEntries.serial(serial, p);
                    expected.add(alone.entries());
                    assertEquals(entry.length, alone.usage().cachedTokens(), "serial: entry " + i + " restored whole");
                    expectedUsage.add(alone.usage());
                    seconds.add(p);
                    i++;
                }
                Map<Integer, Usage> usages = new HashMap<>();
                Map<Integer, List<String>> secondOut = batched(batch, seconds, Map.of(), usages);
                for (int r = 0; r < seconds.size(); r++) {
                    assertEquals(expected.get(r), secondOut.get(r), "second turn from the prefix cache, row " + r);
                    assertEquals(expectedUsage.get(r), usages.get(r), "second turn usage, row " + r);
                }
            }
        }
    }

    /**
     * Batched hybrid rows checkpoint their recurrent state between prefill chunks as the serial
     * run does ({@code --prompt-cache-checkpoint} 16, chunks of 16): a prompt that shares part of
     * a row's finished entry and then branches off restores the same checkpoint on both paths
     * (the most positions within the shared ids) and gives the serial executor's tokens, logprobs
     * bits and usage.
     */
    @Test
    void batchedHybridRowsCheckpointTheirRecurrentStateAsTheSerialRunDoes() throws Exception {
        Path dir = models.resolve("qwen3_5-bf16");
        int[][] prompts = {BatchParityTest.prompt(40, 57, 512), BatchParityTest.prompt(23, 58, 512)};
        int[] shared = {35, 20};
        int[] checkpoint = {32, 16};
        try (LanguageModel model = Models.load(dir);
                RamPrefixCache serialCache = new RamPrefixCache(16, Long.MAX_VALUE);
                RamPrefixCache batchCache = new RamPrefixCache(16, Long.MAX_VALUE)) {
            ModelExecutor serial = new ModelExecutor(
                    model, PREFILL_STEP, 0, new PrefixReuse(serialCache, ModelFingerprint.of(dir), "", PREFILL_STEP));
            ModelExecutor batching = new ModelExecutor(
                    model, PREFILL_STEP, 0, new PrefixReuse(batchCache, ModelFingerprint.of(dir), "", PREFILL_STEP));
            try (ExecutionBatch batch = batching.openBatch(8, 8)) {
                List<ExecutionPlan> firsts = new ArrayList<>();
                for (int i = 0; i < prompts.length; i++) {
                    firsts.add(plan("first" + i, prompts[i], 6 + 2 * i, SamplingParams.GREEDY));
                }
                batched(batch, firsts, Map.of(), new HashMap<>());
                List<ExecutionPlan> branches = new ArrayList<>();
                List<List<String>> expected = new ArrayList<>();
                List<Usage> expectedUsage = new ArrayList<>();
                for (int i = 0; i < prompts.length; i++) {
                    StepEntries.serial(serial, firsts.get(i));
                    int[] branch = Arrays.copyOf(prompts[i], shared[i] + 6);
                    System.arraycopy(BatchParityTest.prompt(6, 59 + i, 512), 0, branch, shared[i], 6);
                    ExecutionPlan p = plan("branch" + i, branch, 6, SamplingParams.GREEDY);
                    StepEntries.Serial alone = StepEntries.serial(serial, p);
                    expected.add(alone.entries());
                    assertEquals(
                            checkpoint[i], alone.usage().cachedTokens(), "serial: row " + i + "'s checkpoint restored");
                    expectedUsage.add(alone.usage());
                    branches.add(p);
                }
                Map<Integer, Usage> usages = new HashMap<>();
                Map<Integer, List<String>> out = batched(batch, branches, Map.of(), usages);
                for (int r = 0; r < branches.size(); r++) {
                    assertEquals(expectedUsage.get(r), usages.get(r), "branch usage (cached tokens), row " + r);
                    assertEquals(expected.get(r), out.get(r), "branch from the batched row's checkpoint, row " + r);
                }
            }
        }
    }

    private static List<String> sortedEntries(RamPrefixCache cache) {
        return cache.entries().stream().map(Arrays::toString).sorted().toList();
    }

    @Test
    void aLoneRowEqualsTheSerialExecutorAlsoFromAPrefixHit() throws Exception {
        Path dir = models.resolve("llama-bf16");
        SamplingParams sampled =
                SamplingParams.builder().temperature(0.8).topK(30).seed(9L).build();
        int[] first = BatchParityTest.prompt(40, 41, 512);
        // Shares the first 30 ids with `first`: a prefix hit once `first` has finished.
        int[] second = Arrays.copyOf(first, 45);
        System.arraycopy(BatchParityTest.prompt(15, 42, 512), 0, second, 30, 15);
        try (LanguageModel model = Models.load(dir);
                RamPrefixCache serialCache = new RamPrefixCache(10, Long.MAX_VALUE);
                RamPrefixCache batchCache = new RamPrefixCache(10, Long.MAX_VALUE)) {
            ModelExecutor serial =
                    new ModelExecutor(model, PREFILL_STEP, 0, new PrefixReuse(serialCache, ModelFingerprint.of(dir)));
            ModelExecutor batching =
                    new ModelExecutor(model, PREFILL_STEP, 0, new PrefixReuse(batchCache, ModelFingerprint.of(dir)));
            try (ExecutionBatch batch = batching.openBatch(8, 8)) {
                assertNotNull(batch, "a dense model batches");
                for (SamplingParams params : List.of(SamplingParams.GREEDY, sampled)) {
                    for (int[] prompt : List.of(first, second)) {
                        ExecutionPlan p = plan("lone", prompt, 12, params);
                        StepEntries.Serial expected = StepEntries.serial(serial, p);
                        Map<Integer, Usage> usages = new HashMap<>();
                        List<String> got =
                                batched(batch, List.of(p), Map.of(), usages).get(0);
                        assertEquals(
                                expected.entries(), got, "lone row vs serial, prompt " + prompt.length + ", " + params);
                        assertEquals(expected.usage(), usages.get(0), "usage");
                    }
                }
            }
            // The second prompt found the first one's 30 shared ids on both paths.
            assertTrue(
                    serialCache.hits() > 0 && batchCache.hits() == serialCache.hits(),
                    "prefix hits: serial " + serialCache.hits() + ", batch " + batchCache.hits());
        }
    }

    /**
     * Rows whose prompts are read and that wait only for their first step (the split) are not
     * prefill: the policy must not hold them behind decode-only units that repay the chunk they
     * were read in, which doubled the time to first token of rows joining a generating row.
     */
    @Test
    void rowsWhosePromptsAreReadAreNotPrefillThatDecodeOnlyUnitsHoldBack() throws Exception {
        Path dir = models.resolve("llama-bf16");
        try (LanguageModel model = Models.load(dir)) {
            ModelExecutor executor = new ModelExecutor(model, PREFILL_STEP, 0, null);
            try (ExecutionBatch batch = executor.openBatch(8, 8)) {
                BatchStep step = new BatchStep(8, 3);
                batch.insert(plan("running", BatchParityTest.prompt(5, 43, 512), 64, SamplingParams.GREEDY));
                for (int unit = 0; step.count == 0; unit++) {
                    assertTrue(unit < 10, "the first row does not start");
                    batch.step(step);
                }
                int[] joiners = {
                    batch.insert(plan("a", BatchParityTest.prompt(PREFILL_STEP, 44, 512), 8, SamplingParams.GREEDY)),
                    batch.insert(plan("b", BatchParityTest.prompt(PREFILL_STEP - 3, 45, 512), 8, SamplingParams.GREEDY))
                };
                assertTrue(batch.prefillPending(), "queued rows are prefill");
                batch.step(step); // admits both and reads their prompts but for the last token
                assertEquals(1, step.count, "only the running row stepped");
                assertFalse(batch.prefillPending(), "no prompt token is left to read");
                assertFalse(batch.decodeOnlyUseful(), "a decode-only unit would hold the joiners' first step");
                // Their first step runs in the next unit and is reported in the one after it.
                List<Integer> stepped = new ArrayList<>();
                for (int unit = 0; unit < 2; unit++) {
                    batch.step(step, true);
                    for (int e = 0; e < step.count; e++) {
                        stepped.add(step.rows[e]);
                    }
                }
                assertTrue(
                        stepped.contains(joiners[0]) && stepped.contains(joiners[1]),
                        "the joiners' first tokens came within two units: " + stepped);
            }
        }
    }

    @Test
    void theKvProjectionIsTheModelsKvBytesPerPositionPaddedSteppedWithTheFreeRowsKept() throws Exception {
        Path dir = models.resolve("llama-bf16");
        var config = new com.fasterxml.jackson.databind.ObjectMapper()
                .readTree(dir.resolve("config.json").toFile());
        int layers = config.get("num_hidden_layers").asInt();
        int heads = config.get("num_attention_heads").asInt();
        int kvHeads = config.path("num_key_value_heads").asInt(heads);
        int headDim = config.path("head_dim").asInt(config.get("hidden_size").asInt() / heads);
        long perPosition = (long) layers * kvHeads * headDim * 2 /* keys and values */ * 2 /* bfloat16 */;
        try (LanguageModel model = Models.load(dir)) {
            try (ExecutionBatch batch = new ModelExecutor(model, PREFILL_STEP, 0, null).openBatch(8, 8)) {
                // 3 and 2 rows may keep one free buffer row for a joiner; a lone row none
                assertEquals(4 * 256 * perPosition, batch.projectedKvBytes(3, 1));
                assertEquals(4 * 256 * perPosition, batch.projectedKvBytes(3, 256));
                assertEquals(3 * 512 * perPosition, batch.projectedKvBytes(2, 257));
                assertEquals(512 * perPosition, batch.projectedKvBytes(1, 257));
                assertEquals(20 * 256 * perPosition, batch.projectedKvBytes(16, 100));
            }
        }
    }

    /**
     * A hybrid model's projection: its attention layers' KV bytes per position, stepped as above,
     * plus each row's recurrent state, which does not grow: per delta net layer the conv state
     * ({@code kernel - 1} inputs of {@code 2 * keyDim + valueDim} channels, bfloat16) and the
     * float32 recurrence state {@code [Hv, Dv, Dk]}.
     */
    @Test
    void aHybridModelsProjectionAddsItsRecurrentStatePerRow() throws Exception {
        Path dir = models.resolve("qwen3_5-bf16");
        var config = new com.fasterxml.jackson.databind.ObjectMapper()
                .readTree(dir.resolve("config.json").toFile());
        int layers = config.get("num_hidden_layers").asInt();
        int interval = config.get("full_attention_interval").asInt();
        int attentionLayers = layers / interval;
        int linearLayers = layers - attentionLayers;
        long perPosition = (long) attentionLayers
                * config.get("num_key_value_heads").asInt()
                * config.get("head_dim").asInt()
                * 2 /* keys and values */
                * 2 /* bfloat16 */;
        int kHeads = config.get("linear_num_key_heads").asInt();
        int vHeads = config.get("linear_num_value_heads").asInt();
        int dk = config.get("linear_key_head_dim").asInt();
        int dv = config.get("linear_value_head_dim").asInt();
        int convDim = 2 * kHeads * dk + vHeads * dv;
        long conv = (long) (config.get("linear_conv_kernel_dim").asInt() - 1) * convDim * 2 /* bfloat16 */;
        long recurrence = (long) vHeads * dv * dk * 4 /* float32 */;
        long perRow = linearLayers * (conv + recurrence);
        try (LanguageModel model = Models.load(dir)) {
            try (ExecutionBatch batch = new ModelExecutor(model, PREFILL_STEP, 0, null).openBatch(8, 8)) {
                assertEquals(4 * 256 * perPosition + 3 * perRow, batch.projectedKvBytes(3, 1));
                assertEquals(3 * 512 * perPosition + 2 * perRow, batch.projectedKvBytes(2, 257));
            }
        }
    }

    /**
     * Sliding windows (keep 0) batch; a {@code --max-kv-size} cache (keep 4, which mlx-lm's batch
     * cache drops) is served serially; a family that ignores {@code --max-kv-size} still batches.
     */
    @Test
    void slidingWindowsBatchAndMaxKvSizeStaysSerial() throws Exception {
        try (LanguageModel gemma = Models.load(models.resolve("gemma3-bf16"));
                LanguageModel qwen = Models.load(models.resolve("qwen3-bf16"))) {
            try (ExecutionBatch batch = new ModelExecutor(gemma, PREFILL_STEP, 24, null).openBatch(8, 8)) {
                assertNotNull(batch, "gemma3_text (sliding windows; ignores --max-kv-size) batches");
            }
            try (ExecutionBatch batch = new ModelExecutor(qwen, PREFILL_STEP, 0, null).openBatch(8, 8)) {
                assertNotNull(batch, "qwen3 batches");
            }
            assertNull(
                    new ModelExecutor(qwen, PREFILL_STEP, 24, null).openBatch(8, 8),
                    "qwen3 with --max-kv-size runs serially");
        }
    }

    @Test
    void removingOneRowLeavesTheOtherRowsUnchanged() throws Exception {
        Path dir = models.resolve("qwen3-bf16");
        SamplingParams sampled =
                SamplingParams.builder().temperature(0.9).topP(0.9).seed(4L).build();
        List<ExecutionPlan> plans = List.of(
                plan("a", BatchParityTest.prompt(9, 51, 512), 20, SamplingParams.GREEDY),
                plan("b", BatchParityTest.prompt(33, 52, 512), 20, SamplingParams.GREEDY),
                plan("c", BatchParityTest.prompt(17, 53, 512), 20, sampled));
        try (LanguageModel model = Models.load(dir)) {
            ModelExecutor executor = new ModelExecutor(model, PREFILL_STEP, 0, null);
            Map<Integer, List<String>> whole;
            Map<Integer, List<String>> cut;
            Map<Integer, Usage> usages = new HashMap<>();
            try (ExecutionBatch batch = executor.openBatch(8, 8)) {
                whole = batched(batch, plans, Map.of(), new HashMap<>());
            }
            try (ExecutionBatch batch = executor.openBatch(8, 8)) {
                // Measured from the second run on: the first one made the samplers' lasting constants.
                long idle = Mlx.memory().activeBytes();
                cut = batched(batch, plans, Map.of(1, 6), usages);
                assertEquals(idle, Mlx.memory().activeBytes(), "an idle batch holds no arrays");
            }
            assertEquals(whole.get(0), cut.get(0), "row a");
            assertEquals(whole.get(2), cut.get(2), "row c (sampled, own key)");
            assertEquals("removed", cut.get(1).get(cut.get(1).size() - 1));
            List<String> bTokens = cut.get(1).subList(0, cut.get(1).size() - 1);
            assertEquals(whole.get(1).subList(0, bTokens.size()), bTokens, "row b up to its removal");
            assertEquals(new Usage(33, bTokens.size(), 0), usages.get(1));
            assertEquals(21, whole.get(0).size(), "20 tokens and the end");
        }
    }
    /**
     * A greedy chat row snapshots at its segment ends while it prefills (the system snapshot, then
     * the conversation's, which replaces it); a seeded one does not, as mlx_lm.server serves seeded
     * requests through {@code _serve_single}: only its finished snapshot is published.
     */
    @Test
    void aSeededRowTakesNoSegmentSnapshots() throws Exception {
        Path dir = models.resolve("llama-bf16");
        int[] prompt = BatchParityTest.prompt(40, 61, 512);
        List<dev.mlxring.pipeline.PromptSegment> segments = List.of(
                new dev.mlxring.pipeline.PromptSegment(12, dev.mlxring.pipeline.PromptSegment.Kind.SYSTEM),
                new dev.mlxring.pipeline.PromptSegment(28, dev.mlxring.pipeline.PromptSegment.Kind.USER));
        SamplingParams seeded =
                SamplingParams.builder().temperature(0.8).seed(3L).build();
        for (SamplingParams params : List.of(SamplingParams.GREEDY, seeded)) {
            try (LanguageModel model = Models.load(dir);
                    RamPrefixCache cache = new RamPrefixCache(10, Long.MAX_VALUE);
                    ExecutionBatch batch = new ModelExecutor(
                                    model, PREFILL_STEP, 0, new PrefixReuse(cache, ModelFingerprint.of(dir)))
                            .openBatch(8, 8)) {
                batch.insert(ExecutionPlan.builder()
                        .requestId("s")
                        .prompt(new PreparedPrompt(prompt, prompt.length, true, segments))
                        .sampling(params)
                        .maxTokens(4)
                        .build());
                BatchStep step = new BatchStep(8, 3);
                List<String> seen = new ArrayList<>();
                while (batch.rows() > 0) {
                    batch.step(step);
                    List<int[]> entries = cache.entries();
                    for (int i = 0; i < entries.size(); i++) {
                        String e = cache.entryKinds().get(i).mlxName() + " " + entries.get(i).length;
                        if (seen.isEmpty() || !seen.getLast().equals(e)) {
                            seen.add(e);
                        }
                    }
                }
                List<String> want =
                        params == seeded ? List.of("assistant 44") : List.of("system 12", "user 39", "assistant 44");
                assertEquals(want, seen, "entries in the cache while the row ran, " + params);
            }
        }
    }

    /**
     * A row that finishes while others generate publishes its prefix-cache entry inside the unit
     * it finished in (the cache's entries after that unit are mlx_lm.server's), but its bytes are
     * not copied there (that copy would wait for the step already running): the next unit writes
     * them, or a request inserted right after (the next turn of that conversation) writes them
     * as it restores the entry. The last row's entry is written within its own unit (no unit
     * follows to do it).
     */
    @Test
    void aFinishedRowIsPublishedInItsUnitAndItsBytesWrittenInTheNextOrOnItsRestore() throws Exception {
        Path dir = models.resolve("llama-bf16");
        int[] first = BatchParityTest.prompt(20, 71, 512);
        int[] other = BatchParityTest.prompt(24, 72, 512);
        for (boolean insertNextTurn : List.of(false, true)) {
            try (LanguageModel model = Models.load(dir);
                    RamPrefixCache cache = new RamPrefixCache(10, Long.MAX_VALUE);
                    ExecutionBatch batch = new ModelExecutor(
                                    model, PREFILL_STEP, 0, new PrefixReuse(cache, ModelFingerprint.of(dir)))
                            .openBatch(8, 8)) {
                CacheNamespace ns = new PrefixReuse(cache, ModelFingerprint.of(dir)).namespace(null);
                int shortRow = batch.insert(plan("short", first, 3, SamplingParams.GREEDY));
                int longRow = batch.insert(plan("long", other, 12, SamplingParams.GREEDY));
                BatchStep step = new BatchStep(8, 3);
                List<Integer> generated = new ArrayList<>();
                List<Integer> generatedLong = new ArrayList<>();
                boolean finished = false;
                for (int unit = 0; !finished; unit++) {
                    assertTrue(unit < 100, "the short row does not finish");
                    batch.step(step);
                    for (int e = 0; e < step.count; e++) {
                        if (step.results[e].kind == StepResult.Kind.TOKEN) {
                            (step.rows[e] == shortRow ? generated : generatedLong).add(step.results[e].token);
                        }
                        finished |= step.rows[e] == shortRow && step.results[e].kind == StepResult.Kind.FINISHED;
                    }
                }
                assertEquals(1, batch.rows(), "the long row still generates");
                int[] shortEntry = concat(first, generated);
                assertEquals(Boolean.FALSE, filled(cache, ns, shortEntry), "published in its unit, bytes pending");
                if (insertNextTurn) {
                    int[] next = concat(shortEntry, List.of(7, 8, 9, 10, 11));
                    int row = batch.insert(plan("next turn", next, 2, SamplingParams.GREEDY));
                    assertTrue(
                            batch.cachedTokens(row) >= first.length,
                            "the next turn restores the finished row's entry, cached " + batch.cachedTokens(row));
                    assertEquals(Boolean.TRUE, filled(cache, ns, shortEntry), "its restore wrote the bytes");
                } else {
                    batch.step(step);
                    tokensOf(step, longRow, generatedLong);
                    assertEquals(1, batch.rows(), "the long row still generates");
                    assertEquals(Boolean.TRUE, filled(cache, ns, shortEntry), "the next unit wrote the bytes");
                }
                while (batch.rows() > 0) {
                    batch.step(step);
                    tokensOf(step, longRow, generatedLong);
                }
                assertEquals(
                        Boolean.TRUE,
                        filled(cache, ns, concat(other, generatedLong)),
                        "the last row's bytes are written within its unit");
            }
        }
    }

    private static void tokensOf(BatchStep step, int row, List<Integer> into) {
        for (int e = 0; e < step.count; e++) {
            if (step.rows[e] == row && step.results[e].kind == StepResult.Kind.TOKEN) {
                into.add(step.results[e].token);
            }
        }
    }

    private static int[] concat(int[] prompt, List<Integer> more) {
        int[] out = Arrays.copyOf(prompt, prompt.length + more.size());
        for (int i = 0; i < more.size(); i++) {
            out[prompt.length + i] = more.get(i);
        }
        return out;
    }

    /** Whether the cache's entry of exactly {@code tokens} has its bytes written; null when it holds none. */
    private static Boolean filled(RamPrefixCache cache, CacheNamespace ns, int[] tokens) {
        if (cache.entries().stream().noneMatch(e -> Arrays.equals(e, tokens))) {
            return null;
        }
        try (PrefixHit hit = cache.lookup(ns, tokens)) {
            return hit.snapshot().filled();
        }
    }
}
