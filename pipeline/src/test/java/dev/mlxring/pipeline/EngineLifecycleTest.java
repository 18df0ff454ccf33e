package dev.mlxring.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.testing.CountingConstraint;
import dev.mlxring.pipeline.testing.RecordingListener;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import dev.mlxring.pipeline.testing.WordStages;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Every path ends in exactly one outcome and releases what it held. */
class EngineLifecycleTest {
    private ScriptedExecutor exec;
    private Engine engine;

    private Engine start(EngineConfig config) {
        exec = ScriptedExecutor.counting();
        engine = Engine.builder()
                .config(config)
                .preparer(WordStages::prepare)
                .planner(WordStages::plan)
                .executor(exec)
                .sinks(WordStages::textSink)
                .start();
        return engine;
    }

    @AfterEach
    void close() {
        if (engine != null) {
            engine.close();
        }
    }

    private static GenerationRequest text(String prompt, int maxTokens, String... stops) {
        return GenerationRequest.builder()
                .model("m")
                .prompt(new Prompt.Text(prompt))
                .maxTokens(maxTokens)
                .stop(List.of(stops))
                .build();
    }

    private static Outcome await(Session s, RecordingListener r) throws Exception {
        return r.await(s);
    }

    @Test
    void completesWithAllTokensInOrder() throws Exception {
        start(EngineConfig.defaults());
        var r = new RecordingListener();
        Session s = engine.submit(text("aa bbb c", 5), r);
        Outcome o = await(s, r);
        assertEquals(Lifecycle.COMPLETED, o.state());
        assertEquals("length", o.finishReason());
        assertEquals("1 2 3 4 5 ", r.text.toString());
        assertEquals(new Usage(3, 5, 0), o.usage());
        assertEquals(exec.openRuns.get(), exec.closedRuns.get());
        assertEquals(0, engine.admittedCount());
    }

