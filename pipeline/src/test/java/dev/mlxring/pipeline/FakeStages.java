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

    static ExecutionPlan plan(GenerationRequest r, PreparedPrompt p) {
        return new ExecutionPlan(r.id(), p, null, r.maxTokens() == null ? 8 : r.maxTokens(), new int[] {0},
                r.stop(), false, 0);
    }

    /** Runs {@code prefillChunks} chunks, then emits tokens 1, 2, 3, ... up to maxTokens; counts open runs. */
    static final class Exec implements Executor {
        final AtomicInteger openRuns = new AtomicInteger();
        final AtomicInteger closedRuns = new AtomicInteger();
        volatile int prefillChunks = 1;
        volatile long stepSleepMs;
        volatile CountDownLatch decodeGate;
        volatile Thread thread;
        volatile boolean closed;

        @Override
        public ExecutionRun open(ExecutionPlan plan) {
            thread = Thread.currentThread();
            openRuns.incrementAndGet();
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
                public void close() {
                    closedRuns.incrementAndGet();
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
        final boolean auto;

        Recorder(boolean autoRelease) {
            this.auto = autoRelease;
        }

        Recorder() {
            this(true);
        }

        @Override
        public void onCommitted(Session session, CommittedSpan span) {
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
    }
}
