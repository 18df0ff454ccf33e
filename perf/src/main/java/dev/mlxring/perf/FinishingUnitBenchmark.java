package dev.mlxring.perf;

import dev.mlxring.exec.generate.ModelExecutor;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.kvstore.ModelFingerprint;
import dev.mlxring.kvstore.RamPrefixCache;
import dev.mlxring.pipeline.BatchStep;
import dev.mlxring.pipeline.ExecutionBatch;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.StepResult;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The cost of a batch unit in which a row finishes, in-process over the pipeline's batch
 * ({@code ContinuousBatch} with a RAM prefix cache, as the server's default): {@code --requests}
 * greedy requests of distinct {@code --prompt-tokens} prompts, {@code --streams} in flight at
 * once (a finished row's place is refilled before the next unit, as the exec stage refills it),
 * each generating {@code --gen-tokens} give or take 6 so that rows finish in different units.
 * Per run it prints the median wall time of a plain decode unit (no row finished) and of a
 * finishing unit (a row finished), both timed only when no prompt is pending and the last insert
 * is {@value #SETTLED_UNITS} units back; the median time of the inserts between units (an insert
 * that restores an entry whose bytes are still pending writes them first); each stream's
 * inter-token latency p50 / p99 (a token's time is its unit's end) and the aggregate tok/s
 * (tokens / wall).
 *
 * <pre>
 * FinishingUnitBenchmark --model DIR [--streams 16] [--requests 32] [--prompt-tokens 60]
 *                        [--gen-tokens 44] [--runs 3] [--prefill-step-size 2048] [--seed 42]
 * </pre>
 */
public final class FinishingUnitBenchmark {
    record Options(
            Path model,
            int streams,
            int requests,
            int promptTokens,
            int genTokens,
            int runs,
            int prefillStep,
            long seed) {}

    private static final String USAGE = "FinishingUnitBenchmark --model DIR [--streams 16] [--requests 32]"
            + " [--prompt-tokens 60] [--gen-tokens 44] [--runs 3] [--prefill-step-size 2048] [--seed 42]";

    /** Units after an insert before a unit is timed as plain or finishing (the joiners' prefill and first step are not). */
    private static final int SETTLED_UNITS = 3;

    private FinishingUnitBenchmark() {}

    public static void main(String[] argv) throws Exception {
        Options o = Flags.parseOrExit(argv, FinishingUnitBenchmark::parse, USAGE);
        try (LanguageModel model = Models.load(o.model())) {
            for (int run = 0; run <= o.runs(); run++) {
                String line = run(model, o, run);
                System.out.println((run == 0 ? "warm-up " : "run " + run + " ") + line);
            }
        }
    }

    private static String run(LanguageModel model, Options o, int run) throws Exception {
        try (RamPrefixCache cache = new RamPrefixCache(RamPrefixCache.DEFAULT_MAX_ENTRIES, 1L << 30)) {
            ModelExecutor executor = new ModelExecutor(
                    model, o.prefillStep(), 0, new PrefixReuse(cache, ModelFingerprint.of(o.model())));
            List<Double> plainMs = new ArrayList<>();
            List<Double> finishingMs = new ArrayList<>();
            List<Double> gapsMs = new ArrayList<>();
            List<Double> insertMs = new ArrayList<>();
            int sinceInsert = 0;
            Map<Integer, Long> lastToken = new HashMap<>();
            long tokens = 0;
            int next = 0;
            int done = 0;
            BatchStep step = new BatchStep(o.streams(), 0);
            long start = System.nanoTime();
            try (ExecutionBatch batch = executor.openBatch(o.streams(), o.streams())) {
                while (done < o.requests()) {
                    if (batch.rows() < o.streams() && next < o.requests()) {
                        long i0 = System.nanoTime();
                        while (batch.rows() < o.streams() && next < o.requests()) {
                            lastToken.put(batch.insert(plan(model, o, run, next)), -1L);
                            next++;
                        }
                        insertMs.add((System.nanoTime() - i0) / 1e6);
                        sinceInsert = 0;
                    }
                    boolean prompting = batch.prefillPending();
                    long t0 = System.nanoTime();
                    batch.step(step);
                    long t1 = System.nanoTime();
                    int finished = 0;
                    for (int e = 0; e < step.count; e++) {
                        StepResult r = step.results[e];
                        if (r.kind == StepResult.Kind.TOKEN) {
                            tokens++;
                            long last = lastToken.put(step.rows[e], t1);
                            if (last > 0) {
                                gapsMs.add((t1 - last) / 1e6);
                            }
                        } else if (r.kind != StepResult.Kind.PREFILLED) {
                            finished++;
                            lastToken.remove(step.rows[e]);
                        }
                    }
                    done += finished;
                    if (!prompting && step.count > 0 && sinceInsert >= SETTLED_UNITS) {
                        (finished > 0 ? finishingMs : plainMs).add((t1 - t0) / 1e6);
                    }
                    sinceInsert++;
                }
            }
            double wallS = (System.nanoTime() - start) / 1e9;
            return String.format(
                    Locale.ROOT,
                    "plain unit p50 %.1f ms (%d) | finishing unit p50 %.1f ms (%d) | insert p50 %.1f ms (%d)"
                            + " | ITL p50 %.1f p99 %.1f ms | %.1f tok/s (%d tokens, %.2f s)",
                    pct(plainMs, 0.5),
                    plainMs.size(),
                    pct(finishingMs, 0.5),
                    finishingMs.size(),
                    pct(insertMs, 0.5),
                    insertMs.size(),
                    pct(gapsMs, 0.5),
                    pct(gapsMs, 0.99),
                    tokens / wallS,
                    tokens,
                    wallS);
        }
    }

    /** Request {@code i}: a distinct prompt (per run, so no run restores another's), greedy. */
    private static ExecutionPlan plan(LanguageModel model, Options o, int run, int i) {
        int[] prompt =
                DecodeBenchmark.splitmix64Prompt(o.seed() + 1000L * run + i, o.promptTokens(), model.vocabSize());
        return ExecutionPlan.builder()
                .requestId("r" + i)
                .prompt(new PreparedPrompt(prompt, prompt.length))
                .sampling(SamplingParams.GREEDY)
                .maxTokens(o.genTokens() + (i * 7) % 13 - 6)
                .build();
    }

    private static double pct(List<Double> xs, double q) {
        if (xs.isEmpty()) {
            return Double.NaN;
        }
        List<Double> s = new ArrayList<>(xs);
        Collections.sort(s);
        return s.get(Math.min(s.size() - 1, (int) Math.ceil(q * s.size()) - 1));
    }

    static Options parse(String[] argv) {
        Path model = null;
        int streams = 16;
        int requests = 32;
        int promptTokens = 60;
        int genTokens = 44;
        int runs = 3;
        int prefill = 2048;
        long seed = 42;
        Flags f = new Flags(argv);
        while (f.next()) {
            switch (f.flag()) {
                case "--model" -> model = Path.of(f.value());
                case "--streams" -> streams = f.positive();
                case "--requests" -> requests = f.positive();
                case "--prompt-tokens" -> promptTokens = f.positive();
                case "--gen-tokens" -> genTokens = f.positive();
                case "--runs" -> runs = f.positive();
                case "--prefill-step-size" -> prefill = f.positive();
                case "--seed" -> seed = Long.parseLong(f.value());
                default -> throw f.unknown();
            }
        }
        if (model == null) {
            throw new IllegalArgumentException("--model DIR is needed");
        }
        if (genTokens < 8) {
            throw new IllegalArgumentException(
                    "--gen-tokens must be >= 8 (rows finish 6 either side of it), got " + genTokens);
        }
        return new Options(model, streams, requests, promptTokens, genTokens, runs, prefill, seed);
    }
}
