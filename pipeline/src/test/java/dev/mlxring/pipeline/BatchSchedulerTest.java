package dev.mlxring.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.testing.RecordingListener;
import dev.mlxring.pipeline.testing.ScriptedBatch;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import dev.mlxring.pipeline.testing.WordStages;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The continuous-batching policy ({@link BatchScheduler}) through the whole engine, over the
 * {@link ScriptedBatch} double: admission order and cap, rows leaving alone (cancel, stop
 * string, refusal, a stalled reader), a failed unit, a session the batch cannot run, shutdown.
 * Every session ends in exactly one outcome. Waits are on conditions, never on a sleep.
 */
class BatchSchedulerTest {
    private ScriptedExecutor exec;
    private Engine engine;

    private Engine start(EngineConfig config) {
        exec = ScriptedExecutor.counting();
        exec.batching = true;
        // "kv ..." prompts carry a quantized KV scheme: the batch does not accept them.
        Planner planner = (r, p) -> {
            ExecutionPlan plain = WordStages.plan(r, p);
            boolean kv = ((Prompt.Text) r.prompt()).text().startsWith("kv");
            return plain.toBuilder().kvScheme(kv ? KvQuantization.of(8) : null).build();
        };
        engine = Engine.builder()
                .config(config)
                .preparer(WordStages::prepare)
                .planner(planner)
                .executor(exec)
                .sinks(WordStages::textSink)
                .start();
        return engine;
    }

    private static EngineConfig batched(int rows) {
        return EngineConfig.defaults().withConcurrency(rows, rows);
    }

    @AfterEach
    void close() {
        if (engine != null) {
            engine.close();
        }
    }

    private static GenerationRequest text(String id, String prompt, int maxTokens, String... stops) {
        return GenerationRequest.builder()
                .id(id)
                .model("m")
                .prompt(new Prompt.Text(prompt))
                .maxTokens(maxTokens)
                .stop(List.of(stops))
                .build();
    }

    private static Outcome await(Session s, RecordingListener r) throws Exception {
        return r.await(s);
    }