    @Test
    void manySessionsRunInAdmissionOrderOnTheExecThread() throws Exception {
        start(EngineConfig.defaults());
        List<Session> sessions = new ArrayList<>();
        List<RecordingListener> recs = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            var r = new RecordingListener();
            recs.add(r);
            sessions.add(engine.submit(text("x y", 3), r));
        }
        for (int i = 0; i < 20; i++) {
            assertEquals(
                    Lifecycle.COMPLETED, await(sessions.get(i), recs.get(i)).state());
            assertEquals("1 2 3 ", recs.get(i).text.toString());
        }
        assertEquals("mlxring-exec", exec.thread.getName());
        assertEquals(20, exec.closedRuns.get());
    }

    /** A run that ends with its own failure (a token constraint run dry) fails its session alone, with usage. */
    @Test
    void aRunThatFailsAloneFailsOnlyItsSession() throws Exception {
        start(EngineConfig.defaults());
        exec.failingMaxTokens = 17;
        var bad = new RecordingListener();
        var good = new RecordingListener();
        Session b = engine.submit(text("x y", 17), bad);
        Session g = engine.submit(text("fine", 3), good);
        Outcome o = await(b, bad);
        assertEquals(Lifecycle.FAILED, o.state());
        assertEquals(Outcome.ErrorType.INVALID_REQUEST, o.errorType());
        assertEquals(ScriptedExecutor.DRY, o.message());
        assertEquals("1 2 ", bad.text.toString(), "the tokens before the failure were delivered");
        assertEquals(new Usage(2, 2, 0), o.usage());
        assertEquals(Lifecycle.COMPLETED, await(g, good).state());
        assertEquals("1 2 3 ", good.text.toString());
        assertEquals(exec.openRuns.get(), exec.closedRuns.get());
    }

    @Test
    void preparationFailureFailsOnlyThatSession() throws Exception {
        start(EngineConfig.defaults());
        var bad = new RecordingListener();
        var good = new RecordingListener();
        Session b = engine.submit(text("FAIL now", 3), bad);
        Session g = engine.submit(text("fine", 3), good);
        Outcome o = await(b, bad);
        assertEquals(Lifecycle.FAILED, o.state());
        assertEquals(Outcome.ErrorType.INVALID_REQUEST, o.errorType());
        assertEquals("prompt contains FAIL", o.message());
        assertEquals(Lifecycle.COMPLETED, await(g, good).state());
    }

    @Test
    void cancelBeforeItStartsNeverOpensARun() throws Exception {
        start(EngineConfig.defaults());
        exec.decodeGate = new CountDownLatch(1);
        var first = new RecordingListener();
        Session running = engine.submit(text("a", 2), first);
        var r = new RecordingListener();
        Session queued = engine.submit(text("b", 2), r);
        queued.cancel("client went away");
        exec.decodeGate.countDown();
        Outcome o = await(queued, r);
        assertEquals(Lifecycle.CANCELLED, o.state());
        assertEquals("client went away", o.message());
        assertEquals(Lifecycle.COMPLETED, await(running, first).state());
        assertEquals(1, exec.openRuns.get());
    }

    /**
     * A session settled before exec opened its run (cancelled while queued) closes its plan's
     * token constraint once; a session whose run opened leaves it to the executor.
     */
    @Test
    void aConstraintNeverHandedToTheExecutorIsClosedWhenItsSessionSettles() throws Exception {
        exec = ScriptedExecutor.counting();
        java.util.Map<String, CountingConstraint> constraints = new java.util.concurrent.ConcurrentHashMap<>();
        Planner planner = (r, p) -> {
            ExecutionPlan plain = WordStages.plan(r, p);
            CountingConstraint c = CountingConstraint.allowingEverything();
            constraints.put(((Prompt.Text) r.prompt()).text(), c);
            return plain.toBuilder().constraint(c).build();
        };
        engine = Engine.builder()
                .config(EngineConfig.defaults())
                .preparer(WordStages::prepare)
                .planner(planner)
                .executor(exec)
                .sinks(WordStages::textSink)
                .start();
        exec.decodeGate = new CountDownLatch(1);
        var first = new RecordingListener();
        Session running = engine.submit(text("a", 2), first);
        var r = new RecordingListener();
        Session queued = engine.submit(text("b", 2), r);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (queued.state().ordinal() < Lifecycle.QUEUED.ordinal()) {
            assertTrue(System.nanoTime() < deadline, "timed out waiting for the session to be planned");
            Thread.sleep(1);
        }
        queued.cancel("client went away");
        exec.decodeGate.countDown();
        assertEquals(Lifecycle.CANCELLED, await(queued, r).state());
        assertEquals(Lifecycle.COMPLETED, await(running, first).state());
        assertEquals(1, constraints.get("b").closes(), "the queued session's constraint");
        assertEquals(0, constraints.get("a").closes(), "the executor owns an opened run's constraint");
    }

    @Test
    void cancelBeforePrepNeverPreparesOrRuns() throws Exception {
        exec = ScriptedExecutor.counting();
        CountDownLatch prepGate = new CountDownLatch(1);
        java.util.concurrent.atomic.AtomicInteger prepared = new java.util.concurrent.atomic.AtomicInteger();
        Preparer gated = r -> {
            prepared.incrementAndGet();
            if (((Prompt.Text) r.prompt()).text().equals("first")) {
                try {
                    prepGate.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return WordStages.prepare(r);
        };
        engine = Engine.builder()
                .config(EngineConfig.defaults())
                .preparer(gated)
                .planner(WordStages::plan)
                .executor(exec)
                .sinks(WordStages::textSink)
                .start();
        var r1 = new RecordingListener();
        Session first = engine.submit(text("first", 2), r1); // sequence 0: shard 0, held in prep
        var r2 = new RecordingListener();
        Session other = engine.submit(text("other", 2), r2); // sequence 1: shard 1
        var r3 = new RecordingListener();
        Session queued = engine.submit(text("third", 2), r3); // sequence 2: shard 0, behind "first"
        queued.cancel("changed my mind");
        prepGate.countDown();
        Outcome o = await(queued, r3);
        assertEquals(Lifecycle.CANCELLED, o.state());
        assertEquals("changed my mind", o.message());
        assertEquals(Lifecycle.COMPLETED, await(first, r1).state());
        // Wait for "other" too: it runs on its own schedule and opens the second run.
        assertEquals(Lifecycle.COMPLETED, await(other, r2).state());
        assertEquals(2, prepared.get(), "the cancelled request was never prepared");
        assertEquals(2, exec.openRuns.get(), "nor run");
    }

    @Test
    void cancelDuringPrefillStopsAtTheNextSafePoint() throws Exception {
        start(EngineConfig.defaults());
        exec.prefillChunks = 1000;
        exec.stepSleepMs = 2;
        var r = new RecordingListener();
        Session s = engine.submit(text("a b", 5), r);
        while (s.state() != Lifecycle.RUNNING) {
            Thread.onSpinWait();
        }
        s.cancel("stop");
        Outcome o = await(s, r);
        assertEquals(Lifecycle.CANCELLED, o.state());
        assertEquals(0, r.spans.get());
        assertEquals(1, exec.closedRuns.get());
    }

    @Test
    void cancelMidDecodeKeepsWhatWasDelivered() throws Exception {
        start(EngineConfig.defaults());
        exec.stepSleepMs = 5;
        var r = new RecordingListener();
        Session s = engine.submit(text("a", 100_000), r);
        while (r.spans.get() < 3) {
            Thread.sleep(1);
        }
        s.cancel("enough");
        Outcome o = await(s, r);
        assertEquals(Lifecycle.CANCELLED, o.state());
        assertTrue(o.usage().completionTokens() >= 3);
        assertTrue(r.text.toString().startsWith("1 2 3 "));
        assertEquals(1, exec.closedRuns.get());
    }

    @Test
    void stopStringEndsTheRunWithStop() throws Exception {
        start(EngineConfig.defaults());
        var r = new RecordingListener();
        Session s = engine.submit(text("a", 50, "4 "), r);
        Outcome o = await(s, r);
        assertEquals(Lifecycle.COMPLETED, o.state());
        assertEquals("stop", o.finishReason());
        assertEquals("1 2 3 ", r.text.toString());
    }

    @Test
    void stopStringUsageCountsTheTokensUpToTheMatch() throws Exception {
        start(EngineConfig.defaults());
        long deadlineNs = System.nanoTime() + 10_000_000_000L;
        var r = new RecordingListener() {
            @Override
            public void onCommitted(Session session, CommittedSpan span) {
                // Hold the sink on the first token until exec has run past the match at token 4.
                while (exec.producedTokens.get() < 12 && System.nanoTime() < deadlineNs) {
                    Thread.onSpinWait();
                }
                super.onCommitted(session, span);
            }
        };
        Session s = engine.submit(text("a", 50, "4 "), r);
        Outcome o = await(s, r);
        assertTrue(exec.producedTokens.get() >= 12, "exec ran ahead: " + exec.producedTokens.get());
        assertEquals("stop", o.finishReason());
        assertEquals("1 2 3 ", r.text.toString());
        assertEquals(4, o.usage().completionTokens(), "tokens 1 to 4, the last one completing the match");
    }

    @Test
    void theCachedPromptCountIsKnownBeforeTheFirstToken() throws Exception {
        start(EngineConfig.defaults());
        exec.cachedTokens = 2;
        var r = new RecordingListener();
        Session s = engine.submit(text("a b c", 3), r);
        await(s, r);
        assertEquals(
                2, r.cachedAtFirstSpan.get(), "what a codec reports at its first event (Anthropic's message_start)");
        assertEquals(2, s.cachedPromptTokens());
    }

    @Test
    void moreTopLogprobsThanTheEngineCarriesIsRefusedAndTheEngineGoesOn() throws Exception {
        start(EngineConfig.builder().maxTopLogprobs(2).build());
        var r = new RecordingListener();
        Session s = engine.submit(
                GenerationRequest.builder()
                        .model("m")
                        .prompt(new Prompt.Text("a"))
                        .maxTokens(3)
                        .logprobs(5)
                        .build(),
                r);
        Outcome o = await(s, r);
        assertEquals(Lifecycle.FAILED, o.state());
        assertEquals(Outcome.ErrorType.INVALID_REQUEST, o.errorType());
        assertTrue(o.message().startsWith("top_logprobs must be at most 2"), o.message());
        var next = new RecordingListener();
        assertEquals(
                Lifecycle.COMPLETED,
                await(engine.submit(text("a", 3), next), next).state());
    }

    @Test
    void aTokenThatDoesNotFitTheRingFailsItsSessionOnly() throws Exception {
        // An executor that reports more alternatives than the ring's events hold (a bug in exec,
        // say): the token is refused before a ring slot is claimed, so the sink never waits on it.
        Executor overfull = new Executor() {
            @Override
            public void close() {}

            @Override
            public ExecutionRun open(ExecutionPlan plan) {
                return overfullRun(plan);
            }
        };
        engine = Engine.builder()
                .config(EngineConfig.defaults())
                .preparer(WordStages::prepare)
                .planner(WordStages::plan)
                .executor(overfull)
                .sinks(WordStages::textSink)
                .start();
        var wide = new RecordingListener();
        Outcome o = await(
                engine.submit(
                        GenerationRequest.builder()
                                .id("wide-1")
                                .model("m")
                                .prompt(new Prompt.Text("a"))
                                .maxTokens(2)
                                .build(),
                        wide),
                wide);
        assertEquals(Lifecycle.FAILED, o.state(), o.toString());
        var next = new RecordingListener();
        Outcome ok = await(
                engine.submit(
                        GenerationRequest.builder()
                                .id("narrow-1")
                                .model("m")
                                .prompt(new Prompt.Text("a"))
                                .maxTokens(2)
                                .build(),
                        next),
                next);
        assertEquals(Lifecycle.COMPLETED, ok.state(), "the engine goes on: " + ok);
    }

    private static ExecutionRun overfullRun(ExecutionPlan plan) {
        return new ExecutionRun() {
            final StepResult r = new StepResult(30);
            int produced;

            @Override
            public StepResult advance() {
                if (produced == 2) {
                    return r.finished("length");
                }
                r.token(++produced);
                r.topCount = plan.requestId().startsWith("wide") ? 30 : 0;
                return r;
            }

            @Override
            public int promptTokens() {
                return 1;
            }

            @Override
            public int completionTokens() {
                return produced;
            }

            @Override
            public void close() {}
        };
    }

    @Test
    void slowReaderIsPausedThenCancelledAfterTheIdleDeadline() throws Exception {
        start(EngineConfig.defaults().withCredits(4, 200_000_000L));
        var r = new RecordingListener(false); // never releases credits
        Session s = engine.submit(text("a", 1000), r);
        Outcome o = await(s, r);
        assertEquals(Lifecycle.CANCELLED, o.state());
        assertTrue(o.message().contains("did not read"), o.message());
        assertEquals(4, r.spans.get(), "the row paused after its 4 credits");
        assertEquals(1, exec.closedRuns.get());
    }

    @Test
    void readerThatReleasesLateKeepsGoing() throws Exception {
        // The idle deadline (60 s) is far beyond await's 10 s: the paused row must resume on
        // release() itself, not when exec's park times out.
        start(EngineConfig.defaults().withCredits(2, 60_000_000_000L));
        var r = new RecordingListener(false);
        Session s = engine.submit(text("a", 10), r);
        int released = 0;
        long deadlineNs = System.nanoTime() + 10_000_000_000L;
        while (!s.state().isTerminal() && System.nanoTime() < deadlineNs) {
            Thread.sleep(5);
            // Give back only what was consumed, late: each time the row has paused on zero credits.
            int consumed = r.spans.get();
            if (consumed > released) {
                s.release(consumed - released);
                released = consumed;
            }
        }
        Outcome o = await(s, r);
        assertEquals(Lifecycle.COMPLETED, o.state());
        assertEquals(10, r.spans.get());
    }

    @Test
    void fullRequestRingAnswersOverloadedAtOnce() throws Exception {
        start(EngineConfig.defaults().withRequestRingSize(4).withMaxQueued(1000));
        exec.decodeGate = new CountDownLatch(1);
        List<Session> accepted = new ArrayList<>();
        List<RecordingListener> recs = new ArrayList<>();
        OverloadedException rejected = null;
        for (int i = 0; i < 64 && rejected == null; i++) {
            var r = new RecordingListener();
            try {
                accepted.add(engine.submit(text("a", 1), r));
                recs.add(r);
            } catch (OverloadedException e) {
                rejected = e;
            }
        }
        assertNotEquals(null, rejected, "a 4-slot ring must refuse eventually");
        exec.decodeGate.countDown();
        for (int i = 0; i < accepted.size(); i++) {
            assertEquals(
                    Lifecycle.COMPLETED, await(accepted.get(i), recs.get(i)).state());
        }
    }

    @Test
    void admissionBeyondMaxQueuedFailsAsOverloaded() throws Exception {
        start(EngineConfig.defaults().withMaxQueued(2));
        exec.decodeGate = new CountDownLatch(1);
        List<Session> sessions = new ArrayList<>();
        List<RecordingListener> recs = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            var r = new RecordingListener();
            recs.add(r);
            sessions.add(engine.submit(text("a", 1), r));
        }
        Outcome third = await(sessions.get(2), recs.get(2));
        assertEquals(Outcome.ErrorType.OVERLOADED, third.errorType());
        exec.decodeGate.countDown();
        assertEquals(Lifecycle.COMPLETED, await(sessions.get(0), recs.get(0)).state());
        assertEquals(Lifecycle.COMPLETED, await(sessions.get(1), recs.get(1)).state());
        // Sessions 3 and 4 may reach plan after the gate opened and be admitted then: wait for
        // them too before counting what is still admitted.
        for (int i = 3; i < 5; i++) {
            Outcome o = await(sessions.get(i), recs.get(i));
            assertTrue(o.state() == Lifecycle.COMPLETED || o.errorType() == Outcome.ErrorType.OVERLOADED, o.toString());
        }
        assertEquals(0, engine.admittedCount());
    }

    @Test
    void cancelWhileQueuedSettlesWithoutWaitingForTheActiveSession() throws Exception {
        start(EngineConfig.defaults());
        exec.stepSleepMs = 2;
        var first = new RecordingListener();
        Session running = engine.submit(text("a", 1_000_000), first);
        var r = new RecordingListener();
        Session queued = engine.submit(text("b", 2), r);
        Thread.sleep(20);
        queued.cancel("gone");
        assertEquals(Lifecycle.CANCELLED, await(queued, r).state());
        assertTrue(!running.state().isTerminal(), "the active session keeps running");
        running.cancel("done");
        assertEquals(Lifecycle.CANCELLED, await(running, first).state());
    }

    /** An exception or an Error (a host's assert) from the listener is the listener's failure. */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void throwingListenerCancelsOnlyItsSession(boolean error) throws Exception {
        start(EngineConfig.defaults());
        var bad = new RecordingListener() {
            @Override
            public void onCommitted(Session session, CommittedSpan span) {
                if (error) {
                    throw new AssertionError("boom");
                }
                throw new IllegalStateException("boom");
            }
        };
        Session s = engine.submit(text("a", 100), bad);
        Outcome o = await(s, bad);
        assertEquals(Lifecycle.CANCELLED, o.state(), o.toString());
        assertTrue(o.message().startsWith("listener failed") && o.message().contains("boom"), o.message());
        var good = new RecordingListener();
        assertEquals(
                Lifecycle.COMPLETED,
                await(engine.submit(text("b", 2), good), good).state());
    }

    @Test
    void closeCancelsEverythingAndEachSessionSettlesOnce() throws Exception {
        start(EngineConfig.defaults());
        exec.stepSleepMs = 2;
        List<Session> sessions = new ArrayList<>();
        List<RecordingListener> recs = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            var r = new RecordingListener();
            recs.add(r);
            sessions.add(engine.submit(text("a", 1_000_000), r));
        }
        Thread.sleep(30);
        engine.close();
        for (int i = 0; i < 5; i++) {
            Outcome o = await(sessions.get(i), recs.get(i));
            assertEquals(Lifecycle.CANCELLED, o.state());
        }
        assertTrue(exec.closed, "the executor is closed on the exec thread");
        assertEquals(exec.openRuns.get(), exec.closedRuns.get());
        assertThrows(IllegalStateException.class, () -> engine.submit(text("a", 1), new RecordingListener()));
        assertThrows(
                EngineUnavailableException.class,
                () -> engine.prepare(text("a", 1)),
                "token counting after close is refused as the engine's, not the freed tokenizer's, error");
        engine = null;
    }

    @Test
    void closeFromAListenerCallbackReturnsAtOnceAndEverythingSettles() throws Exception {
        start(EngineConfig.defaults());
        exec.decodeGate = new CountDownLatch(1);
        var closeReturnedNs = new java.util.concurrent.atomic.AtomicLong();
        var first = new RecordingListener() {
            @Override
            public void onComplete(Session session, Outcome outcome) {
                long t0 = System.nanoTime();
                engine.close(); // on the sink thread: a host shutting down on some outcome
                closeReturnedNs.set(System.nanoTime() - t0);
                super.onComplete(session, outcome);
            }
        };
        Session s = engine.submit(text("a", 2), first);
        var queued = new RecordingListener();
        Session other = engine.submit(text("a", 1_000_000), queued); // waits behind s
        while (other.state().ordinal() < Lifecycle.QUEUED.ordinal()) {
            Thread.onSpinWait();
        }
        exec.decodeGate.countDown();
        assertEquals(Lifecycle.COMPLETED, await(s, first).state());
        assertTrue(
                closeReturnedNs.get() < 1_000_000_000L,
                "close on the sink thread waited " + closeReturnedNs.get() / 1_000_000 + " ms");
        assertEquals(Lifecycle.CANCELLED, await(other, queued).state(), "the other session settles too");
        engine = null;
    }

    @Test
    void closeSettlesSessionsWhileExecIsStuckInAStepThenWaitsForIt() throws Exception {
        start(EngineConfig.defaults());
        exec.decodeGate = new CountDownLatch(1); // exec blocks inside its first decode step
        exec.decodeGateReached = new CountDownLatch(1);
        var r = new RecordingListener();
        Session s = engine.submit(text("a", 5), r);
        // Inside the step, not merely running: a close before it would stop exec between units.
        assertTrue(exec.decodeGateReached.await(10, TimeUnit.SECONDS), "exec inside its first decode step");
        var closed = new CountDownLatch(1);
        Thread closer = new Thread(() -> {
            engine.close();
            closed.countDown();
        });
        closer.start();
        // Settled after EXEC_SETTLE_WAIT_NS although exec is still inside the step.
        Outcome o = s.result().get(Engine.EXEC_SETTLE_WAIT_NS / 1_000_000_000L + 20, TimeUnit.SECONDS);
        assertEquals(Lifecycle.CANCELLED, o.state(), o.toString());
        assertTrue(r.done.await(10, TimeUnit.SECONDS), "the listener heard it");
        assertEquals(1, closed.getCount(), "close still waits for exec, which owns the model's native memory");
        exec.decodeGate.countDown();
        assertTrue(closed.await(20, TimeUnit.SECONDS), "close returns once exec stopped");
        assertTrue(exec.closed, "the executor was released on the exec thread");
        assertEquals(1, r.outcomeList().size(), "one outcome, though exec also drained the session");
        engine = null;
    }

    @Test
    void anEmbeddersMissingPromptOrNegativeReleaseIsRefusedNamingIt() throws Exception {
        NullPointerException npe = assertThrows(
                NullPointerException.class,
                () -> new GenerationRequest(null, "m", null, null, 1, List.of(), false, 0, null, null, null, null));
        assertTrue(npe.getMessage().contains("prompt"), npe.getMessage());
        assertThrows(NullPointerException.class, () -> new Prompt.Text(null));
        start(EngineConfig.defaults());
        var r = new RecordingListener();
        Session s = engine.submit(text("a", 2), r);
        IllegalArgumentException iae = assertThrows(IllegalArgumentException.class, () -> s.release(-1000));
        assertTrue(iae.getMessage().contains("-1000"), iae.getMessage());
        assertEquals(Lifecycle.COMPLETED, await(s, r).state());
    }
}
