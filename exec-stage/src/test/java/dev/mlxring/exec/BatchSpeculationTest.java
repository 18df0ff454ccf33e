package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.exec.batch.BatchGenerator;
import dev.mlxring.exec.batch.BatchRequest;
import dev.mlxring.exec.batch.BatchToken;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.exec.spec.ProposalLength;
import dev.mlxring.exec.spec.Speculation;
import dev.mlxring.exec.spec.SpeculativeRun;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.pipeline.SamplingParams;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Speculative decoding inside the continuous batch ({@link BatchGenerator} rows with a
 * {@link Speculation}): rows with and without speculation, with different {@code k}, greedy and
 * seeded, decode together with no drain. Per family (dense, 4-bit, sliding-window gemma3_text):
 * <ul>
 *   <li>a lone speculating row is the serial speculative path bit for bit (tokens and logprobs:
 *       its forward is the serial round's graph);</li>
 *   <li>in a mixed batch every speculating row's tokens equal its serial speculative run's, and
 *       every plain row's equal its plain batched run's (rows whose arithmetic depends on the batch
 *       are compared on tokens; the logprob bits that still match are counted and printed);</li>
 *   <li>a greedy batch with speculation on gives the tokens of the same batch with it off.</li>
 * </ul>
 */
class BatchSpeculationTest {
    private static final int PREFILL_STEP = 32;
    private static final int[] PHRASE = {11, 250, 37, 402, 99, 7, 310, 64, 128};
    private static Path models;

    @BeforeAll
    static void buildOracleModels() throws Exception {
        models = OracleFixtures.build().work().resolve("models");
    }

    /** One row of a script: its prompt, length, sampling and speculation (null: none). */
    private record Spec(int[] prompt, int maxTokens, SamplingParams params, Speculation speculation) {}

    private static int[] repeating(int length, int shift) {
        return periodic(length, PHRASE.length, shift);
    }

    /** {@code length} tokens repeating the first {@code period} of {@link #PHRASE}, from {@code shift}. */
    private static int[] periodic(int length, int period, int shift) {
        return IntStream.range(0, length).map(i -> PHRASE[(i + shift) % period]).toArray();
    }

    /** Proposed and accepted tokens over the rows of the last {@link #batched} script. */
    private static int[] lastCounts;

    private static final SamplingParams GREEDY = SamplingParams.builder().build();
    private static final SamplingParams SEEDED =
            SamplingParams.builder().temperature(0.15).topP(0.9).seed(5L).build();

    /** Per row: {@code token:logprob bits} for each token, in order. */
    private static List<List<String>> batched(LanguageModel model, List<Spec> script) {
        return batched(model, script, -1, 0);
    }

    /**
     * As above; with {@code cancelRow >= 0}, that row is removed between units once it has
     * {@code cancelAfter} tokens (its list then ends there).
     */
    private static List<List<String>> batched(LanguageModel model, List<Spec> script, int cancelRow, int cancelAfter) {
        Map<Integer, List<String>> out = new HashMap<>();
        Map<Integer, int[]> counts = new HashMap<>();
        int mostGenerating = 0;
        try (BatchGenerator g = new BatchGenerator(model, PREFILL_STEP, 8, 8, EngineRng.seeded(3))) {
            g.onSpeculated((uid, proposed, accepted) -> {
                int[] c = counts.computeIfAbsent(uid, u -> new int[2]);
                c[0] += proposed;
                c[1] += accepted;
            });
            List<Integer> uids = new ArrayList<>();
            for (Spec s : script) {
                int uid = g.insert(new BatchRequest(
                        s.prompt(), null, s.maxTokens(), s.params(), new int[0], null, s.speculation()));
                uids.add(uid);
                out.put(uid, new ArrayList<>());
            }
            for (int unit = 0; !g.idle(); unit++) {
                assertTrue(unit < 2000, "the batch does not end");
                for (BatchToken t : g.next()) {
                    out.get(t.uid()).add(t.token() + ":" + logprobBits(t.logprobs(), t.token()));
                }
                mostGenerating = Math.max(mostGenerating, g.generating());
                if (cancelRow >= 0 && out.get(uids.get(cancelRow)).size() >= cancelAfter) {
                    assertTrue(g.remove(uids.get(cancelRow)), "the row is still in flight");
                    cancelRow = -1;
                }
            }
            assertEquals(script.size(), mostGenerating, "every row decodes in one batch at some step");
            int proposed = 0;
            int accepted = 0;
            for (int r = 0; r < script.size(); r++) {
                int[] c = counts.getOrDefault(uids.get(r), new int[2]);
                if (script.get(r).speculation() == null) {
                    assertEquals(0, c[0], "a row without speculation proposes nothing");
                }
                proposed += c[0];
                accepted += c[1];
            }
            lastCounts = new int[] {proposed, accepted};
            return uids.stream().map(out::get).toList();
        }
    }

    private static int logprobBits(MlxArray logprobs, int token) {
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray one = Mlx.slice(logprobs, new int[] {token}, new int[] {token + 1}, new int[] {1});
            Mlx.eval(one);
            return Float.floatToRawIntBits(Mlx.contiguous(Mlx.astype(one, dev.mlxring.mlx.Dtype.FLOAT32))
                    .toFloatArray()[0]);
        }
    }

    /** The row alone through the serial speculative path (adaptive for greedy, as the executor runs it). */
    private static List<String> serial(LanguageModel model, Spec s) {
        List<String> out = new ArrayList<>();
        GenerationOptions options = new GenerationOptions(s.maxTokens(), PREFILL_STEP, new int[0], false);
        try (SpeculativeRun run = new SpeculativeRun(
                model, s.prompt(), options, s.params(), EngineRng.seeded(3), s.speculation(), true)) {
            while (!run.isFinished()) {
                if (run.advance() == SpeculativeRun.Event.TOKENS) {
                    int[] tokens = run.roundTokens();
                    for (int i = 0; i < tokens.length; i++) {
                        try (ArrayScope scope = ArrayScope.open()) {
                            out.add(tokens[i] + ":" + logprobBits(run.roundLogprobs(i), tokens[i]));
                        }
                    }
                }
            }
        }
        return out;
    }

    private static List<String> tokens(List<String> entries) {
        return entries.stream().map(e -> e.split(":")[0]).toList();
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama-bf16", "llama-q4", "gemma3-q4"})
    void aLoneSpeculatingRowIsTheSerialSpeculativePath(String family) throws Exception {
        try (LanguageModel model = Models.load(models.resolve(family))) {
            for (SamplingParams params : List.of(GREEDY, SEEDED)) {
                // gemma3-q4's window is 48 positions: the serial path speculates below it only.
                boolean windowed = family.startsWith("gemma3");
                Spec s = new Spec(
                        windowed ? repeating(14, 0) : repeating(12, 0),
                        windowed ? 30 : 24,
                        params,
                        new Speculation.PromptLookup(1, 3, 3));
                assertEquals(serial(model, s), batched(model, List.of(s)).getFirst(), family + " " + params);
                assertTrue(lastCounts[0] > 0, "the lone row proposes");
            }
        }
    }

    /**
     * A speculating row cancelled between its rounds (the draft-model row, whose own caches close
     * with it, and a prompt-lookup row) leaves the other rows' tokens and logprobs exactly as in
     * the run where nobody left.
     */
    @ParameterizedTest
    @ValueSource(ints = {0, 3})
    void aSpeculatingRowCancelledBetweenRoundsLeavesTheOthersAsTheyWere(int cancelled) throws Exception {
        try (LanguageModel model = Models.load(models.resolve("llama-bf16"))) {
            List<Spec> script = List.of(
                    new Spec(repeating(31, 0), 24, GREEDY, new Speculation.PromptLookup(1, 3, 3)),
                    new Spec(repeating(20, 4), 26, GREEDY, null),
                    new Spec(repeating(27, 2), 24, SEEDED, new Speculation.PromptLookup(1, 2, 2)),
                    new Spec(repeating(22, 3), 24, GREEDY, new Speculation.DraftModel(model, 2)));
            List<List<String>> whole = batched(model, script);
            List<List<String>> cut = batched(model, script, cancelled, 5);
            for (int r = 0; r < script.size(); r++) {
                if (r == cancelled) {
                    assertTrue(cut.get(r).size() < whole.get(r).size(), "the row was cancelled before its end");
                    assertEquals(whole.get(r).subList(0, cut.get(r).size()), cut.get(r));
                } else {
                    assertEquals(whole.get(r), cut.get(r), "row " + r + " after row " + cancelled + " left");
                }
            }
        }
    }

    /**
     * Every row of a round runs its K + 1 positions, so a greedy row's proposal is verified only
     * where it is worth the whole batch's extra positions ({@code RoundWidth}): one greedy
     * speculating row among three plain ones verifies no proposal (its tokens stay the plain
     * run's), while alone it does.
     */
    @org.junit.jupiter.api.Test
    void aGreedyProposalFewRowsShareIsNotVerified() throws Exception {
        try (LanguageModel model = Models.load(models.resolve("llama-bf16"))) {
            Spec speculating = new Spec(repeating(31, 0), 24, GREEDY, new Speculation.PromptLookup(1, 3, 3));
            batched(model, List.of(speculating));
            assertTrue(lastCounts[0] > 0, "alone, the row proposes");
            List<Spec> script = List.of(
                    speculating,
                    new Spec(repeating(20, 4), 26, GREEDY, null),
                    new Spec(repeating(18, 5), 24, GREEDY, null),
                    new Spec(repeating(22, 2), 24, GREEDY, null));
            List<List<String>> got = batched(model, script);
            assertEquals(0, lastCounts[0], "a proposal one row of four makes is not verified");
            assertEquals(tokens(serial(model, speculating)), tokens(got.getFirst()));
        }
    }

    /**
     * Two fresh greedy rows share their passes with their proposals: each gets its first rounds
     * verified (its acceptance weighed at 1 until it has one; at the prior of 1/2 two rows' extra
     * positions would not pay and neither would ever propose), and their tokens stay each row's
     * serial run's.
     */
    @org.junit.jupiter.api.Test
    void twoFreshRowsVerifyTheirProposalsTogether() throws Exception {
        try (LanguageModel model = Models.load(models.resolve("llama-bf16"))) {
            Spec a = new Spec(repeating(31, 0), 24, GREEDY, new Speculation.PromptLookup(1, 3, 3));
            Spec b = new Spec(repeating(29, 3), 24, GREEDY, new Speculation.PromptLookup(1, 3, 3));
            List<List<String>> got = batched(model, List.of(a, b));
            assertTrue(lastCounts[0] > 0, "two fresh rows verify proposals together");
            assertEquals(tokens(serial(model, a)), tokens(got.get(0)));
            assertEquals(tokens(serial(model, b)), tokens(got.get(1)));
        }
    }

    /**
     * A speculating row steps plainly while the batch is too full for its proposals to pay, and
     * its source is told every token it commits meanwhile: a self-drafting row among three plain
     * rows proposes nothing until they leave, then proposes alone, and since its draft is the
     * target itself and has seen every token, every proposal is accepted.
     */
    @org.junit.jupiter.api.Test
    void aRowSteppingPlainlyKeepsItsDraftInStep() throws Exception {
        try (LanguageModel model = Models.load(models.resolve("llama-bf16"))) {
            Spec drafting = new Spec(repeating(22, 3), 30, GREEDY, new Speculation.DraftModel(model, 2));
            List<List<String>> got = batched(
                    model,
                    List.of(
                            drafting,
                            new Spec(repeating(20, 4), 8, GREEDY, null),
                            new Spec(repeating(18, 5), 8, GREEDY, null),
                            new Spec(repeating(21, 2), 8, GREEDY, null)));
            assertTrue(lastCounts[0] > 0, "alone after the others left, the row proposes");
            assertEquals(lastCounts[0], lastCounts[1], "its draft saw every token it committed plainly");
            assertEquals(tokens(serial(model, drafting)), tokens(got.getFirst()));
        }
    }

    /**
     * A greedy row in the batch proposes what {@link ProposalLength} picks from the row's own
     * rounds (at most: the lookup may find fewer), as the serial run does, and while it keeps
     * copying it reaches {@code num_tokens} = 7 through 1 and 3 tokens.
     */
    @org.junit.jupiter.api.Test
    void aGreedyRowsProposalFollowsTheCostModelOfItsAcceptance() throws Exception {
        try (LanguageModel model = Models.load(models.resolve("llama-bf16"));
                BatchGenerator g = new BatchGenerator(model, PREFILL_STEP, 8, 8, EngineRng.seeded(3))) {
            ProposalLength mirror = new ProposalLength(7);
            java.util.TreeSet<Integer> lengths = new java.util.TreeSet<>();
            List<String> violations = new ArrayList<>();
            g.onSpeculated((uid, proposed, accepted) -> {
                int allowed = mirror.next();
                if (proposed > allowed) {
                    violations.add(proposed + " proposed where at most " + allowed + " may be");
                }
                if (proposed == allowed) {
                    lengths.add(proposed);
                }
                mirror.record(proposed, accepted);
            });
            g.insert(new BatchRequest(
                    repeating(31, 0), null, 64, GREEDY, new int[0], null, new Speculation.PromptLookup(1, 3, 7)));
            for (int unit = 0; !g.idle(); unit++) {
                assertTrue(unit < 2000, "the batch does not end");
                g.next();
            }
            assertEquals(List.of(), violations);
            assertEquals(7, lengths.last(), "a row that keeps being accepted grows to num_tokens: " + lengths);
            assertTrue(
                    lengths.stream().allMatch(k -> k == 1 || k == 3 || k == 7),
                    "only the pass-filling lengths are chosen: " + lengths);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama-bf16", "llama-q4", "gemma3-q4"})
    void mixedRowsDecodeTogetherEachAsItsOwnPathDecodesIt(String family) throws Exception {
        boolean windowed = family.startsWith("gemma3");
        // gemma3-q4's window is 48 positions, one per batch (the rows share its index): every row
        // stays below it by more than a round's positions, so no proposal is cut short by it.
        int len = windowed ? 20 : 24;
        try (LanguageModel model = Models.load(models.resolve(family))) {
            List<Spec> script = List.of(
                    new Spec(
                            windowed ? repeating(18, 0) : repeating(31, 0),
                            len,
                            GREEDY,
                            new Speculation.PromptLookup(1, 3, 3)),
                    new Spec(repeating(windowed ? 18 : 20, 4), len + 2, GREEDY, null),
                    new Spec(
                            windowed ? repeating(17, 2) : repeating(27, 2),
                            len,
                            SEEDED,
                            new Speculation.PromptLookup(1, 2, 2)),
                    new Spec(repeating(windowed ? 16 : 18, 5), len, SEEDED, null),
                    new Spec(
                            windowed ? repeating(15, 1) : repeating(25, 1),
                            len - 1,
                            GREEDY,
                            new Speculation.PromptLookup(2, 3, 1)),
                    // The model drafting for itself: its own caches per row, proposals read on the host.
                    new Spec(repeating(windowed ? 15 : 22, 3), len, GREEDY, new Speculation.DraftModel(model, 2)),
                    new Spec(repeating(windowed ? 16 : 23, 6), len - 2, SEEDED, new Speculation.DraftModel(model, 3)));
            List<List<String>> got = batched(model, script);
            int[] counts = lastCounts;
            // Both kinds of round ran: some proposed tokens were accepted, some rolled back.
            assertTrue(counts[1] > 0 && counts[1] < counts[0], counts[1] + " of " + counts[0] + " accepted");
            List<Spec> plainScript = script.stream()
                    .map(s -> new Spec(s.prompt(), s.maxTokens(), s.params(), null))
                    .toList();
            List<List<String>> plain = batched(model, plainScript);
            int rowsBitEqual = 0;
            int tokensCompared = 0;
            int logprobsEqual = 0;
            for (int r = 0; r < script.size(); r++) {
                Spec s = script.get(r);
                List<String> want = s.speculation() != null ? serial(model, s) : plain.get(r);
                assertEquals(tokens(want), tokens(got.get(r)), family + " row " + r);
                if (s.params().greedy()) {
                    assertEquals(
                            tokens(plain.get(r)), tokens(got.get(r)), "greedy row " + r + " as without speculation");
                }
                rowsBitEqual += want.equals(got.get(r)) ? 1 : 0;
                for (int i = 0; i < want.size(); i++) {
                    tokensCompared++;
                    logprobsEqual += want.get(i).equals(got.get(r).get(i)) ? 1 : 0;
                }
            }
            System.out.printf(
                    "%s mixed batch: %d of %d rows bit-equal to their own path; %d of %d token logprobs bit-equal;"
                            + " %d of %d proposed accepted%n",
                    family, rowsBitEqual, script.size(), logprobsEqual, tokensCompared, counts[1], counts[0]);
        }
    }

    /**
     * A round in which rows leave before the verify (a plain row whose pending token was its last)
     * and during it (the speculating row reaching its length): the round's leavers are indexed over
     * the rows the first leavers left, not over the round's starting rows (an index past the rows
     * failed the whole unit).
     */
    @Test
    void rowsLeavingBeforeAndDuringOneRoundLeaveAsTheirOwnPathsDo() throws Exception {
        try (LanguageModel model = Models.load(models.resolve("llama-bf16"))) {
            List<Spec> script = new ArrayList<>();
            script.add(new Spec(repeating(31, 0), 6, GREEDY, new Speculation.PromptLookup(1, 3, 3)));
            for (int m = 2; m <= 8; m++) {
                script.add(new Spec(repeating(18 + m, m % 7), m, GREEDY, null));
            }
            List<List<String>> got = batched(model, script);
            List<List<String>> plain = batched(
                    model,
                    script.stream()
                            .map(s -> new Spec(s.prompt(), s.maxTokens(), s.params(), null))
                            .toList());
            for (int r = 0; r < script.size(); r++) {
                assertEquals(tokens(plain.get(r)), tokens(got.get(r)), "row " + r);
            }
        }
    }
}