    private static void waitFor(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "timed out waiting for " + what);
            Thread.sleep(1);
        }
    }

    private static String tokens(int n) {
        StringBuilder b = new StringBuilder();
        for (int i = 1; i <= n; i++) {
            b.append(i).append(' ');
        }
        return b.toString();
    }

    /** Holds the batch's first unit until {@code sessions} are all queued for exec. */
    private void holdFirstUnitUntilQueued(List<Session> sessions, CountDownLatch gate) throws InterruptedException {
        waitFor(
                () -> sessions.stream().allMatch(s -> s.state().ordinal() >= Lifecycle.QUEUED.ordinal()),
                "every session planned");
        gate.countDown();
    }

    /**
     * A unit's tokens reach the session before the batch submits the forward it held back
     * ({@link ExecutionBatch#submitHeldStep}), so a first token does not wait for the next step's
     * compute: each submit waits until the listener has every token produced so far, which it
     * never gets while the exec thread waits if the tokens are published after the submit.
     */
    @Test
    void aUnitsTokensLeaveBeforeTheBatchSubmitsItsHeldStep() throws Exception {
        start(batched(2));
        var r = new RecordingListener();
        exec.visibleTokens = () -> (int) r.text.chars().filter(c -> c == ' ').count();
        Session s = engine.submit(text("a", "a", 4), r);
        assertEquals(Lifecycle.COMPLETED, await(s, r).state());
        assertEquals(tokens(4), r.text.toString());
        assertTrue(exec.batch.heldSubmits.get() >= 4, "one submit per unit: " + exec.batch.heldSubmits.get());
        assertEquals(0, exec.batch.submitsBeforeTokens.get(), "a held step submitted before its unit's tokens left");
    }

    /**
     * A row generating while another reads a long prompt: at the default share every unit that
     * read a chunk is followed by decode-only units before the next chunk (the running row keeps
     * going), and the long prompt still gets through; at share 1 no unit is decode-only.
     */
    @ParameterizedTest(name = "share {0}")
    @ValueSource(doubles = {0.5, 1.0})
    void decodeOnlyUnitsRunBetweenTheChunksOfALongPrompt(double share) throws Exception {
        start(batched(4).withPrefillInterleave(share, false));
        exec.prefillChunks = 0;
        var running = new RecordingListener();
        // Row a generates throughout: its budget outlasts the six chunks at any unit speed.
        Session a = engine.submit(text("a", "a", 100_000_000), running);
        waitFor(() -> running.spans.get() >= 2, "the first row generating");
        exec.batch.decodeOnlyUnits = true;
        exec.batch.prefillUnitMillis = 20;
        exec.prefillChunks = 6;
        var longPrompt = new RecordingListener();
        Session b = engine.submit(text("b", "a b", 3), longPrompt);
        Outcome o = await(b, longPrompt);
        assertEquals(Lifecycle.COMPLETED, o.state());
        assertEquals(tokens(3), longPrompt.text.toString());
        a.cancel("done");
        await(a, running);
        String kinds = exec.batch.unitKinds.toString();
        int first = kinds.indexOf('P');
        int last = kinds.lastIndexOf('P');
        assertTrue(first >= 0 && kinds.chars().filter(c -> c == 'P').count() == 6, "six chunks read: " + kinds);
        String between = kinds.substring(first, last + 1);
        if (share < 1) {
            assertFalse(between.contains("PP"), "a chunk right after a chunk while a row generates: " + kinds);
            assertTrue(between.contains("PD"), kinds);
        } else {
            assertFalse(kinds.contains("D"), "share 1 runs mlx-lm's units only: " + kinds);
        }
    }

    /**
     * A prompt that arrives while rows decode, long after the last prompt was read, is read in the
     * first unit after it joins: the full units that ran since (nothing to read) already repaid
     * that read to the generating rows, so no decode-only unit is owed for it.
     */
    @Test
    void aPromptArrivingLongAfterTheLastReadIsReadInTheNextUnit() throws Exception {
        start(batched(4).withPrefillInterleave(0.5, false));
        exec.prefillChunks = 0;
        var running = new RecordingListener();
        Session a = engine.submit(text("a", "a", 100_000_000), running);
        waitFor(() -> running.spans.get() >= 2, "the first row generating");
        exec.batch.decodeOnlyUnits = true;
        exec.batch.unitMillis = 2;
        exec.batch.prefillUnitMillis = 20;
        exec.prefillChunks = 1;
        var earlier = new RecordingListener();
        Session b = engine.submit(text("b", "a b", 100_000_000), earlier);
        // b's one-chunk read (~22 ms) earned the generating rows as much decode time; the 60 full
        // units b then generates in (>= 2 ms each, nothing to read) give them far more.
        waitFor(() -> earlier.spans.get() >= 60, "the earlier joiner generating for 60 units");
        var later = new RecordingListener();
        Session c = engine.submit(text("c", "a b", 3), later);
        assertEquals(Lifecycle.COMPLETED, await(c, later).state());
        a.cancel("done");
        b.cancel("done");
        await(a, running);
        await(b, earlier);
        String kinds = exec.batch.unitKinds.toString();
        String sinceJoined = kinds.substring(exec.batch.insertedAtUnit.get("c"));
        assertEquals('P', sinceJoined.charAt(0), "units from the later prompt's insert on: " + sinceJoined);
    }

    /**
     * A chunk that adds little to the generating rows' step owes them only what it added: between
     * two chunks of a prompt read while a row generates (its step 200 ms, the chunk 5 ms more, share
     * 0.1 so nine times the chunk's time is owed) run about 45 ms of decode-only units, one unit,
     * not nine times the whole 205 ms unit (ten units), which held every later prompt back by as
     * many steps of the running rows. That decode-only units run at all is
     * {@link #decodeOnlyUnitsRunBetweenTheChunksOfALongPrompt}'s.
     */
    @Test
    void aChunkOwesTheGeneratingRowsOnlyTheTimeItAddedToTheirStep() throws Exception {
        start(batched(4).withPrefillInterleave(0.1, false));
        var running = new RecordingListener();
        Session a = generatingRow(running, 200, 5);
        exec.prefillChunks = 2;
        var joiner = new RecordingListener();
        Session b = engine.submit(text("b", "a b", 1), joiner);
        assertEquals(Lifecycle.COMPLETED, await(b, joiner).state());
        a.cancel("done");
        await(a, running);
        String sinceJoined = unitsSinceInserted("b");
        // A chunk preempted for J ms owes 9 J more: room for a 100 ms preemption (four more units).
        assertTrue(
                decodeOnlyBetweenTheFirstTwoChunks(sinceJoined) <= 5,
                "decode-only units between the chunks (45 ms owed): " + sinceJoined);
    }

    /**
     * Starts row "a" generating with decode-only units offered, its step taking {@code stepMillis}
     * and a chunk {@code chunkMillis} more, and waits past the units that ran before (the
     * scheduler takes the median of the last five).
     */
    private Session generatingRow(RecordingListener running, int stepMillis, int chunkMillis)
            throws InterruptedException {
        exec.prefillChunks = 0;
        Session a = engine.submit(text("a", "a", 100_000_000), running);
        waitFor(() -> running.spans.get() >= 2, "the first row generating");
        exec.batch.decodeOnlyUnits = true;
        exec.batch.unitMillis = stepMillis;
        exec.batch.prefillUnitMillis = chunkMillis;
        int before = exec.batch.units.get();
        waitFor(
                () -> exec.batch.units.get() >= before + 6,
                "the first row generating at its " + stepMillis + " ms step");
        return a;
    }

    /** The batch's unit kinds from the unit row {@code id} was inserted before. */
    private String unitsSinceInserted(String id) {
        return exec.batch.unitKinds.toString().substring(exec.batch.insertedAtUnit.get(id));
    }

    /** Decode-only units between the first two chunks read in {@code kinds}. */
    private static long decodeOnlyBetweenTheFirstTwoChunks(String kinds) {
        int first = kinds.indexOf('P');
        int second = kinds.indexOf('P', first + 1);
        assertTrue(first >= 0 && second > first, "two chunks read: " + kinds);
        return kinds.substring(first, second).chars().filter(c -> c == 'D').count();
    }

    /**
     * A burst of six prompts that finds one row generating: the running row is owed decode time
     * for the burst's first chunk, but each of the six waiting rows weighs as much as it, so the
     * repayment is a sixth of the share's: about 200 / 6 ms of the running row's 5 ms steps (seven
     * units) before the second chunk, not 200 ms of them (forty units), which every row of the
     * burst waited out for one row's sake.
     */
    @Test
    void aBurstThatFindsOneRowGeneratingWaitsOnlyItsShareOfTheRepayment() throws Exception {
        start(batched(8).withPrefillInterleave(0.5, false));
        var running = new RecordingListener();
        Session a = generatingRow(running, 5, 200);
        exec.prefillChunks = 2;
        var gate = new CountDownLatch(1);
        exec.batch.unitGate = gate;
        List<Session> burst = new ArrayList<>();
        List<RecordingListener> listeners = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            var l = new RecordingListener();
            listeners.add(l);
            burst.add(engine.submit(text("c" + i, "a b", 1), l));
        }
        holdFirstUnitUntilQueued(burst, gate);
        exec.batch.unitGate = null;
        for (int i = 0; i < burst.size(); i++) {
            assertEquals(
                    Lifecycle.COMPLETED, await(burst.get(i), listeners.get(i)).state());
        }
        a.cancel("done");
        await(a, running);
        String sinceJoined = unitsSinceInserted("c0");
        long decodeOnly = decodeOnlyBetweenTheFirstTwoChunks(sinceJoined);
        // Seven units owed; a chunk preempted for J ms owes J / 30 more: room for 200 ms.
        assertTrue(decodeOnly >= 1 && decodeOnly <= 14, "decode-only units between the chunks: " + sinceJoined);
    }

    @Test
    void aRowsCachedPromptCountIsKnownBeforeItsFirstToken() throws Exception {
        start(batched(2));
        exec.cachedTokens = 1;
        var r = new RecordingListener();
        Session s = engine.submit(text("r0", "a b", 3), r);
        await(s, r);
        assertEquals(1, r.cachedAtFirstSpan.get());
    }

    @Test
    void rowsJoinInArrivalOrderUpToTheCap() throws Exception {
        start(batched(3));
        CountDownLatch gate = new CountDownLatch(1);
        List<Session> sessions = new ArrayList<>();
        List<RecordingListener> recs = new ArrayList<>();
        exec.prefillChunks = 1;
        Session first = engine.submit(text("r0", "a", 6), recs.add(new RecordingListener()) ? recs.get(0) : null);
        sessions.add(first);
        waitFor(() -> exec.batch != null, "the batch");
        exec.batch.unitGate = gate;
        for (int i = 1; i < 7; i++) {
            var r = new RecordingListener();
            recs.add(r);
            sessions.add(engine.submit(text("r" + i, "a b", 6), r));
        }
        holdFirstUnitUntilQueued(sessions, gate);
        for (int i = 0; i < 7; i++) {
            Outcome o = await(sessions.get(i), recs.get(i));
            assertEquals(Lifecycle.COMPLETED, o.state());
            assertEquals(tokens(6), recs.get(i).text.toString());
            assertEquals(6, o.usage().completionTokens());
        }
        assertEquals(3, exec.batch.mostRows.get(), "rows ran together, never more than the cap");
        List<String> inserts =
                exec.events.stream().filter(e -> e.startsWith("insert:")).toList();
        assertEquals(
                List.of("insert:r0", "insert:r1", "insert:r2", "insert:r3", "insert:r4", "insert:r5", "insert:r6"),
                inserts,
                "first come, first served");
        assertTrue(exec.batch.units.get() < 7 * 7, "the rows shared units: " + exec.batch.units.get());
        assertEquals(0, exec.openRuns.get(), "nothing ran alone");
        assertEquals(0, engine.admittedCount());
    }

    /** A row that fails alone (its token constraint ran dry) fails its session; the others go on in the batch. */
    @Test
    void aRowThatFailsAloneFailsOnlyItsSession() throws Exception {
        start(batched(3));
        exec.failingMaxTokens = 17;
        var bad = new RecordingListener();
        var good = new RecordingListener();
        Session g = engine.submit(text("g", "a b", 6), good);
        Session b = engine.submit(text("b", "a b c", 17), bad);
        Outcome o = await(b, bad);
        assertEquals(Lifecycle.FAILED, o.state());
        assertEquals(Outcome.ErrorType.INVALID_REQUEST, o.errorType());
        assertEquals(ScriptedExecutor.DRY, o.message());
        assertEquals(tokens(2), bad.text.toString(), "the tokens before the failure were delivered");
        assertEquals(new Usage(3, 2, 0), o.usage());
        Outcome go = await(g, good);
        assertEquals(Lifecycle.COMPLETED, go.state());
        assertEquals(tokens(6), good.text.toString());
        assertTrue(exec.events.contains("fail:b"), "the batch ended the row: " + exec.events);
        assertFalse(exec.events.contains("remove:b"), "a failed row has left the batch: " + exec.events);
        assertEquals(0, exec.openRuns.get(), "nothing ran alone");
        assertEquals(0, engine.admittedCount());
    }

    @Test
    void aCancelledRowLeavesAloneAndTheOthersGoOn() throws Exception {
        start(batched(4));
        exec.stepSleepMs = 0;
        List<Session> sessions = new ArrayList<>();
        List<RecordingListener> recs = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            var r = new RecordingListener();
            recs.add(r);
            sessions.add(engine.submit(text("c" + i, "a", 1_000_000), r));
        }
        waitFor(() -> recs.stream().allMatch(r -> r.spans.get() >= 3), "every row streaming");
        sessions.get(1).cancel("client went away");
        Outcome cancelled = await(sessions.get(1), recs.get(1));
        assertEquals(Lifecycle.CANCELLED, cancelled.state());
        assertEquals("client went away", cancelled.message());
        assertTrue(cancelled.usage().completionTokens() >= 3, "usage so far: " + cancelled.usage());
        int[] before = {recs.get(0).spans.get(), recs.get(2).spans.get()};
        waitFor(
                () -> recs.get(0).spans.get() > before[0] + 10
                        && recs.get(2).spans.get() > before[1] + 10,
                "the other rows to go on");
        assertTrue(exec.events.contains("remove:c1"));
        sessions.get(0).cancel("done");
        sessions.get(2).cancel("done");
        for (int i : new int[] {0, 2}) {
            assertEquals(
                    Lifecycle.CANCELLED, await(sessions.get(i), recs.get(i)).state());
            String text = recs.get(i).text.toString();
            assertEquals(tokens(text.split(" ").length), text, "row " + i + " streamed every token in order");
        }
        waitFor(() -> exec.batch.rows() == 0, "every row gone");
    }

    @Test
    void aStopStringEndsOnlyItsRow() throws Exception {
        start(batched(4));
        var stopped = new RecordingListener();
        var other = new RecordingListener();
        Session s1 = engine.submit(text("s1", "a", 10, "4 "), stopped);
        Session s2 = engine.submit(text("s2", "a", 10), other);
        Outcome o1 = await(s1, stopped);
        assertEquals(Lifecycle.COMPLETED, o1.state());
        assertEquals("stop", o1.finishReason());
        assertEquals("1 2 3 ", stopped.text.toString());
        Outcome o2 = await(s2, other);
        assertEquals("length", o2.finishReason());
        assertEquals(tokens(10), other.text.toString());
    }

    @Test
    void aRefusedRowFailsAlone() throws Exception {
        start(batched(4));
        exec.refusedMaxTokens = 13;
        var bad = new RecordingListener();
        var good = new RecordingListener();
        Session b = engine.submit(text("bad", "a", 13), bad);
        Session g = engine.submit(text("good", "a", 5), good);
        Outcome ob = await(b, bad);
        assertEquals(Lifecycle.FAILED, ob.state());
        assertEquals(Outcome.ErrorType.INVALID_REQUEST, ob.errorType());
        assertEquals("max_tokens 13 is refused", ob.message());
        assertEquals(Lifecycle.COMPLETED, await(g, good).state());
        assertEquals(tokens(5), good.text.toString());
    }

    @Test
    void aFailedUnitFailsItsRowsAndAFreshBatchServesTheNext() throws Exception {
        start(batched(4));
        waitFor(() -> exec.batch != null, "the batch");
        exec.batch.failWhenRows = 2;
        var r1 = new RecordingListener();
        var r2 = new RecordingListener();
        Session s1 = engine.submit(text("f1", "a", 1_000_000), r1);
        waitFor(() -> r1.spans.get() > 0, "the first row streaming");
        Session s2 = engine.submit(text("f2", "a", 1_000_000), r2);
        for (Outcome o : new Outcome[] {await(s1, r1), await(s2, r2)}) {
            assertEquals(Lifecycle.FAILED, o.state());
            assertEquals(Outcome.ErrorType.INTERNAL, o.errorType());
            assertTrue(o.message().contains("unit failed"), o.message());
        }
        assertTrue(exec.batch != null && exec.batchesOpened.get() == 2, "a fresh batch replaced the failed one");
        var r3 = new RecordingListener();
        Session s3 = engine.submit(text("f3", "a", 4), r3);
        assertEquals(Lifecycle.COMPLETED, await(s3, r3).state());
        assertEquals(tokens(4), r3.text.toString());
        assertTrue(engine.health().ready());
    }

    @Test
    void aSessionTheBatchCannotRunWaitsForItToEmptyAndNothingOvertakesIt() throws Exception {
        start(batched(4));
        waitFor(() -> exec.batch != null, "the batch");
        CountDownLatch gate = new CountDownLatch(1);
        exec.batch.unitGate = gate;
        var ra = new RecordingListener();
        var rk = new RecordingListener();
        var rb = new RecordingListener();
        Session a = engine.submit(text("A", "a", 20), ra);
        Session k = engine.submit(text("K", "kv a", 3), rk);
        Session b = engine.submit(text("B", "a", 3), rb);
        holdFirstUnitUntilQueued(List.of(a, k, b), gate);
        for (var p : List.of(List.of(a, ra), List.of(k, rk), List.of(b, rb))) {
            assertEquals(
                    Lifecycle.COMPLETED,
                    await((Session) p.get(0), (RecordingListener) p.get(1)).state());
        }
        List<String> events = List.copyOf(exec.events);
        assertTrue(events.indexOf("open:K") > events.indexOf("finish:A"), "K ran alone after A: " + events);
        assertTrue(events.indexOf("insert:B") > events.indexOf("close:K"), "B did not overtake K: " + events);
        assertEquals(tokens(3), rk.text.toString());
        assertEquals(1, exec.openRuns.get());
    }

    @Test
    void aStalledReaderHoldsTheBatchUntilItsDeadlineThenLeaves() throws Exception {
        // A second of idle deadline: the reader that does read must never look stalled, even when a busy
        // machine starves the sink thread for a moment.
        start(batched(4).withCredits(4, 1_000_000_000L));
        var stalled = new RecordingListener(false); // never releases credits
        var reader = new RecordingListener();
        Session s = engine.submit(text("slow", "a", 1000), stalled);
        Session r = engine.submit(text("fast", "a", 30), reader);
        Outcome os = await(s, stalled);
        assertEquals(Lifecycle.CANCELLED, os.state());
        assertTrue(os.message().contains("did not read"), os.message());
        assertEquals(4, stalled.spans.get(), "the stalled row stopped at its 4 credits");
        Outcome or = await(r, reader);
        assertEquals(Lifecycle.COMPLETED, or.state(), or.toString());
        assertEquals(tokens(30), reader.text.toString());
    }

    @Test
    void shutdownEndsEveryRowOnceAndClosesTheBatch() throws Exception {
        start(batched(4));
        List<Session> sessions = new ArrayList<>();
        List<RecordingListener> recs = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            var r = new RecordingListener();
            recs.add(r);
            sessions.add(engine.submit(text("d" + i, "a", 1_000_000), r));
        }
        waitFor(() -> recs.stream().allMatch(r -> r.spans.get() > 0), "every row streaming");
        ScriptedBatch batch = exec.batch;
        engine.close();
        for (int i = 0; i < 3; i++) {
            assertEquals(
                    Lifecycle.CANCELLED, await(sessions.get(i), recs.get(i)).state());
        }
        assertTrue(batch.closed, "the batch was closed");
        assertEquals(0, batch.rows());
        engine = null;
    }

    @Test
    void theKvBudgetHoldsRowsBackAndRefusesARequestThatAloneExceedsIt() throws Exception {
        // The double projects one byte per position per row: a budget of 30 fits two rows of
        // 1 + 10 positions (22), not three (33).
        start(batched(4).withKvBudget(30));
        waitFor(() -> exec.batch != null, "the batch");
        CountDownLatch gate = new CountDownLatch(1);
        exec.batch.unitGate = gate;
        List<Session> sessions = new ArrayList<>();
        List<RecordingListener> recs = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            var r = new RecordingListener();
            recs.add(r);
            sessions.add(engine.submit(text("k" + i, "a", 10), r));
        }
        var tooBig = new RecordingListener();
        Session big = engine.submit(text("big", "a", 40), tooBig);
        holdFirstUnitUntilQueued(
                List.of(sessions.get(0), sessions.get(1), sessions.get(2), sessions.get(3), big), gate);
        for (int i = 0; i < 4; i++) {
            assertEquals(
                    Lifecycle.COMPLETED, await(sessions.get(i), recs.get(i)).state());
            assertEquals(tokens(10), recs.get(i).text.toString());
        }
        Outcome o = await(big, tooBig);
        assertEquals(Lifecycle.FAILED, o.state());
        assertEquals(Outcome.ErrorType.INVALID_REQUEST, o.errorType());
        assertTrue(
                o.message().contains("--kv-budget of 30 bytes") && o.message().contains("max_tokens 40"), o.message());
        assertEquals(2, exec.batch.mostRows.get(), "the budget, not the cap of 4, bounded the batch");
    }

    @Test
    void decodeConcurrencyOneNeverOpensABatch() throws Exception {
        start(EngineConfig.defaults());
        var r = new RecordingListener();
        Session s = engine.submit(text("solo", "a", 3), r);
        assertEquals(Lifecycle.COMPLETED, await(s, r).state());
        assertEquals(0, exec.batchesOpened.get());
        assertNull(exec.batch);
        assertEquals(1, exec.openRuns.get());
    }
}
