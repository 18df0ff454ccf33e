package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.mlxring.exec.generate.ModelExecutor;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.FastKernels;
import dev.mlxring.mlx.Numerics;
import dev.mlxring.pipeline.BatchStep;
import dev.mlxring.pipeline.ExecutionBatch;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.Usage;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The fast tiers' continuous batch as rows join it: under {@code fast-q8} a position's logits are
 * the same bytes however its row was batched (FastNumericsOracleTest), so every row of a batch that
 * others join at different units (each joiner's prompt read in chunks, its first step, its merge
 * into the generating rows' caches, rows leaving as they finish), greedy and seeded, must give
 * exactly the entries (tokens, logprob bits, top logprobs) and usage it gives alone on the serial
 * path. A token lost, repeated or computed from the wrong input or cache rows, or a seeded row
 * sampled with another row's key, shows here.
 */
class FastBatchJoinTest {
    private static final int PREFILL_STEP = 16;
    private static Path models;

    @BeforeAll
    static void build() throws Exception {
        assumeTrue(FastKernels.selected().isPresent(), "this CPU has no AVX2/FMA: the fast tier cannot run");
        models = OracleFixtures.fastNumerics().resolve("models");
    }

    @Test
    void fastQ8RowsJoiningARunningBatchGiveTheirSoloEntries() throws Exception {
        SamplingParams seeded =
                SamplingParams.builder().temperature(0.8).topP(0.95).seed(11L).build();
        List<ExecutionPlan> plans = List.of(
                ContinuousBatchTest.plan("a", BatchParityTest.prompt(21, 61, 512), 24, SamplingParams.GREEDY),
                ContinuousBatchTest.plan("b", BatchParityTest.prompt(37, 62, 512), 18, SamplingParams.GREEDY),
                ContinuousBatchTest.plan("c", BatchParityTest.prompt(9, 63, 512), 20, seeded),
                ContinuousBatchTest.plan("d", BatchParityTest.prompt(50, 64, 512), 12, SamplingParams.GREEDY));
        // The unit before which each plan is inserted: b, c and d join while rows generate.
        int[] insertAt = {0, 3, 5, 9};
        try (LanguageModel model =
                Models.load(models.resolve("llama-f32-q4g32"), CpuKernels.NATIVE, Numerics.FAST_Q8, null)) {
            ModelExecutor executor = new ModelExecutor(model, PREFILL_STEP, 0, null);
            Map<Integer, List<String>> batched = new HashMap<>();
            Map<Integer, Usage> usages = new HashMap<>();
            Map<Integer, Integer> planOfRow = new HashMap<>();
            int joinedGenerating = 0;
            try (ExecutionBatch batch = executor.openBatch(8, 8)) {
                BatchStep step = new BatchStep(8, 3);
                int next = 0;
                for (int unit = 0; next < plans.size() || batch.rows() > 0; unit++) {
                    assertTrue(unit < 10_000, "the rows do not finish");
                    while (next < plans.size() && insertAt[next] <= unit) {
                        joinedGenerating += batch.generatingRows() > 0 ? 1 : 0;
                        planOfRow.put(batch.insert(plans.get(next)), next);
                        batched.put(next, new ArrayList<>());
                        next++;
                    }
                    batch.step(step);
                    StepEntries.collect(step, planOfRow, batched, usages);
                }
            }
            assertTrue(joinedGenerating >= 2, "rows joined a generating batch (" + joinedGenerating + ")");
            for (int p = 0; p < plans.size(); p++) {
                StepEntries.Serial alone = StepEntries.serial(executor, plans.get(p));
                assertEquals(
                        alone.entries(), batched.get(p), "row " + plans.get(p).requestId());
                assertEquals(
                        alone.usage(),
                        usages.get(p),
                        "usage of row " + plans.get(p).requestId());
            }
        }
    }
}
