package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.ModelExecutor;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.exec.spec.AdaptiveStop;
import dev.mlxring.exec.spec.ProposalLength;
import dev.mlxring.exec.spec.Speculation;
import dev.mlxring.exec.spec.SpeculativeGenerate;
import dev.mlxring.exec.spec.SpeculativeRun;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.ExecutionRun;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.StepResult;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A speculating {@link ModelExecutor} under the pipeline's step contract: each request it can take
 * yields, one token per unit, exactly what {@link SpeculativeGenerate} yields (tokens, logprobs,
 * finish reason; the parity with mlx-lm is {@code SpeculativeParityTest}'s); a request it cannot
 * take (logits processors) runs as a plain executor runs it; and it opens a batch (which speculates
 * too: {@code BatchSpeculationTest}).
 */
class SpeculativeExecutionTest {
    private static final int PREFILL_STEP = 32;
    private static final int[] PHRASE = {11, 250, 37, 402, 99, 7, 310, 64, 128};
    private static LanguageModel model;

    @BeforeAll
    static void load() throws Exception {
        model = Models.load(OracleFixtures.build().work().resolve("models").resolve("llama-bf16"));
    }

    @AfterAll
    static void free() {
        model.close();
    }

    private static ExecutionPlan plan(int[] prompt, int maxTokens, SamplingParams params, int[] stop) {
        return ExecutionPlan.builder()
                .requestId("r")
                .prompt(new PreparedPrompt(prompt, prompt.length))
                .sampling(params)
                .maxTokens(maxTokens)
                .stopTokenIds(stop)
                .logprobs(true)
                .topLogprobs(2)
                .build();
    }

    /** A run's entries: {@code token:logprob bits:top ids} per token, then its end. */
    private static List<String> serial(ModelExecutor executor, ExecutionPlan plan) throws Exception {
        List<String> out = new ArrayList<>();
        try (ExecutionRun run = executor.open(plan)) {
            for (int unit = 0; ; unit++) {
                assertTrue(unit < 1000, "the run does not end");
                StepResult r = run.advance();
                if (r.kind == StepResult.Kind.TOKEN) {
                    out.add(r.token + ":" + Float.floatToRawIntBits(r.logprob) + ":" + r.topIds[0] + "," + r.topIds[1]);
                } else if (r.kind != StepResult.Kind.PREFILLED) {
                    out.add("end:" + r.kind + ":" + r.finishReason + ":" + run.completionTokens());
                    return out;
                }
            }
        }
    }

    private static List<String> expected(
            int[] prompt, int maxTokens, SamplingParams params, int[] stop, Speculation speculation) {
        SpeculativeGenerate.Result r = SpeculativeGenerate.run(
                model,
                prompt,
                new GenerationOptions(maxTokens, PREFILL_STEP, stop, false),
                params,
                null,
                speculation,
                (token, logprobs) -> true);
        List<String> out = new ArrayList<>();
        for (int i = 0; i < r.tokens().length; i++) {
            var lp = r.tokenLogprobs().get(i);
            out.add(r.tokens()[i] + ":" + Float.floatToRawIntBits(lp.logprob()) + ":" + lp.topIds()[0] + ","
                    + lp.topIds()[1]);
        }
        out.add("end:FINISHED:" + r.finishReason() + ":" + r.tokens().length);
        return out;
    }

    @Test
    void eachRequestYieldsWhatTheSerialSpeculativeRunYields() throws Exception {
        int[] prompt =
                IntStream.range(0, 31).map(i -> PHRASE[i % PHRASE.length]).toArray();
        SamplingParams greedy =
                SamplingParams.builder().logprobs(true).topLogprobs(2).build();
        SamplingParams seeded =
                greedy.toBuilder().temperature(0.15).topP(0.9).seed(5L).build();
        for (Speculation speculation :
                List.of(new Speculation.PromptLookup(1, 3, 3), new Speculation.DraftModel(model, 2))) {
            ModelExecutor executor = new ModelExecutor(model, PREFILL_STEP, 0, null, EngineRng.seeded(1), speculation);
            for (SamplingParams params : List.of(greedy, seeded)) {
                List<String> want = expected(prompt, 24, params, new int[0], speculation);
                assertEquals(want, serial(executor, plan(prompt, 24, params, new int[0])), speculation + " " + params);
                // A stop id in the middle of a round ends the run there, the tokens before it delivered.
                int stop = Integer.parseInt(want.get(5).split(":")[0]);
                List<String> stopped = serial(executor, plan(prompt, 24, params, new int[] {stop}));
                assertEquals(expected(prompt, 24, params, new int[] {stop}, speculation), stopped);
                assertTrue(stopped.getLast().startsWith("end:FINISHED:stop:"), stopped.getLast());
            }
            try (var batch = executor.openBatch(8, 8)) {
                assertNotNull(batch, "a speculating executor batches its requests (the batch speculates too)");
            }
        }
    }

    @Test
    void aRequestWithLogitsProcessorsRunsWithoutSpeculation() throws Exception {
        int[] prompt =
                IntStream.range(0, 20).map(i -> PHRASE[i % PHRASE.length]).toArray();
        SamplingParams penalized = SamplingParams.builder()
                .logprobs(true)
                .topLogprobs(2)
                .repetitionPenalty(1.3)
                .build();
        ModelExecutor speculating = new ModelExecutor(
                model, PREFILL_STEP, 0, null, EngineRng.seeded(1), new Speculation.PromptLookup(1, 3, 3));
        ModelExecutor plain = new ModelExecutor(model, PREFILL_STEP, 0, null, EngineRng.seeded(1));
        List<String> got = serial(speculating, plan(prompt, 16, penalized, new int[0]));
        assertEquals(serial(plain, plan(prompt, 16, penalized, new int[0])), got);
        assertNotEquals(
                serial(
                        plain,
                        plan(
                                prompt,
                                16,
                                penalized.toBuilder().repetitionPenalty(0).build(),
                                new int[0])),
                got,
                "the penalty changes the output, so the comparison above can tell the paths apart");
    }

    /**
     * A greedy row whose proposals keep failing stops proposing ({@link AdaptiveStop}; prompt
     * lookup pauses, and may start again once its shadow rounds pass the bar), and its tokens and
     * logprobs stay those of the plain run, before, during and after the stop.
     */
    @Test
    void aGreedyRowThatStopsProposingKeepsThePlainRunsTokens() throws Exception {
        int[] prompt = IntStream.range(0, 40)
                .map(i -> PHRASE[(i * 7 + i / 3) % PHRASE.length])
                .toArray();
        int maxTokens = 160;
        SamplingParams greedy =
                SamplingParams.builder().logprobs(true).topLogprobs(2).build();
        Speculation lookup = new Speculation.PromptLookup(1, 3, 3);
        GenerationOptions options = new GenerationOptions(maxTokens, PREFILL_STEP, new int[0], false);
        int[] counts = new int[4];
        for (boolean adaptive : new boolean[] {false, true}) {
            try (SpeculativeRun run = new SpeculativeRun(model, prompt, options, greedy, null, lookup, adaptive)) {
                while (run.advance() != SpeculativeRun.Event.FINISHED && !run.isFinished()) {
                    // runs to the end
                }
                counts[adaptive ? 2 : 0] = run.proposedTokens();
                counts[adaptive ? 3 : 1] = run.acceptedTokens();
                assertEquals(
                        adaptive,
                        run.proposalStops() > 0,
                        "adaptive " + adaptive + ": " + run.acceptedTokens() + " of " + run.proposedTokens()
                                + " accepted");
            }
        }
        assertTrue(counts[2] < counts[0], "the stop proposes fewer tokens: " + java.util.Arrays.toString(counts));
        ModelExecutor speculating = new ModelExecutor(model, PREFILL_STEP, 0, null, EngineRng.seeded(1), lookup);
        ModelExecutor plain = new ModelExecutor(model, PREFILL_STEP, 0, null, EngineRng.seeded(1));
        assertEquals(
                serial(plain, plan(prompt, maxTokens, greedy, new int[0])),
                serial(speculating, plan(prompt, maxTokens, greedy, new int[0])));
    }

    /**
     * A greedy row proposes what {@link ProposalLength} picks from the row's own rounds (at most;
     * the lookup may find fewer), and a row that keeps copying reaches {@code num_draft_tokens} = 7
     * through 1 and 3 tokens, never the lengths that cost as much as a longer one.
     */
    @Test
    void aGreedyRowsProposalFollowsTheCostModelOfItsAcceptance() {
        int[] prompt =
                IntStream.range(0, 31).map(i -> PHRASE[i % PHRASE.length]).toArray();
        SamplingParams greedy = SamplingParams.builder().build();
        GenerationOptions options = new GenerationOptions(64, PREFILL_STEP, new int[0], false);
        try (SpeculativeRun run =
                new SpeculativeRun(model, prompt, options, greedy, null, new Speculation.PromptLookup(1, 3, 7), true)) {
            ProposalLength mirror = new ProposalLength(7);
            java.util.TreeSet<Integer> lengths = new java.util.TreeSet<>();
            int proposedBefore = 0;
            int acceptedBefore = 0;
            while (!run.isFinished()) {
                int allowed = mirror.next();
                if (run.advance() == SpeculativeRun.Event.PREFILLED) {
                    continue;
                }
                int m = run.proposedTokens() - proposedBefore;
                int a = run.acceptedTokens() - acceptedBefore;
                proposedBefore = run.proposedTokens();
                acceptedBefore = run.acceptedTokens();
                assertTrue(m <= allowed, m + " proposed where at most " + allowed + " may be");
                mirror.record(m, a);
                if (m == allowed) {
                    lengths.add(m);
                }
            }
            assertEquals(7, lengths.last(), "a row that keeps being accepted grows to num_draft_tokens: " + lengths);
            assertTrue(
                    lengths.stream().allMatch(k -> k == 1 || k == 3 || k == 7),
                    "only the pass-filling lengths are chosen: " + lengths);
        }
    }
}
