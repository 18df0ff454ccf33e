package dev.mlxring.perf;

import dev.mlxring.exec.batch.BatchGenerator;
import dev.mlxring.exec.batch.BatchRequest;
import dev.mlxring.exec.batch.BatchToken;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.nn.AdapterCache;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Numerics;
import dev.mlxring.pipeline.SamplingParams;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Decode speed with named adapters ({@code serve --adapter}), in-process through one
 * {@link BatchGenerator} over a model built with adapter slots, greedy, no stop ids; each pair
 * alternates run by run:
 *
 * <ol>
 *   <li><b>B=1</b>: a lone row on the first adapter against a lone row on the base model
 *       (decode tok/s = (tokens - 1) / time from its first token to its last).</li>
 *   <li><b>8 rows</b>: 8 rows inserted together over every adapter given (round robin) against 8
 *       rows on the first adapter alone (aggregate decode tok/s over the span in which all 8
 *       generate).</li>
 * </ol>
 *
 * <pre>
 * AdapterDecodeBenchmark --model DIR --adapter NAME=DIR [--adapter NAME=DIR ...]
 *                        [--prompt-tokens 64] [--gen-tokens 32] [--runs 5] [--seed 42]
 * </pre>
 */
public final class AdapterDecodeBenchmark {
    private static final String USAGE = "AdapterDecodeBenchmark --model DIR --adapter NAME=DIR [--adapter NAME=DIR ...]"
            + " [--prompt-tokens 64] [--gen-tokens 32] [--runs 5] [--seed 42]";

    record Options(Path model, Map<String, Path> adapters, int promptTokens, int genTokens, int runs, long seed) {}

    private AdapterDecodeBenchmark() {}

    static Options parse(String[] argv) {
        Path model = null;
        Map<String, Path> adapters = new LinkedHashMap<>();
        int promptTokens = 64;
        int genTokens = 32;
        int runs = 5;
        long seed = 42;
        for (int i = 0; i < argv.length; i += 2) {
            if (i + 1 >= argv.length) {
                throw new IllegalArgumentException(argv[i] + " needs a value");
            }
            String v = argv[i + 1];
            switch (argv[i]) {
                case "--model" -> model = Path.of(v);
                case "--adapter" -> {
                    int eq = v.indexOf('=');
                    if (eq <= 0) {
                        throw new IllegalArgumentException("--adapter takes NAME=DIR, got " + v);
                    }
                    adapters.put(v.substring(0, eq), Path.of(v.substring(eq + 1)));
                }
                case "--prompt-tokens" -> promptTokens = Integer.parseInt(v);
                case "--gen-tokens" -> genTokens = Integer.parseInt(v);
                case "--runs" -> runs = Integer.parseInt(v);
                case "--seed" -> seed = Long.parseLong(v);
                default -> throw new IllegalArgumentException("unknown flag " + argv[i]);
            }
        }
        if (model == null || adapters.isEmpty()) {
            throw new IllegalArgumentException("--model and at least one --adapter are required");
        }
        return new Options(model, adapters, promptTokens, genTokens, runs, seed);
    }

    public static void main(String[] argv) throws Exception {
        Options o = Flags.parseOrExit(argv, AdapterDecodeBenchmark::parse, USAGE);
        try (LanguageModel model = Models.load(o.model(), CpuKernels.DEFAULT, Numerics.EXACT, false, null, null, true);
                AdapterCache cache = new AdapterCache(model.adapterSlots(), o.adapters(), Long.MAX_VALUE)) {
            cache.validate();
            List<String> names = new ArrayList<>(o.adapters().keySet());
            String first = names.getFirst();
            List<String> base1 = java.util.Collections.singletonList(null);
            List<String> adapted1 = List.of(first);
            List<String> one8 = new ArrayList<>();
            List<String> many8 = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                one8.add(first);
                many8.add(names.get(i % names.size()));
            }
            run(model, cache, base1, o); // warm-up
            run(model, cache, many8, o);
            List<Double> base = new ArrayList<>();
            List<Double> adapted = new ArrayList<>();
            List<Double> one = new ArrayList<>();
            List<Double> many = new ArrayList<>();
            for (int i = 0; i < o.runs(); i++) {
                base.add(run(model, cache, base1, o));
                adapted.add(run(model, cache, adapted1, o));
                one.add(run(model, cache, one8, o));
                many.add(run(model, cache, many8, o));
            }
            System.out.printf(
                    Locale.ROOT,
                    "B=1 decode tok/s: base %s median %.2f | adapter %s median %.2f | ratio %.3f%n",
                    fmt(base),
                    median(base),
                    fmt(adapted),
                    median(adapted),
                    median(adapted) / median(base));
            System.out.printf(
                    Locale.ROOT,
                    "8 rows aggregate decode tok/s: one adapter %s median %.2f | %d adapters %s median %.2f | ratio %.3f%n",
                    fmt(one),
                    median(one),
                    names.size(),
                    fmt(many),
                    median(many),
                    median(many) / median(one));
        }
    }

    /** Aggregate decode tok/s of rows inserted together, row i on {@code adapters.get(i)} (null: base). */
    private static double run(LanguageModel model, AdapterCache cache, List<String> adapters, Options o) {
        int n = adapters.size();
        long start = 0;
        long end = 0;
        int tokens = 0;
        try (BatchGenerator gen = new BatchGenerator(model, 2048, n, n, null)) {
            for (int i = 0; i < n; i++) {
                String a = adapters.get(i);
                gen.insert(
                        new BatchRequest(
                                DecodeBenchmark.splitmix64Prompt(o.seed() + 1 + i, o.promptTokens(), model.vocabSize()),
                                null,
                                o.genTokens(),
                                SamplingParams.GREEDY,
                                new int[0],
                                null,
                                null,
                                null,
                                a == null ? null : cache.lease(a)),
                        null,
                        new int[0]);
            }
            while (!gen.idle()) {
                List<BatchToken> out = gen.next();
                long now = System.nanoTime();
                if (out.size() == n) {
                    if (start == 0) {
                        start = now;
                    } else {
                        tokens += n;
                    }
                    end = now;
                }
            }
        }
        return tokens / ((end - start) / 1e9);
    }

    private static double median(List<Double> xs) {
        List<Double> s = new ArrayList<>(xs);
        s.sort(Double::compare);
        int m = s.size() / 2;
        return s.size() % 2 == 1 ? s.get(m) : (s.get(m - 1) + s.get(m)) / 2;
    }

    private static String fmt(List<Double> xs) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < xs.size(); i++) {
            b.append(i == 0 ? "" : " ").append(String.format(Locale.ROOT, "%.1f", xs.get(i)));
        }
        return b.append(']').toString();
    }
}
