package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.exec.generate.ModelExecutor;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.kvstore.ModelFingerprint;
import dev.mlxring.kvstore.RamPrefixCache;
import dev.mlxring.pipeline.BatchStep;
import dev.mlxring.pipeline.ExecutionBatch;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.ExecutionRun;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.StepResult;
import dev.mlxring.pipeline.TokenConstraint;
import dev.mlxring.pipeline.testing.CountingConstraint;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A plan's token constraint through the pipeline's exec contract over the real mechanics
 * ({@link ModelExecutor} runs and its {@code ContinuousBatch}): tokens follow the constraint,
 * a constraint that runs dry or refuses a token fails its run or row alone with a reason that
 * names it, a complete constraint ends its row on the stop token, free rows next to constrained
 * ones keep exactly the entries they have in a batch without constraints, and every constraint
 * is closed exactly once — also when the plan is refused before it runs. (Bit-exactness with
 * mlx-lm: ConstraintParityTest and BatchParityTest's masked cells.)
 */
class ConstrainedExecutionTest {
    private static final int PREFILL_STEP = 16;
    private static Path dir;
    private static LanguageModel model;
    private static ModelExecutor executor;

    @BeforeAll
    static void load() throws Exception {
        dir = OracleFixtures.build().work().resolve("models/llama-bf16");
        model = Models.load(dir);
        executor = new ModelExecutor(model, PREFILL_STEP);
    }

    @AfterAll
    static void close() {
        if (model != null) {
            model.close();
        }
    }

    private static ExecutionPlan plan(
            int[] prompt, int maxTokens, SamplingParams params, int[] stop, TokenConstraint constraint) {
        return ExecutionPlan.builder()
                .requestId("r")
                .prompt(new PreparedPrompt(prompt, prompt.length))
                .sampling(params)
                .maxTokens(maxTokens)
                .stopTokenIds(stop)
                .logprobs(true)
                .constraint(constraint)
                .build();
    }

    /** A run's entries: {@code token:logprob bits} per token, then its end. */
    private static List<String> serial(ExecutionPlan plan) throws Exception {
        return serial(executor, plan);
    }

    private static List<String> serial(ModelExecutor executor, ExecutionPlan plan) throws Exception {
        List<String> out = new ArrayList<>();
        try (ExecutionRun run = executor.open(plan)) {
            for (int unit = 0; ; unit++) {
                assertTrue(unit < 1000, "the run does not end");
                StepResult r = run.advance();
                if (r.kind == StepResult.Kind.TOKEN) {
                    out.add(r.token + ":" + Float.floatToRawIntBits(r.logprob));
                } else if (r.kind != StepResult.Kind.PREFILLED) {
                    out.add(end(r));
                    return out;
                }
            }
        }
    }

    private static String end(StepResult r) {
        return r.kind == StepResult.Kind.FAILED
                ? "failed:" + r.errorType + ":" + r.errorMessage
                : "end:" + r.finishReason;
    }

    /** Inserts {@code plans} at once and steps until every row ended; returns each plan's entries. */
    private static List<List<String>> batched(List<ExecutionPlan> plans) throws Exception {
        List<List<String>> out = new ArrayList<>();
        try (ExecutionBatch batch = executor.openBatch(8, 8)) {
            Map<Integer, Integer> planOfRow = new HashMap<>();
            for (int i = 0; i < plans.size(); i++) {
                planOfRow.put(batch.insert(plans.get(i)), i);
                out.add(new ArrayList<>());
            }
            BatchStep step = new BatchStep(8, 0);
            for (int unit = 0; batch.rows() > 0; unit++) {
                assertTrue(unit < 1000, "the rows do not finish");
                batch.step(step);
                for (int e = 0; e < step.count; e++) {
                    StepResult r = step.results[e];
                    List<String> entries = out.get(planOfRow.get(step.rows[e]));
                    entries.add(
                            r.kind == StepResult.Kind.TOKEN
                                    ? r.token + ":" + Float.floatToRawIntBits(r.logprob)
                                    : end(r) + ":" + step.usages[e].completionTokens());
                }
            }
        }
        return out;
    }

    private static void assertFollows(ScriptedConstraint rule, List<String> entries, String what) {
        for (int s = 0;
                s < entries.size()
                        && !entries.get(s).contains("end")
                        && !entries.get(s).startsWith("failed");
                s++) {
            int token = Integer.parseInt(entries.get(s).split(":")[0]);
            assertTrue(rule.allowed(token, s), what + ": token " + s + " (" + token + ") breaks the rule");
        }
    }

    @Test
    void aDryConstraintFailsItsRunAfterTheTokensItAllowed() throws Exception {
        ScriptedConstraint c = new ScriptedConstraint(3, 0, new int[0], 3);
        List<String> got = serial(plan(BatchParityTest.prompt(9, 1, 512), 20, SamplingParams.GREEDY, new int[0], c));
        assertEquals(4, got.size(), got.toString());
        assertEquals(
                "failed:INVALID_REQUEST:scripted constraint can no longer be satisfied: no token is allowed after 3"
                        + " generated tokens (scripted to run dry at step 3)",
                got.get(3));
        assertFollows(c, got, "dry run");
        assertEquals(3, c.consumed());
        assertEquals(1, c.closes);
    }

    /** A failed run publishes nothing to the prefix cache (as a failed batch row); a finished one does. */
    @Test
    void aFailedRunPublishesNoPrefix() throws Exception {
        try (RamPrefixCache cache = new RamPrefixCache(10, Long.MAX_VALUE)) {
            ModelExecutor caching =
                    new ModelExecutor(model, PREFILL_STEP, 0, new PrefixReuse(cache, ModelFingerprint.of(dir)));
            int[] prompt = BatchParityTest.prompt(12, 9, 512);
            List<String> failed = serial(
                    caching,
                    plan(prompt, 8, SamplingParams.GREEDY, new int[0], new ScriptedConstraint(3, 0, new int[0], 2)));
            assertTrue(failed.getLast().startsWith("failed:"), failed.toString());
            assertEquals(0, cache.size(), "a failed run's caches");
            serial(
                    caching,
                    plan(prompt, 8, SamplingParams.GREEDY, new int[0], new ScriptedConstraint(3, 0, new int[0], -1)));
            assertEquals(1, cache.size(), "a finished constrained run's caches");
        }
    }

    @Test
    void aConstraintThatRefusesTheSampledTokenFailsTheRunAsInternal() throws Exception {
        CountingConstraint refusing = new CountingConstraint(
                words -> {
                    java.util.Arrays.fill(words, -1);
                    return true;
                },
                token -> {
                    throw new IllegalStateException("token " + token + " is not allowed");
                });
        List<String> got =
                serial(plan(BatchParityTest.prompt(5, 2, 512), 8, SamplingParams.GREEDY, new int[0], refusing));
        assertEquals(1, got.size(), got.toString());
        assertTrue(got.get(0).startsWith("failed:INTERNAL:token constraint refused sampled token "), got.get(0));
        assertEquals(1, refusing.closes());
    }

    @Test
    void aCompleteConstraintEndsItsRunOnTheStopToken() throws Exception {
        ScriptedConstraint c = new ScriptedConstraint(4, 0, new int[] {7}, -1, 2);
        List<String> got =
                serial(plan(BatchParityTest.prompt(11, 3, 512), 20, SamplingParams.GREEDY, new int[] {7}, c));
        assertEquals(List.of("end:stop"), got.subList(2, got.size()), got.toString());
        assertFollows(c, got, "complete run");
        assertEquals(1, c.closes);
    }

    @Test
    void aPlanRefusedBeforeItRunsStillClosesItsConstraint() throws Exception {
        int[] outside = {1, 2, 100_000};
        ScriptedConstraint serialOne = new ScriptedConstraint(3, 0, new int[0], -1);
        RequestException e = assertThrows(
                RequestException.class,
                () -> executor.open(plan(outside, 4, SamplingParams.GREEDY, new int[0], serialOne)));
        assertEquals(ErrorType.INVALID_REQUEST, e.type());
        assertEquals(1, serialOne.closes, "serial open");
        ScriptedConstraint batchOne = new ScriptedConstraint(3, 0, new int[0], -1);
        try (ExecutionBatch batch = executor.openBatch(8, 8)) {
            assertThrows(
                    RequestException.class,
                    () -> batch.insert(plan(outside, 4, SamplingParams.GREEDY, new int[0], batchOne)));
        }
        assertEquals(1, batchOne.closes, "batch insert");
    }

    /**
     * Constrained rows (one runs dry, one completes on its stop token, one seeded) next to a free
     * row: the free row's entries are exactly those it has when no row is constrained, each
     * constrained row follows its rule and ends as its constraint says, alone (the stop token is not
     * reported nor counted, as without a constraint).
     */
    @Test
    void constrainedAndFreeRowsShareABatchAndADryRowFailsAlone() throws Exception {
        SamplingParams seeded = SamplingParams.builder()
                .temperature(0.9)
                .topK(30)
                .seed(5L)
                .logprobs(true)
                .build();
        int[][] prompts = {
            BatchParityTest.prompt(13, 4, 512),
            BatchParityTest.prompt(6, 5, 512),
            BatchParityTest.prompt(20, 6, 512),
            BatchParityTest.prompt(9, 7, 512)
        };
        ScriptedConstraint dry = new ScriptedConstraint(3, 1, new int[0], 4);
        ScriptedConstraint complete = new ScriptedConstraint(5, 0, new int[] {9}, -1, 3);
        ScriptedConstraint free = new ScriptedConstraint(4, 2, new int[0], -1);
        List<List<String>> masked = batched(List.of(
                plan(prompts[0], 12, SamplingParams.GREEDY, new int[0], null),
                plan(prompts[1], 12, SamplingParams.GREEDY, new int[0], dry),
                plan(prompts[2], 12, SamplingParams.GREEDY, new int[] {9}, complete),
                plan(prompts[3], 12, seeded, new int[0], free)));
        List<List<String>> plain = batched(List.of(
                plan(prompts[0], 12, SamplingParams.GREEDY, new int[0], null),
                plan(prompts[1], 12, SamplingParams.GREEDY, new int[0], null),
                plan(prompts[2], 12, SamplingParams.GREEDY, new int[] {9}, null),
                plan(prompts[3], 12, seeded, new int[0], null)));
        assertEquals(plain.get(0), masked.get(0), "the free row");
        List<String> dryRow = masked.get(1);
        assertEquals(5, dryRow.size(), dryRow.toString());
        assertTrue(
                dryRow.get(4).startsWith("failed:INVALID_REQUEST:scripted constraint can no longer be satisfied"),
                dryRow.get(4));
        assertTrue(dryRow.get(4).endsWith(":4"), "usage counts the 4 tokens: " + dryRow.get(4));
        assertFollows(dry, dryRow, "dry row");
        assertEquals(
                List.of("end:stop:3"),
                masked.get(2).subList(3, masked.get(2).size()),
                masked.get(2).toString());
        assertFollows(complete, masked.get(2), "complete row");
        assertEquals(13, masked.get(3).size(), masked.get(3).toString());
        assertFollows(free, masked.get(3), "seeded row");
        for (ScriptedConstraint c : List.of(dry, complete, free)) {
            assertEquals(1, c.closes, "each constraint is closed once");
        }
    }

    /** A lone constrained row runs the serial graph: its entries equal the serial executor's. */
    @Test
    void aLoneConstrainedRowEqualsTheSerialRun() throws Exception {
        SamplingParams seeded = SamplingParams.builder()
                .temperature(0.8)
                .topP(0.9)
                .seed(3L)
                .logprobs(true)
                .build();
        int[] prompt = BatchParityTest.prompt(25, 8, 512);
        List<String> serial = serial(plan(prompt, 10, seeded, new int[0], new ScriptedConstraint(3, 2, new int[0], 7)));
        List<String> batch = batched(
                        List.of(plan(prompt, 10, seeded, new int[0], new ScriptedConstraint(3, 2, new int[0], 7))))
                .get(0);
        assertEquals(serial.subList(0, 7), batch.subList(0, 7), "tokens and logprobs");
        assertEquals(serial.get(7) + ":7", batch.get(7), "the failure");
    }
}
