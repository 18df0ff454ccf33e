package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.exec.generate.ModelExecutor;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.pipeline.BatchStep;
import dev.mlxring.pipeline.ExecutionBatch;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.KvQuantization;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.StepResult;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The oracle of quantized KV rows in the continuous batch ({@code BatchQuantizedKvCache}): every
 * row of a batch run with {@code --kv-bits} equals, token for token and logprob bit for bit, the
 * same request run serially with the same KV scheme (the serial path is mlx-lm's
 * {@code generate_step} with {@code kv_bits}, bit-exact with it by GreedyParityTest's KV cells).
 * Cells: 4 and 8 bits, greedy and seeded rows, ragged prompts longer than the prefill step, rows
 * joining mid-generation, one removed mid-generation and rows finishing at different lengths. A
 * negative control runs the serial reference with the other width and must differ, so a batch
 * that quantized with the wrong bits or group would fail the cells.
 */
class BatchQuantizedKvParityTest {
    private static final int PREFILL_STEP = 16;
    private static Path models;

    @BeforeAll
    static void buildOracleModels() throws Exception {
        models = OracleFixtures.build().work().resolve("models");
    }

    /** One row of a script: inserted before unit {@code at}, removed after unit {@code removeAfter} (-1: never). */
    record ScriptRow(int at, int[] prompt, int maxTokens, SamplingParams sampling, int removeAfter) {}

    private static ExecutionPlan plan(String id, ScriptRow row, KvQuantization kv) {
        return ExecutionPlan.builder()
                .requestId(id)
                .prompt(new PreparedPrompt(row.prompt(), row.prompt().length))
                .sampling(row.sampling())
                .maxTokens(row.maxTokens())
                .logprobs(true)
                .topLogprobs(2)
                .kvScheme(kv)
                .build();
    }

    static ExecutionPlan planOf(ScriptRow row, KvQuantization kv) {
        return plan("s", row, kv);
    }

    /** Runs the script through one batch; returns each row's entries (a removed row's up to its removal). */
    static List<List<String>> batched(ExecutionBatch batch, List<ScriptRow> script, KvQuantization kv)
            throws Exception {
        Map<Integer, Integer> rowOfUid = new HashMap<>();
        Map<Integer, Integer> uidOfRow = new HashMap<>();
        List<List<String>> out = new ArrayList<>();
        for (int i = 0; i < script.size(); i++) {
            out.add(new ArrayList<>());
        }
        BatchStep step = new BatchStep(16, 2);
        int inserted = 0;
        for (int unit = 0; inserted < script.size() || batch.rows() > 0; unit++) {
            assertTrue(unit < 10_000, "the rows do not finish");
            for (int i = 0; i < script.size(); i++) {
                if (script.get(i).at() == unit) {
                    ExecutionPlan p = plan("r" + i, script.get(i), kv);
                    assertTrue(batch.accepts(p), "row " + i + " joins the batch");
                    int uid = batch.insert(p);
                    rowOfUid.put(uid, i);
                    uidOfRow.put(i, uid);
                    inserted++;
                }
            }
            batch.step(step);
            for (int e = 0; e < step.count; e++) {
                int i = rowOfUid.get(step.rows[e]);
                StepResult r = step.results[e];
                out.get(i).add(r.kind == StepResult.Kind.TOKEN ? StepEntries.describe(r) : "end:" + r.finishReason);
            }
            for (int i = 0; i < script.size(); i++) {
                if (script.get(i).removeAfter() == unit) {
                    batch.remove(uidOfRow.get(i));
                    out.get(i).add("removed");
                }
            }
        }
        return out;
    }

    static List<ScriptRow> script(SamplingParams sampling) {
        return List.of(
                new ScriptRow(0, BatchParityTest.prompt(40, 61, 512), 12, sampling, -1),
                new ScriptRow(0, BatchParityTest.prompt(13, 62, 512), 7, sampling, -1),
                new ScriptRow(3, BatchParityTest.prompt(27, 63, 512), 10, sampling, -1),
                new ScriptRow(5, BatchParityTest.prompt(5, 64, 512), 16, sampling, 9),
                new ScriptRow(8, BatchParityTest.prompt(33, 65, 512), 6, sampling, -1));
    }

    static SamplingParams sampling(String kind) {
        return kind.equals("greedy")
                ? SamplingParams.GREEDY
                : SamplingParams.builder().temperature(0.8).topK(40).seed(17L).build();
    }

    @ParameterizedTest(name = "{0}, {1} bits, group {2}, {3}")
    @CsvSource({
        "qwen3-bf16, 4, 32, greedy",
        "qwen3-bf16, 8, 32, greedy",
        "qwen3-bf16, 4, 32, seeded",
        "qwen3-bf16, 8, 32, seeded",
        "qwen3-q8, 4, 32, greedy"
    })
    void everyQuantizedRowOfTheBatchEqualsItsSerialRun(String family, int bits, int group, String kind)
            throws Exception {
        KvQuantization kv = new KvQuantization(bits, group, 0);
        Path dir = models.resolve(family);
        try (LanguageModel model = Models.load(dir)) {
            ModelExecutor executor = new ModelExecutor(model, PREFILL_STEP, 0, null);
            List<ScriptRow> script = script(sampling(kind));
            List<List<String>> got;
            try (ExecutionBatch batch = executor.openBatch(8, 8)) {
                assertNotNull(batch);
                got = batched(batch, script, kv);
            }
            for (int i = 0; i < script.size(); i++) {
                List<String> want = StepEntries.serial(executor, plan("s" + i, script.get(i), kv))
                        .entries();
                List<String> row = got.get(i);
                if (!row.isEmpty() && row.getLast().equals("removed")) {
                    row = row.subList(0, row.size() - 1);
                    want = want.subList(0, row.size());
                }
                assertEquals(want, row, "row " + i + " vs its serial run");
            }
        }
    }

    /**
     * The one departure, measured: a row that joins a prompt batch whose caches are already
     * quantized (a longer prompt is mid-prefill) attends its first chunk over quantized keys,
     * where its serial run attends that chunk in full precision (generate_step quantizes after
     * the first call). The row already prefilling stays bit-equal; the joining row's tokens are
     * counted against its serial run (greedy, 8 bits: 4 of 11 entries in the measured run, see
     * docs/architecture.md) and it still runs to the same length.
     */
    @ParameterizedTest(name = "{0} bits")
    @CsvSource({"4", "8"})
    void aRowJoiningAQuantizedPromptBatchIsMeasured(int bits) throws Exception {
        KvQuantization kv = new KvQuantization(bits, 32, 0);
        List<ScriptRow> script = List.of(
                new ScriptRow(0, BatchParityTest.prompt(27, 63, 512), 10, SamplingParams.GREEDY, -1),
                new ScriptRow(1, BatchParityTest.prompt(5, 64, 512), 10, SamplingParams.GREEDY, -1));
        try (LanguageModel model = Models.load(models.resolve("qwen3-bf16"))) {
            ModelExecutor executor = new ModelExecutor(model, PREFILL_STEP, 0, null);
            List<List<String>> got;
            try (ExecutionBatch batch = executor.openBatch(8, 8)) {
                got = batched(batch, script, kv);
            }
            assertEquals(
                    StepEntries.serial(executor, plan("s0", script.get(0), kv)).entries(),
                    got.get(0),
                    "the row already prefilling");
            List<String> want =
                    StepEntries.serial(executor, plan("s1", script.get(1), kv)).entries();
            assertEquals(want.size(), got.get(1).size(), "the joining row's length");
            int tokens = 0;
            int entries = 0;
            for (int k = 0; k < want.size(); k++) {
                tokens += want.get(k).split(":")[0].equals(got.get(1).get(k).split(":")[0]) ? 1 : 0;
                entries += want.get(k).equals(got.get(1).get(k)) ? 1 : 0;
            }
            System.out.println(
                    "kv-bits " + bits + ": a row joining a quantized prompt batch agrees with its serial run on "
                            + tokens + "/" + want.size() + " tokens, " + entries + " bit-equal entries");
        }
    }

    /**
     * Schemes do not mix in one batch: while full-precision rows run, a quantized plan is not
     * accepted (it waits at the head of the queue), and once they have left it is; while it runs,
     * neither a full-precision plan nor one of another width is accepted, and one of its own
     * scheme is. A model whose attention has no batch form over quantized caches (qwen3_5's gated
     * attention) never accepts one: the scheduler runs it alone, as before.
     */
    @org.junit.jupiter.api.Test
    void aBatchHoldsOneKvSchemeAtATime() throws Exception {
        KvQuantization eight = new KvQuantization(8, 32, 0);
        ScriptRow row = new ScriptRow(0, BatchParityTest.prompt(9, 71, 512), 3, SamplingParams.GREEDY, -1);
        try (LanguageModel model = Models.load(models.resolve("qwen3-bf16"))) {
            ModelExecutor executor = new ModelExecutor(model, PREFILL_STEP, 0, null);
            try (ExecutionBatch batch = executor.openBatch(8, 8)) {
                BatchStep step = new BatchStep(8, 2);
                batch.insert(plan("fp", row, null));
                assertFalse(batch.accepts(plan("q8", row, eight)), "a quantized plan while full-precision rows run");
                while (batch.rows() > 0) {
                    batch.step(step);
                }
                assertTrue(batch.accepts(plan("q8", row, eight)), "a quantized plan once the batch is empty");
                batch.insert(plan("q8", row, eight));
                assertFalse(batch.accepts(plan("fp", row, null)), "a full-precision plan while quantized rows run");
                assertFalse(batch.accepts(plan("q4", row, new KvQuantization(4, 32, 0))), "another width");
                assertTrue(batch.accepts(plan("q8b", row, eight)), "the same scheme");
                while (batch.rows() > 0) {
                    batch.step(step);
                }
            }
        }
        try (LanguageModel hybrid = Models.load(models.resolve("qwen3_5-bf16"))) {
            ModelExecutor executor = new ModelExecutor(hybrid, PREFILL_STEP, 0, null);
            try (ExecutionBatch batch = executor.openBatch(8, 8)) {
                assertFalse(batch.accepts(plan("q8", row, eight)), "qwen3_5 has no quantized batch form");
                assertTrue(batch.accepts(plan("fp", row, null)));
            }
        }
    }

    /** The negative control: the serial reference with the other width differs from the batch's rows. */
    @ParameterizedTest(name = "{0} bits vs serial {1} bits")
    @CsvSource({"4, 8", "8, 4"})
    void aBatchOfOneWidthDiffersFromSerialRunsOfTheOther(int bits, int otherBits) throws Exception {
        try (LanguageModel model = Models.load(models.resolve("qwen3-bf16"))) {
            ModelExecutor executor = new ModelExecutor(model, PREFILL_STEP, 0, null);
            List<ScriptRow> script = script(SamplingParams.GREEDY);
            List<List<String>> got;
            try (ExecutionBatch batch = executor.openBatch(8, 8)) {
                got = batched(batch, script, new KvQuantization(bits, 32, 0));
            }
            List<String> other = StepEntries.serial(
                            executor, plan("o", script.getFirst(), new KvQuantization(otherBits, 32, 0)))
                    .entries();
            assertNotEquals(other, got.getFirst(), "row 0 against the other width's serial run");
        }
    }
}
