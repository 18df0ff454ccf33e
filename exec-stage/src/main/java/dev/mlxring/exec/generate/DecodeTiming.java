package dev.mlxring.exec.generate;

import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.pipeline.SamplingParams;

/**
 * Times the parts of the engine's decode loop for {@code dev.mlxring.perf.DecodeProfile}. It runs
 * {@link GenerationRun} itself (greedy, no stop ids): its prefill, first step and pipelined
 * iterations, with the run's package-private {@link GenerationRun.Probe} reading the clock around
 * them. It lives next to GenerationRun so that the hook stays package-private, out of the engine's
 * API; the engine itself never uses this class. Where a mode needs the step evaluated otherwise than by
 * {@code async_eval} (synchronously, or never), the probe submits the step itself.
 */
public final class DecodeTiming {
    private DecodeTiming() {}

    /**
     * Per token, ns: graph {@code build}, the {@code async_eval} call, the {@code wait} in
     * {@code item()} for the previous token, and the {@code total} between tokens; {@code arrays}:
     * the handles one step's scope held; {@code tokens}: the generated ids.
     */
    public record Pipelined(double buildNs, double asyncNs, double waitNs, double totalNs, int arrays, int[] tokens) {}

    /** Per token, ns: graph build, then its synchronous evaluation ({@code eval} and {@code item()}). */
    public record Synchronous(double buildNs, double computeNs, int arrays) {}

    /**
     * The same run with each step evaluated one primitive at a time ({@link Mlx#profileEval}): the
     * per-primitive reports of decode iterations 1 .. maxTokens-1, one string per step.
     */
    public static java.util.List<String> perOp(LanguageModel model, int[] prompt, int maxTokens) {
        Clock clock = new Clock(true);
        clock.ops = new java.util.ArrayList<>();
        run(model, prompt, maxTokens, clock);
        return clock.ops;
    }

    /** The engine's pipelined decode of {@code maxTokens} (>= 2) tokens after {@code prompt}. */
    public static Pipelined pipelined(LanguageModel model, int[] prompt, int maxTokens) {
        Clock clock = new Clock(false);
        int[] tokens = run(model, prompt, maxTokens, clock);
        int k = maxTokens - 1;
        return new Pipelined(
                clock.build / (double) k,
                clock.submit / (double) k,
                clock.wait / (double) k,
                (clock.lastRead - clock.firstRead) / (double) k,
                clock.arrays,
                tokens);
    }

    /** The same run with each step evaluated synchronously once built: build and compute never overlap. */
    public static Synchronous synchronous(LanguageModel model, int[] prompt, int maxTokens) {
        Clock clock = new Clock(true);
        run(model, prompt, maxTokens, clock);
        int k = maxTokens - 1;
        return new Synchronous(clock.build / (double) k, clock.submit / (double) k, clock.arrays);
    }

    /**
     * Builds the run's first step over one token with fresh (empty) caches and frees it, never
     * evaluated: host work only. Returns how many it built in about {@code seconds}, and how long that
     * took, as {steps, ns}.
     */
    public static long[] buildOnly(LanguageModel model, double seconds) {
        GenerationOptions options =
                new GenerationOptions(1, GenerationOptions.DEFAULT_PREFILL_STEP_SIZE, new int[0], false);
        GenerationRun.Probe neverEvaluated = new GenerationRun.Probe() {
            @Override
            public void stepStarted() {}

            @Override
            public void stepBuilt(int arrays) {}

            @Override
            public void submit(MlxArray y, MlxArray logprobs) {}

            @Override
            public void tokenRead() {}
        };
        int[] prompt = {1};
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long t0 = System.nanoTime();
        long n = 0;
        do {
            try (GenerationRun run = new GenerationRun(model, prompt, options, SamplingParams.GREEDY, null)) {
                run.probe(neverEvaluated);
                run.advance(); // the first step: built, "submitted" to nothing
            }
            n++;
        } while (System.nanoTime() < end);
        return new long[] {n, System.nanoTime() - t0};
    }

    private static int[] run(LanguageModel model, int[] prompt, int maxTokens, Clock clock) {
        if (maxTokens < 2) {
            throw new IllegalArgumentException("maxTokens must be >= 2, got " + maxTokens);
        }
        GenerationOptions options =
                new GenerationOptions(maxTokens, GenerationOptions.DEFAULT_PREFILL_STEP_SIZE, new int[0], false);
        int[] tokens = new int[maxTokens];
        int produced = 0;
        try (GenerationRun run = new GenerationRun(model, prompt, options, SamplingParams.GREEDY, null)) {
            run.probe(clock);
            GenerationRun.Event e;
            while ((e = run.advance()) != GenerationRun.Event.FINISHED) {
                if (e == GenerationRun.Event.TOKEN) {
                    tokens[produced++] = run.token();
                }
            }
        } finally {
            Mlx.synchronize();
        }
        return tokens;
    }

    /**
     * Sums the parts over decode iterations 1 .. maxTokens-1 (the first step and iteration 0, which
     * only fill the pipeline, are left out): build = step started to submit, submit = the
     * {@code async_eval} call (or, synchronous, {@code eval} + {@code item()}), wait = submit
     * returned to the token read.
     */
    private static final class Clock implements GenerationRun.Probe {
        private final boolean synchronous;
        private int steps;
        private int reads;
        private long stepStart;
        private long submitEnd;
        long build;
        long submit;
        long wait;
        long firstRead;
        long lastRead;
        int arrays;
        /** When set: each step is evaluated by {@link Mlx#profileEval}, reports kept from step 3 on. */
        java.util.List<String> ops;

        Clock(boolean synchronous) {
            this.synchronous = synchronous;
        }

        @Override
        public void stepStarted() {
            stepStart = System.nanoTime();
        }

        @Override
        public void stepBuilt(int arrays) {
            this.arrays = arrays;
        }

        @Override
        public void submit(MlxArray y, MlxArray logprobs) {
            long t1 = System.nanoTime();
            if (ops != null) {
                String report = Mlx.profileEval(y, logprobs);
                if (steps >= 2) {
                    ops.add(report);
                }
                y.itemInt();
            } else if (synchronous) {
                Mlx.eval(y, logprobs);
                y.itemInt();
            } else {
                Mlx.asyncEval(y, logprobs);
            }
            long t2 = System.nanoTime();
            if (++steps > 2) {
                build += t1 - stepStart;
                submit += t2 - t1;
            }
            submitEnd = t2;
        }

        @Override
        public void tokenRead() {
            long t = System.nanoTime();
            if (reads++ == 0) {
                firstRead = t;
            } else {
                wait += t - submitEnd;
            }
            lastRead = t;
        }
    }
}
