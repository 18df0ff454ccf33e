package dev.mlxring.perf;

import dev.mlxring.exec.batch.BatchGenerator;
import dev.mlxring.exec.batch.BatchRequest;
import dev.mlxring.exec.batch.BatchToken;
import dev.mlxring.exec.generate.GenerateStep;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.pipeline.SamplingParams;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * In-process measurements of the batch mechanics ({@link BatchGenerator}), greedy, no stop ids:
 *
 * <ol>
 *   <li><b>B=1 ratio</b>: a lone row through the generator against the serial path
 *       ({@link GenerateStep}), alternating run by run; decode tok/s = (tokens - 1) / time from
 *       the first token to the last, as DecodeBenchmark.</li>
 *   <li><b>Aggregate</b> at each {@code --rows N}: N distinct prompts inserted at once; decode
 *       tok/s over the span in which all N rows generate (tokens in it / its wall time), and the
 *       median step time (every row's inter-token latency).</li>
 *   <li><b>Prefill stall</b>: two generating rows, then a {@code --joiner-tokens} prompt joins;
 *       the running rows' step time before it joined (median) and while it prefilled (max: one
 *       {@code --prefill-step-size} chunk's forward rides on each step).</li>
 * </ol>
 *
 * <pre>
 * BatchDecodeBenchmark --model DIR [--prompt-tokens 64] [--gen-tokens 48] [--runs 3]
 *                      [--rows 1,2,4,8] [--joiner-tokens 512] [--prefill-step-size 128] [--seed 42]
 * </pre>
 */
public final class BatchDecodeBenchmark {
    record Options(
            Path model,
            int promptTokens,
            int genTokens,
            int runs,
            int[] rows,
            int joinerTokens,
            int prefillStep,
            long seed) {}

    private static final String USAGE = "BatchDecodeBenchmark --model DIR [--prompt-tokens 64] [--gen-tokens 48]"
            + " [--runs 3] [--rows 1,2,4,8] [--joiner-tokens 512] [--prefill-step-size 128] [--seed 42]";

    private BatchDecodeBenchmark() {}

    public static void main(String[] argv) throws Exception {
        Options o = Flags.parseOrExit(argv, BatchDecodeBenchmark::parse, USAGE);
        try (LanguageModel model = Models.load(o.model())) {
            int vocab = model.vocabSize();
            int[] prompt = DecodeBenchmark.splitmix64Prompt(o.seed(), o.promptTokens(), vocab);
            serial(model, prompt, o); // warm-up
            lone(model, prompt, o);
            List<Double> serial = new ArrayList<>();
            List<Double> lone = new ArrayList<>();
            for (int i = 0; i < o.runs(); i++) {
                serial.add(serial(model, prompt, o));
                lone.add(lone(model, prompt, o));
            }
            double s = median(serial);
            double l = median(lone);
            System.out.printf(
                    Locale.ROOT,
                    "B=1 decode tok/s: serial %s median %.2f | lone row %s median %.2f | ratio %.3f%n",
                    fmt(serial),
                    s,
                    fmt(lone),
                    l,
                    l / s);
            for (int n : o.rows()) {
                List<Double> agg = new ArrayList<>();
                List<Double> step = new ArrayList<>();
                long peak = 0;
                for (int i = 0; i < o.runs(); i++) {
                    Mlx.resetPeakMemory();
                    double[] r = aggregate(model, o, n, vocab);
                    agg.add(r[0]);
                    step.add(r[1]);
                    peak = Math.max(peak, Mlx.memory().peakBytes());
                }
                System.out.printf(
                        Locale.ROOT,
                        "rows %d: aggregate decode tok/s %s median %.2f | step ms median %.1f | peak %.1f MB%n",
                        n,
                        fmt(agg),
                        median(agg),
                        median(step),
                        peak / 1e6);
            }
            double[] stall = stall(model, o, vocab);
            System.out.printf(
                    Locale.ROOT,
                    "prefill stall: running rows' step %.1f ms before a %d-token joiner, max %.1f ms while it "
                            + "prefilled in chunks of %d (%d steps)%n",
                    stall[0],
                    o.joinerTokens(),
                    stall[1],
                    o.prefillStep(),
                    (int) stall[2]);
        }
    }

    private static double serial(LanguageModel model, int[] prompt, Options o) {
        long[] times = new long[2];
        int[] count = {0};
        GenerateStep.run(
                model,
                prompt,
                new GenerationOptions(o.genTokens(), o.prefillStep(), new int[0], false),
                SamplingParams.GREEDY,
                null,
                (token, logprobs) -> {
                    long now = System.nanoTime();
                    if (count[0]++ == 0) {
                        times[0] = now;
                    }
                    times[1] = now;
                    return true;
                });
        return (count[0] - 1) / ((times[1] - times[0]) / 1e9);
    }

    private static double lone(LanguageModel model, int[] prompt, Options o) {
        long first = 0;
        long last = 0;
        int count = 0;
        try (BatchGenerator gen = new BatchGenerator(model, o.prefillStep(), 8, 8, null)) {
            gen.insert(new BatchRequest(prompt, o.genTokens(), SamplingParams.GREEDY, new int[0]));
            while (!gen.idle()) {
                List<BatchToken> tokens = gen.next();
                if (!tokens.isEmpty()) {
                    long now = System.nanoTime();
                    if (count == 0) {
                        first = now;
                    }
                    last = now;
                    count += tokens.size();
                }
            }
        }
        return (count - 1) / ((last - first) / 1e9);
    }

    /** {aggregate tok/s, median step ms} with {@code n} rows from the start. */
    private static double[] aggregate(LanguageModel model, Options o, int n, int vocab) {
        List<Long> steps = new ArrayList<>();
        long start = 0;
        long end = 0;
        int tokens = 0;
        try (BatchGenerator gen = new BatchGenerator(model, o.prefillStep(), n, n, null)) {
            for (int i = 0; i < n; i++) {
                gen.insert(new BatchRequest(
                        DecodeBenchmark.splitmix64Prompt(o.seed() + 1 + i, o.promptTokens(), vocab),
                        o.genTokens(),
                        SamplingParams.GREEDY,
                        new int[0]));
            }
            long prev = 0;
            while (!gen.idle()) {
                List<BatchToken> out = gen.next();
                long now = System.nanoTime();
                if (out.size() == n) {
                    if (start == 0) {
                        start = now;
                    } else {
                        steps.add(now - prev);
                        tokens += n;
                    }
                    end = now;
                }
                prev = now;
            }
        }
        List<Double> ms = steps.stream().map(t -> t / 1e6).toList();
        return new double[] {tokens / ((end - start) / 1e9), median(new ArrayList<>(ms))};
    }

    /** {median step ms before the joiner, max step ms while it prefilled, steps it took}. */
    private static double[] stall(LanguageModel model, Options o, int vocab) {
        List<Double> before = new ArrayList<>();
        double max = 0;
        int during = 0;
        try (BatchGenerator gen = new BatchGenerator(model, o.prefillStep(), 8, 8, null)) {
            int budget = o.genTokens() + o.joinerTokens() / o.prefillStep() + 16;
            for (int i = 0; i < 2; i++) {
                gen.insert(new BatchRequest(
                        DecodeBenchmark.splitmix64Prompt(o.seed() + 100 + i, o.promptTokens(), vocab),
                        budget,
                        SamplingParams.GREEDY,
                        new int[0]));
            }
            int generating = 0;
            long prev = System.nanoTime();
            boolean joined = false;
            for (int step = 0; step < 10_000 && !gen.idle(); step++) {
                if (!joined && generating >= 2 && before.size() >= 8) {
                    gen.insert(new BatchRequest(
                            DecodeBenchmark.splitmix64Prompt(o.seed() + 200, o.joinerTokens(), vocab),
                            4,
                            SamplingParams.GREEDY,
                            new int[0]));
                    joined = true;
                }
                List<BatchToken> out = gen.next();
                long now = System.nanoTime();
                double ms = (now - prev) / 1e6;
                prev = now;
                generating = gen.generating();
                if (out.size() >= 2 && !joined && generating == 2) {
                    before.add(ms);
                } else if (joined && gen.prefilling() > 0) {
                    max = Math.max(max, ms);
                    during++;
                } else if (joined) {
                    break;
                }
            }
        }
        return new double[] {median(before), max, during};
    }

    private static double median(List<Double> xs) {
        if (xs.isEmpty()) {
            return Double.NaN;
        }
        double[] a = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
    }

    private static String fmt(List<Double> xs) {
        return xs.stream()
                .map(x -> String.format(Locale.ROOT, "%.1f", x))
                .toList()
                .toString();
    }

    static Options parse(String[] argv) {
        Path model = null;
        int promptTokens = 64;
        int genTokens = 48;
        int runs = 3;
        int[] rows = {1, 2, 4, 8};
        int joiner = 512;
        int prefill = 128;
        long seed = 42;
        Flags f = new Flags(argv);
        while (f.next()) {
            switch (f.flag()) {
                case "--model" -> model = Path.of(f.value());
                case "--prompt-tokens" -> promptTokens = f.positive();
                case "--gen-tokens" -> genTokens = f.positive();
                case "--runs" -> runs = f.positive();
                case "--rows" ->
                    rows = Arrays.stream(f.value().split(","))
                            .mapToInt(s -> {
                                int v = Integer.parseInt(s.trim());
                                if (v <= 0) {
                                    throw new IllegalArgumentException("--rows entries must be > 0, got " + v);
                                }
                                return v;
                            })
                            .toArray();
                case "--joiner-tokens" -> joiner = f.positive();
                case "--prefill-step-size" -> prefill = f.positive();
                case "--seed" -> seed = Long.parseLong(f.value());
                default -> throw f.unknown();
            }
        }
        if (model == null) {
            throw new IllegalArgumentException("--model DIR is needed");
        }
        if (genTokens < 3) {
            throw new IllegalArgumentException("--gen-tokens must be >= 3 to time decoding, got " + genTokens);
        }
        return new Options(model, promptTokens, genTokens, runs, rows, joiner, prefill, seed);
    }
}
