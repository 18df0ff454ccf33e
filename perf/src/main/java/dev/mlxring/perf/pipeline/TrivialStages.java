package dev.mlxring.perf.pipeline;

import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.EngineConfig;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.ExecutionRun;
import dev.mlxring.pipeline.Executor;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.StepResult;
import dev.mlxring.pipeline.TextSink;

/**
 * Stage doubles that do no work, so that a benchmark over them measures the pipeline alone: the
 * rings, the stage threads, their hand-offs and the per-token bookkeeping of the exec loop and
 * the sink. Prep returns fixed ids, plan returns one precomputed plan, the executor commits one
 * token per {@code advance()} (optionally after a busy pause standing in for the forward pass),
 * the text sink appends a constant.
 *
 * <p>With a {@link Stamps} attached, each stage writes {@link System#nanoTime()} when it sees the
 * single in-flight request (one timestamp per stage; a handful of nanoseconds each), so that the
 * submit-to-first-span latency can be split by hand-off. With {@code tokenStamps}, the run writes
 * the time it commits token {@code i} to {@code tokenStamps[i]} (the listener takes the
 * difference). Neither allocates.
 *
 * <p>These are the benchmark's own doubles, not the tests' shared ones ({@code
 * dev.mlxring.pipeline.testing} in pipeline's test-jar): those count runs, log events and read
 * volatile knobs on the exec thread, work this benchmark would measure as the pipeline's.
 */
public final class TrivialStages {
    /** Text appended per token: a typical short BPE piece. */
    public static final String PIECE = " tok";

    private TrivialStages() {}

    /** Per-stage timestamps of the one in-flight request ({@link #SUBMIT} .. {@link #LISTENER}). */
    public static final class Stamps {
        public static final int SUBMIT = 0;
        public static final int PREP = 1;
        public static final int PLAN = 2;
        public static final int EXEC_OPEN = 3;
        public static final int EXEC_TOKEN = 4;
        public static final int SINK = 5;
        public static final int LISTENER = 6;
        public static final int COUNT = 7;
        public static final String[] NAMES = {"submit", "prep", "plan", "exec open", "exec token", "sink", "listener"};

        /** Written by the stage threads; ordered by the rings' sequence barriers. */
        public final long[] t = new long[COUNT];

        public void stamp(int stage) {
            t[stage] = System.nanoTime();
        }
    }

    /**
     * Builds an engine over the doubles.
     *
     * @param maxTokens tokens per session (the plan's max_tokens; the run ends with "length")
     * @param paceNs busy pause per {@code advance()} before the token (0: none)
     * @param stamps per-stage stamps of the single in-flight request, or null
     * @param tokenStamps commit time of token {@code i} at {@code [i % length]}, or null
     * @param execGaps per token after a session's first: the time the exec thread spent outside
     *     {@code advance()} between two tokens (publishing, the loop's safe-point checks), or null
     */
    public static Engine engine(
            EngineConfig config,
            int maxTokens,
            long paceNs,
            Stamps stamps,
            long[] tokenStamps,
            Probe.Samples execGaps) {
        PreparedPrompt prepared = new PreparedPrompt(new int[] {1, 2, 3, 4, 5, 6, 7, 8}, 8);
        ExecutionPlan plan = ExecutionPlan.builder()
                .requestId("bench")
                .prompt(prepared)
                .sampling(SamplingParams.GREEDY)
                .maxTokens(maxTokens)
                .build();
        return Engine.builder()
                .config(config)
                .preparer(r -> {
                    if (stamps != null) {
                        stamps.stamp(Stamps.PREP);
                    }
                    return prepared;
                })
                .planner((r, p) -> {
                    if (stamps != null) {
                        stamps.stamp(Stamps.PLAN);
                    }
                    return plan;
                })
                .executor(new Exec(paceNs, stamps, tokenStamps, execGaps))
                .sinks(p -> new ConstantSink(stamps))
                .start();
    }

    /** A request the doubles accept: the prompt is never read (prep returns fixed ids). */
    public static GenerationRequest request() {
        return GenerationRequest.builder()
                .model("bench")
                .prompt(new Prompt.Text("x"))
                .build();
    }

    /** One token per advance(), ids 0, 1, 2, ...; "length" after the plan's max tokens. */
    static final class Exec implements Executor {
        private final long paceNs;
        private final Stamps stamps;
        private final long[] tokenStamps;
        private final Probe.Samples execGaps;

        Exec(long paceNs, Stamps stamps, long[] tokenStamps, Probe.Samples execGaps) {
            this.paceNs = paceNs;
            this.stamps = stamps;
            this.tokenStamps = tokenStamps;
            this.execGaps = execGaps;
        }

        @Override
        public ExecutionRun open(ExecutionPlan plan) {
            if (stamps != null) {
                stamps.stamp(Stamps.EXEC_OPEN);
            }
            return new Run(plan.maxTokens(), plan.prompt().length());
        }

        @Override
        public void close() {}

        final class Run implements ExecutionRun {
            private final StepResult result = new StepResult(0);
            private final int maxTokens;
            private final int promptTokens;
            private int produced;
            private long lastReturnNs;

            Run(int maxTokens, int promptTokens) {
                this.maxTokens = maxTokens;
                this.promptTokens = promptTokens;
            }

            @Override
            public StepResult advance() {
                if (execGaps != null && lastReturnNs != 0) {
                    execGaps.add(System.nanoTime() - lastReturnNs);
                }
                if (produced == maxTokens) {
                    return result.finished("length");
                }
                if (paceNs > 0) {
                    long until = System.nanoTime() + paceNs;
                    while (System.nanoTime() < until) {
                        Thread.onSpinWait();
                    }
                }
                int id = produced++;
                if (stamps != null && id == 0) {
                    stamps.stamp(Stamps.EXEC_TOKEN);
                }
                if (tokenStamps != null) {
                    tokenStamps[id % tokenStamps.length] = System.nanoTime();
                }
                if (execGaps != null) {
                    lastReturnNs = System.nanoTime();
                }
                return result.token(id);
            }

            @Override
            public int promptTokens() {
                return promptTokens;
            }

            @Override
            public int completionTokens() {
                return produced;
            }

            @Override
            public void close() {}
        }
    }

    /** Appends {@link #PIECE} per token; never stops. */
    static final class ConstantSink implements TextSink {
        private final Stamps stamps;
        private boolean first = true;

        ConstantSink(Stamps stamps) {
            this.stamps = stamps;
        }

        @Override
        public boolean onToken(int tokenId, CommittedSpan span) {
            if (stamps != null && first) {
                stamps.stamp(Stamps.SINK);
                first = false;
            }
            span.text.append(PIECE);
            return false;
        }

        @Override
        public String finish(String finishReason, CommittedSpan span) {
            return finishReason;
        }
    }
}
