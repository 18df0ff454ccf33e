package dev.mlxring.perf;

import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.mlx.Numerics;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * What one speculative verification round costs against one plain decode step: after a prompt
 * of {@code --prompt-tokens} positions, the best time of {@code --reps} forwards of
 * {@code positions} = 1 (a plain step) to 8 (a round verifying 1..7 proposed
 * tokens), each evaluated synchronously and rolled back ({@code trim}) so every forward sees the
 * same cache; then, for 1 and 4 positions, the time per primitive ({@link Mlx#profileEval}).
 * A round of {@code m + 1} positions pays when the accepted tokens per round exceed its cost in
 * plain steps minus one.
 *
 * <pre>
 * VerifyForwardProfile --model DIR [--prompt-tokens 600] [--reps 10] [--rounds 2] [--numerics exact|fast|fast-q8]
 * </pre>
 */
public final class VerifyForwardProfile {
    private static final int[] POSITIONS = {1, 2, 3, 4, 5, 6, 7, 8};

    private VerifyForwardProfile() {}

    public static void main(String[] argv) {
        Path dir = null;
        int promptTokens = 600;
        int reps = 10;
        int rounds = 2;
        Numerics numerics = Numerics.DEFAULT;
        Flags f = new Flags(argv);
        while (f.next()) {
            switch (f.flag()) {
                case "--model" -> dir = Path.of(f.value());
                case "--prompt-tokens" -> promptTokens = f.positive();
                case "--reps" -> reps = f.positive();
                case "--rounds" -> rounds = f.positive();
                case "--numerics" -> numerics = Numerics.parse("--numerics", f.value());
                default -> throw f.unknown();
            }
        }
        if (dir == null) {
            throw new IllegalArgumentException("--model DIR is required");
        }
        Mlx.useNewDefaultStream();
        try (LanguageModel model = Models.load(dir, CpuKernels.DEFAULT, numerics, false, null)) {
            int[] prompt = DecodeBenchmark.splitmix64Prompt(42, promptTokens, model.vocabSize());
            KvCache[] cache = model.newCache();
            try {
                try (ArrayScope s = ArrayScope.open()) {
                    model.forward(Mlx.expandDims(Mlx.fromInts(prompt, prompt.length), 0), cache);
                    Mlx.eval(Arrays.stream(cache)
                            .flatMap(c -> Arrays.stream(c.state()))
                            .toArray(MlxArray[]::new));
                }
                for (int r = 0; r < rounds; r++) {
                    StringBuilder line = new StringBuilder("round " + (r + 1) + ":");
                    double one = 0;
                    for (int n : POSITIONS) {
                        double ms = bestForwardMs(model, cache, prompt, n, reps);
                        one = n == 1 ? ms : one;
                        line.append(String.format(Locale.ROOT, "  %d pos %.2f ms (%.2fx)", n, ms, ms / one));
                    }
                    System.out.println(line);
                }
                for (int n : new int[] {1, 4}) {
                    printOps(model, cache, prompt, n);
                }
            } finally {
                Arrays.stream(cache).forEach(KvCache::close);
            }
        }
    }

    private static double bestForwardMs(LanguageModel model, KvCache[] cache, int[] prompt, int n, int reps) {
        long best = Long.MAX_VALUE;
        for (int r = 0; r < reps; r++) {
            long t0 = System.nanoTime();
            try (ArrayScope s = ArrayScope.open()) {
                Mlx.eval(model.forward(Mlx.expandDims(Mlx.fromInts(Arrays.copyOf(prompt, n), n), 0), cache));
            }
            best = Math.min(best, System.nanoTime() - t0);
            for (KvCache c : cache) {
                c.trim(n);
            }
        }
        return best / 1e6;
    }

    private static void printOps(LanguageModel model, KvCache[] cache, int[] prompt, int n) {
        Map<String, Long> nsByPrimitive = new HashMap<>();
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray logits = model.forward(Mlx.expandDims(Mlx.fromInts(Arrays.copyOf(prompt, n), n), 0), cache);
            for (String line : Mlx.profileEval(logits).split("\n")) {
                String[] f = line.split("\t");
                nsByPrimitive.merge(f[0], Long.parseLong(f[f.length - 1]), Long::sum);
            }
        }
        for (KvCache c : cache) {
            c.trim(n);
        }
        System.out.println(n + " positions, per primitive:");
        nsByPrimitive.entrySet().stream()
                .sorted((x, y) -> Long.compare(y.getValue(), x.getValue()))
                .limit(6)
                .forEach(e -> System.out.printf(Locale.ROOT, "  %-28s %.2f ms%n", e.getKey(), e.getValue() / 1e6));
    }
}
