package dev.mlxring.perf;

import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.FastKernels;
import dev.mlxring.mlx.FusedDecoderBlock;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.mlx.Numerics;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.IntUnaryOperator;

/**
 * What one speculative verification round costs against one plain decode step: after a prompt
 * of {@code --prompt-tokens} positions, the best time of {@code --reps} forwards of
 * {@code positions} = 1 (a plain step) to 8 (a round verifying 1..7 proposed tokens;
 * {@code --positions} names others, e.g. a prompt chunk's 64), each evaluated synchronously and
 * rolled back ({@code trim}) so every forward sees the same cache; then, for 1 and 4 positions,
 * the time per primitive ({@link Mlx#profileEval}). With {@code --attention-rows 1,4} each
 * repetition runs once per setting of {@link FusedDecoderBlock#fastAttentionRows} (the fast
 * tiers' query heads of a group one at a time, or up to four together), in turn, and each
 * setting reports its own best: an A/B within one process, both sides under the same load;
 * {@code --q8-ahead-blocks 0,2} does the same for {@link FastKernels#q8AheadBlocks} (fast-q8's
 * prefetch of a block further on). A round of {@code m + 1} positions pays when the accepted
 * tokens per round exceed its cost in plain steps minus one.
 *
 * <pre>
 * VerifyForwardProfile --model DIR [--prompt-tokens 600] [--reps 10] [--rounds 2] [--numerics exact|fast|fast-q8]
 *                      [--positions 1,2,...,8] [--attention-rows 1,4 | --q8-ahead-blocks 0,2]
 * </pre>
 */
public final class VerifyForwardProfile {
    private static final int[] DEFAULT_POSITIONS = {1, 2, 3, 4, 5, 6, 7, 8};
    private static final String USAGE = "VerifyForwardProfile --model DIR [--prompt-tokens 600] [--reps 10]"
            + " [--rounds 2] [--numerics exact|fast|fast-q8] [--positions 1,2,...,8]"
            + " [--attention-rows 1,4 | --q8-ahead-blocks 0,2]";

    /** A process-wide kernel setting that an A/B run alternates: {@code set} returns the value before. */
    private record Knob(String name, IntUnaryOperator set, int[] values) {}

    private record Options(
            Path dir, int promptTokens, int reps, int rounds, Numerics numerics, int[] positions, Knob knob) {}

    private VerifyForwardProfile() {}

    public static void main(String[] argv) {
        Options o = Flags.parseOrExit(argv, VerifyForwardProfile::parse, USAGE);
        Path dir = o.dir();
        int promptTokens = o.promptTokens();
        int reps = o.reps();
        int rounds = o.rounds();
        Numerics numerics = o.numerics();
        Knob knob = o.knob();
        int[] positions = o.positions();
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
                int[] settings = knob.values();
                int before = knob.set().applyAsInt(-1);
                for (int r = 0; r < rounds; r++) {
                    double[][] ms = new double[settings.length][positions.length];
                    for (int i = 0; i < positions.length; i++) {
                        double[] best = bestForwardMs(model, cache, prompt, positions[i], reps, knob);
                        for (int a = 0; a < settings.length; a++) {
                            ms[a][i] = best[a];
                        }
                    }
                    for (int a = 0; a < settings.length; a++) {
                        StringBuilder line = new StringBuilder("round " + (r + 1)
                                + (knob.name().isEmpty() ? "" : " " + knob.name() + " " + settings[a]) + ":");
                        for (int i = 0; i < positions.length; i++) {
                            line.append(String.format(
                                    Locale.ROOT,
                                    "  %d pos %.2f ms (%.2fx)",
                                    positions[i],
                                    ms[a][i],
                                    ms[a][i] / ms[a][0]));
                        }
                        System.out.println(line);
                    }
                }
                knob.set().applyAsInt(before);
                for (int n : new int[] {1, 4}) {
                    printOps(model, cache, prompt, n);
                }
            } finally {
                Arrays.stream(cache).forEach(KvCache::close);
            }
        }
    }

    private static Options parse(String[] argv) {
        Path dir = null;
        int promptTokens = 600;
        int reps = 10;
        int rounds = 2;
        Numerics numerics = Numerics.DEFAULT;
        int[] positions = DEFAULT_POSITIONS;
        Knob knob = new Knob("", v -> 0, new int[] {-1});
        Flags f = new Flags(argv);
        while (f.next()) {
            switch (f.flag()) {
                case "--model" -> dir = Path.of(f.value());
                case "--prompt-tokens" -> promptTokens = f.positive();
                case "--reps" -> reps = f.positive();
                case "--rounds" -> rounds = f.positive();
                case "--numerics" -> numerics = Numerics.parse("--numerics", f.value());
                case "--positions" -> positions = list(f, 1, 4096);
                case "--attention-rows" ->
                    knob = knob(knob, "attention rows", FusedDecoderBlock::fastAttentionRows, f, 1, 4);
                case "--q8-ahead-blocks" -> knob = knob(knob, "q8 ahead blocks", FastKernels::q8AheadBlocks, f, 0, 64);
                default -> throw f.unknown();
            }
        }
        if (dir == null) {
            throw new IllegalArgumentException("--model DIR is required");
        }
        return new Options(dir, promptTokens, reps, rounds, numerics, positions, knob);
    }

    /** The flag's comma-separated settings, each within {@code min .. max}; one such flag per run. */
    private static Knob knob(Knob before, String name, IntUnaryOperator set, Flags f, int min, int max) {
        if (!before.name().isEmpty()) {
            throw new IllegalArgumentException(
                    f.flag() + ": one setting to alternate per run, already " + before.name());
        }
        return new Knob(name, set, list(f, min, max));
    }

    /** The flag's comma-separated integers, each within {@code min .. max}. */
    private static int[] list(Flags f, int min, int max) {
        List<String> parts = List.of(f.value().split(",", -1));
        int[] values = new int[parts.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = Flags.integer(f.flag(), parts.get(i).strip());
            if (values[i] < min || values[i] > max) {
                throw new IllegalArgumentException(f.flag() + " takes values " + min + ".." + max + ", got "
                        + parts.get(i).strip());
            }
        }
        return values;
    }

    /** Per setting of the knob (a negative one leaves it as it is), the best of {@code reps} forwards, in ms. */
    private static double[] bestForwardMs(
            LanguageModel model, KvCache[] cache, int[] prompt, int n, int reps, Knob knob) {
        int[] settings = knob.values();
        long[] best = new long[settings.length];
        Arrays.fill(best, Long.MAX_VALUE);
        for (int r = 0; r < reps; r++) {
            for (int a = 0; a < settings.length; a++) {
                if (settings[a] >= 0) {
                    knob.set().applyAsInt(settings[a]);
                }
                long t0 = System.nanoTime();
                try (ArrayScope s = ArrayScope.open()) {
                    Mlx.eval(model.forward(Mlx.expandDims(Mlx.fromInts(Arrays.copyOf(prompt, n), n), 0), cache));
                }
                best[a] = Math.min(best[a], System.nanoTime() - t0);
                for (KvCache c : cache) {
                    c.trim(n);
                }
            }
        }
        return Arrays.stream(best).mapToDouble(ns -> ns / 1e6).toArray();
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
