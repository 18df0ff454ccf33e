package dev.mlxring.pipeline;

import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/** Stage doubles for pipeline tests: no MLX, deterministic, observable. */
final class FakeStages {
    private FakeStages() {}

    /** Tokenizes "a b c" into one id per word; "FAIL" fails preparation. */
    static PreparedPrompt prepare(GenerationRequest r) throws RequestException {
        String text = ((Prompt.Text) r.prompt()).text();
        if (text.contains("FAIL")) {
            throw new RequestException(Outcome.ErrorType.INVALID_REQUEST, "prompt contains FAIL");
        }
        String[] words = text.trim().split(" +");
        int[] ids = new int[words.length];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = words[i].length();
        }
        return new PreparedPrompt(ids, ids.length);
    }

    /** max_tokens that makes a run or row fail alone after two tokens ({@link StepResult.Kind#FAILED}). */
    static final int FAILS_AFTER_TWO = 17;

    /** The failure such a run or row reports. */
    static final String DRY = "scripted constraint can no longer be satisfied";

    static ExecutionPlan plan(GenerationRequest r, PreparedPrompt p) {
        return new ExecutionPlan(r.id(), p, SamplingParams.GREEDY, r.maxTokens() == null ? 8 : r.maxTokens(), new int[] {0},
                r.stop(), false, 0);
    }

    /**
     * Runs {@code prefillChunks} chunks, then emits tokens 1, 2, 3, ... up to maxTokens; counts open
     * runs. A plan of max_tokens {@value #FAILS_AFTER_TWO} fails alone after its second token (as a
     * row whose token constraint runs dry).
     */
    static final class Exec implements Executor {
        final AtomicInteger openRuns = new AtomicInteger();
        final AtomicInteger closedRuns = new AtomicInteger();
        /** Tokens produced by serial runs, all runs together. */
        final AtomicInteger producedTokens = new AtomicInteger();
        /** What every run and batch row reports as read from the prefix cache. */
        volatile int cachedTokens;
        volatile int prefillChunks = 1;
        volatile long stepSleepMs;
        volatile CountDownLatch decodeGate;
        volatile Thread thread;
        volatile boolean closed;
        /** Whether {@link #openBatch} offers a {@link Batch}; off = the serial loop. */
        volatile boolean batching;
        final AtomicInteger batchesOpened = new AtomicInteger();
        volatile Batch batch;
        /** Exec-thread events in order: "open:id", "close:id" (serial runs) and the batch's own. */
        final ConcurrentLinkedQueue<String> events = new ConcurrentLinkedQueue<>();

        @Override
        public ExecutionBatch openBatch(int maxRows, int maxPrefillRows) {
            if (!batching) {
                return null;
            }
            batchesOpened.incrementAndGet();
            Batch b = new Batch(this, maxRows);
            batch = b;
            return b;
        }

        @Override
        public ExecutionRun open(ExecutionPlan plan) {
            thread = Thread.currentThread();
            openRuns.incrementAndGet();
            events.add("open:" + plan.requestId());
            int chunks = prefillChunks;
            return new ExecutionRun() {
                final StepResult r = new StepResult(0);
                int prefilled;
                int produced;

                @Override
                public StepResult advance() {
                    sleep();
                    if (prefilled < chunks) {
                        prefilled++;
                        return r.prefilled();
                    }
                    CountDownLatch gate = decodeGate;
                    if (gate != null) {
                        try {
                            gate.await();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                    if (produced == plan.maxTokens()) {
                        return r.finished("length");
                    }
                    if (produced == 2 && plan.maxTokens() == FAILS_AFTER_TWO) {
                        return r.failed(Outcome.ErrorType.INVALID_REQUEST, DRY);
                    }
                    producedTokens.incrementAndGet();
                    return r.token(++produced);
                }

                @Override
                public int promptTokens() {
                    return plan.prompt().length();
                }

                @Override
                public int completionTokens() {
                    return produced;
                }

                @Override
                public int cachedTokens() {
                    return cachedTokens;
                }

                @Override
                public void close() {
                    closedRuns.incrementAndGet();
                    events.add("close:" + plan.requestId());
                }
            };
        }

        private void sleep() {
            if (stepSleepMs > 0) {
                try {
                    Thread.sleep(stepSleepMs);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    /**
     * A batch double with {@link Exec}'s row semantics: each row runs {@code prefillChunks} units
     * of prefill, then one token per unit (1, 2, 3, ...) up to its max tokens. Plans with a KV
     * scheme are not accepted; max_tokens 13 is refused at insert. Records the most rows it held
     * at once and its events ("insert:id", "remove:id", "finish:id") in the executor's log.
     */
    static final class Batch implements ExecutionBatch {
        private final Exec exec;
        private final int maxRows;
        private final java.util.LinkedHashMap<Integer, int[]> rows = new java.util.LinkedHashMap<>();
        private final java.util.Map<Integer, ExecutionPlan> plans = new java.util.HashMap<>();
        private int nextRow;
        final AtomicInteger mostRows = new AtomicInteger();
        final AtomicInteger units = new AtomicInteger();
        /** A unit run while this many rows are in flight throws. 0 = never. */
        volatile int failWhenRows;
        /** Each unit waits on it while set. */
        volatile CountDownLatch unitGate;
        volatile boolean closed;
        /** Offers decode-only units, as exec-stage's mechanics do, when set. */
        volatile boolean decodeOnlyUnits;
        /** A unit that reads a prefill chunk takes this long (ms): the chunk's cost. */
        volatile int prefillUnitMillis;
        /** Per unit in order: 'P' read a chunk, 'D' decode-only, '-' neither (nothing to read). */
        final StringBuffer unitKinds = new StringBuffer();

        Batch(Exec exec, int maxRows) {
            this.exec = exec;
            this.maxRows = maxRows;
        }

        @Override
        public boolean accepts(ExecutionPlan plan) {
            return plan.kvScheme() == null;
        }

        @Override
        public int insert(ExecutionPlan plan) throws RequestException {
            if (plan.maxTokens() == 13) {
                throw new RequestException(Outcome.ErrorType.INVALID_REQUEST, "max_tokens 13 is refused");
            }
            if (rows.size() == maxRows) {
                throw new IllegalStateException("more rows than the cap " + maxRows);
            }
            int row = nextRow++;
            rows.put(row, new int[] {exec.prefillChunks, 0});
            plans.put(row, plan);
            mostRows.accumulateAndGet(rows.size(), Math::max);
            exec.events.add("insert:" + plan.requestId());
            return row;
        }

        @Override
        public int cachedTokens(int row) {
            return rows.containsKey(row) ? exec.cachedTokens : 0;
        }

        @Override
        public Usage remove(int row) {
            int[] st = rows.remove(row);
            ExecutionPlan plan = plans.remove(row);
            exec.events.add("remove:" + plan.requestId());
            return new Usage(plan.prompt().length(), st[1], 0);
        }

        @Override
        public boolean decodeOnlyUseful() {
            boolean generating = false;
            boolean prefilling = false;
            for (int[] st : rows.values()) {
                generating |= st[0] == 0;
                prefilling |= st[0] > 0;
            }
            return decodeOnlyUnits && generating && prefilling;
        }

        @Override
        public boolean prefillPending() {
            return rows.values().stream().anyMatch(st -> st[0] > 0);
        }

        @Override
        public void step(BatchStep out) {
            step(out, true);
        }

        @Override
        public void step(BatchStep out, boolean prefill) {
            out.clear();
            if (!decodeOnlyUnits && !prefill) {
                throw new IllegalStateException("a decode-only unit was asked of mechanics that offer none");
            }
            boolean readsChunk = prefill && rows.values().stream().anyMatch(st -> st[0] > 0);
            unitKinds.append(!prefill ? 'D' : readsChunk ? 'P' : '-');
            if (readsChunk && prefillUnitMillis > 0) {
                try {
                    Thread.sleep(prefillUnitMillis);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            CountDownLatch gate = unitGate;
            if (gate != null) {
                try {
                    gate.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            units.incrementAndGet();
            if (failWhenRows > 0 && rows.size() == failWhenRows) {
                throw new IllegalStateException("unit failed");
            }
            for (var it = rows.entrySet().iterator(); it.hasNext(); ) {
                var e = it.next();
                int[] st = e.getValue();
                ExecutionPlan plan = plans.get(e.getKey());
                if (st[0] > 0) {
                    if (prefill) {
                        st[0]--;
                    }
                    continue;
                }
                if (st[1] == 2 && plan.maxTokens() == FAILS_AFTER_TWO) {
                    out.fail(e.getKey(), Outcome.ErrorType.INVALID_REQUEST, DRY,
                            new Usage(plan.prompt().length(), st[1], 0));
                    exec.events.add("fail:" + plan.requestId());
                    it.remove();
                    plans.remove(e.getKey());
                    continue;
                }
                out.add(e.getKey()).token(++st[1]);
                if (st[1] == plan.maxTokens()) {
                    out.finish(e.getKey(), "length", new Usage(plan.prompt().length(), st[1], 0));
                    exec.events.add("finish:" + plan.requestId());
                    it.remove();
                    plans.remove(e.getKey());
                }
            }
        }

        /** One byte per position per row: budgets in tests read as positions. */
        @Override
        public long projectedKvBytes(int rowCount, int positions) {
            return (long) rowCount * positions;
        }

        @Override
        public int rows() {
            return rows.size();
        }

        @Override
        public void close() {
            closed = true;
            rows.clear();
            plans.clear();
        }
    }

    /** Text "<id> " per token; a stop string matches when the accumulated text contains it. */
    static TextSink textSink(ExecutionPlan plan) {
        StringBuilder all = new StringBuilder();
        return new TextSink() {
            @Override
            public boolean onToken(int tokenId, CommittedSpan span) {
                String piece = tokenId + " ";
                all.append(piece);
                for (String stop : plan.stopStrings()) {
                    if (all.indexOf(stop) >= 0) {
                        return true;
                    }
                }
                span.text.append(piece);
                return false;
            }

            @Override
            public String finish(String finishReason, CommittedSpan span) {
                return finishReason;
            }
        };
    }

    /** Records everything a session's listener sees. */
    static class Recorder implements GenerationListener {
        final StringBuffer text = new StringBuffer();
        final ConcurrentLinkedQueue<Outcome> outcomes = new ConcurrentLinkedQueue<>();
        final AtomicInteger spans = new AtomicInteger();
        final CountDownLatch done = new CountDownLatch(1);
        /** The session's cachedPromptTokens() as its first span arrived (-1 before any). */
        final AtomicInteger cachedAtFirstSpan = new AtomicInteger(-1);
        final boolean auto;

        Recorder(boolean autoRelease) {
            this.auto = autoRelease;
        }

        Recorder() {
            this(true);
        }

        @Override
        public void onCommitted(Session session, CommittedSpan span) {
            cachedAtFirstSpan.compareAndSet(-1, session.cachedPromptTokens());
            spans.incrementAndGet();
            text.append(span.text);
        }

        @Override
        public void onComplete(Session session, Outcome outcome) {
            outcomes.add(outcome);
            done.countDown();
        }

        @Override
        public boolean autoRelease() {
            return auto;
        }

        List<Outcome> outcomeList() {
            return List.copyOf(outcomes);
        }

        /** Waits for {@code s}'s outcome and checks that this listener saw it exactly once. */
        Outcome await(Session s) throws Exception {
            Outcome o = s.result().get(10, java.util.concurrent.TimeUnit.SECONDS);
            org.junit.jupiter.api.Assertions.assertTrue(done.await(10, java.util.concurrent.TimeUnit.SECONDS));
            org.junit.jupiter.api.Assertions.assertEquals(1, outcomeList().size(), "exactly one onComplete");
            org.junit.jupiter.api.Assertions.assertSame(o, outcomeList().get(0));
            org.junit.jupiter.api.Assertions.assertTrue(s.state().isTerminal());
            return o;
        }
    }
}
