package dev.mlxring.perf;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.kv.BatchKvCache;
import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.FastBlockPhases;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.mlx.Numerics;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Where one batched decode step's time goes: {@code --rows} rows of ragged prompts ({@code
 * --prompt-tokens} + 3 r tokens for row r) prefilled alone and merged into left-padded batch
 * caches, as the batch generator holds them; then greedy decode steps of all rows at once (one
 * forward of {@code [rows, 1]} tokens, argmax, read back). Prints the median step time and
 * aggregate tok/s over {@code --steps} steps, and the process's CPU time per step (clock ticks of 10 ms
 * assumed, Linux's usual USER_HZ); the step's arithmetic (the projections' and head's
 * multiply-adds, attention's over the rows' filled positions) against the time, as GFLOP/s and as
 * a share of {@code --peak-gflops} (the CPU's float32 FMA peak, when given); one step evaluated a
 * primitive at a time ({@link Mlx#profileEval}: time by primitive); and, with {@code
 * MLXR_FAST_BLOCK_PHASES=1} in the environment and {@code --numerics fast}, the fused blocks'
 * time by phase over the timed steps.
 *
 * <p>With {@code --join on}, then: the last row leaves ({@code filter}), two steps run, a new row
 * of {@code --prompt-tokens} tokens prefilled alone joins ({@code extend}), and the step after the
 * join is evaluated a primitive at a time, the join's cache writes included (in a served batch
 * they run with that step), then the step after it.
 *
 * <pre>
 * BatchStepProfile --model DIR [--numerics exact|fast|fast-q8] [--rows 16] [--prompt-tokens 64] [--steps 32]
 *                  [--peak-gflops G] [--join off|on]
 * </pre>
 */
public final class BatchStepProfile {
    record Options(
            Path model, Numerics numerics, int rows, int promptTokens, int steps, double peakGflops, boolean join) {}

    private static final String USAGE = "BatchStepProfile --model DIR [--numerics exact|fast|fast-q8] [--rows 16]"
            + " [--prompt-tokens 64] [--steps 32] [--peak-gflops G] [--join on|off]";

    private BatchStepProfile() {}

    public static void main(String[] argv) throws Exception {
        Options o = Flags.parseOrExit(argv, BatchStepProfile::parse, USAGE);
        JsonNode config =
                new ObjectMapper().readTree(o.model().resolve("config.json").toFile());
        try (LanguageModel model = Models.load(o.model(), CpuKernels.NATIVE, o.numerics(), null)) {
            int rows = o.rows();
            KvCache[] batch = null;
            int[] next = new int[rows];
            int[] filled = new int[rows];
            try {
                batch = prefill(model, o, next, filled);
                for (int i = 0; i < 4; i++) {
                    next = step(model, batch, next, rows); // warm-up
                    increment(filled);
                }
                FastBlockPhases.read(); // zero the warm-up's phases
                List<Double> stepMs = new ArrayList<>();
                double flops = 0;
                double cpu0 = processCpuMs();
                for (int i = 0; i < o.steps(); i++) {
                    flops += stepFlops(config, filled);
                    long t0 = System.nanoTime();
                    next = step(model, batch, next, rows);
                    stepMs.add((System.nanoTime() - t0) / 1e6);
                    increment(filled);
                }
                double cpuMsPerStep = (processCpuMs() - cpu0) / o.steps();
                FastBlockPhases.Reading phases = FastBlockPhases.read();
                double totalS = stepMs.stream().mapToDouble(Double::doubleValue).sum() / 1e3;
                double median = median(stepMs);
                double gflops = flops / totalS / 1e9;
                System.out.printf(
                        Locale.ROOT,
                        "%s, %s, %d rows: step ms median %.1f (min %.1f, max %.1f) over %d steps, aggregate"
                                + " %.1f tok/s; process CPU %.1f ms per step; %.2f GFLOP per step, %.1f GFLOP/s%s%n",
                        o.model().getFileName(),
                        o.numerics().cliName(),
                        rows,
                        median,
                        stepMs.stream().mapToDouble(Double::doubleValue).min().orElse(0),
                        stepMs.stream().mapToDouble(Double::doubleValue).max().orElse(0),
                        stepMs.size(),
                        rows / (median / 1e3),
                        cpuMsPerStep,
                        flops / o.steps() / 1e9,
                        gflops,
                        o.peakGflops() > 0
                                ? String.format(
                                        Locale.ROOT,
                                        " = %.1f%% of the %.0f GFLOP/s float32 peak",
                                        100 * gflops / o.peakGflops(),
                                        o.peakGflops())
                                : "");
                if (phases != null && phases.blocks() > 0) {
                    long sum = Arrays.stream(phases.phaseNs()).sum();
                    System.out.printf(
                            Locale.ROOT,
                            "fused blocks: %.1f ms per step (%d blocks per step)%n",
                            sum / 1e6 / o.steps(),
                            phases.blocks() / o.steps());
                    for (int p = 0; p < FastBlockPhases.NAMES.size(); p++) {
                        System.out.printf(
                                Locale.ROOT,
                                "  %-20s %7.2f ms per step  %5.1f%%%n",
                                FastBlockPhases.NAMES.get(p),
                                phases.phaseNs()[p] / 1e6 / o.steps(),
                                100.0 * phases.phaseNs()[p] / sum);
                    }
                }
                printPrimitives(model, batch, next, rows);
                if (o.join() && rows >= 2) {
                    next = join(model, o, batch, next);
                    System.out.println("the step after a row left and another joined:");
                    printPrimitives(model, batch, next, next.length);
                    next = step(model, batch, next, next.length);
                    System.out.println("the step after that:");
                    printPrimitives(model, batch, next, next.length);
                }
            } finally {
                if (batch != null) {
                    for (KvCache c : batch) {
                        c.close();
                    }
                }
            }
        }
    }

    /** Each row's prompt alone into its own caches, then every layer's caches merged into one batch. */
    private static KvCache[] prefill(LanguageModel model, Options o, int[] next, int[] filled) {
        int rows = o.rows();
        KvCache[][] alone = new KvCache[rows][];
        try {
            for (int r = 0; r < rows; r++) {
                int[] prompt = DecodeBenchmark.splitmix64Prompt(42 + r, o.promptTokens() + 3 * r, model.vocabSize());
                alone[r] = model.newCache();
                try (ArrayScope s = ArrayScope.open()) {
                    MlxArray logits = model.forward(Mlx.fromInts(prompt, 1, prompt.length), alone[r]);
                    next[r] = Mlx.argmax(logits, -1, false).toIntArray()[prompt.length - 1];
                }
                filled[r] = prompt.length;
            }
            KvCache[] batch = new KvCache[alone[0].length];
            for (int layer = 0; layer < batch.length; layer++) {
                DenseKvCache[] caches = new DenseKvCache[rows];
                for (int r = 0; r < rows; r++) {
                    caches[r] = (DenseKvCache) alone[r][layer];
                }
                try (ArrayScope s = ArrayScope.open()) {
                    BatchKvCache merged = BatchKvCache.merge(caches);
                    Mlx.eval(merged.state());
                    batch[layer] = merged;
                }
            }
            return batch;
        } finally {
            for (KvCache[] caches : alone) {
                if (caches != null) {
                    for (KvCache c : caches) {
                        c.close();
                    }
                }
            }
        }
    }

    /**
     * The last row leaves, two steps run, then a row of {@code --prompt-tokens} tokens prefilled
     * alone joins, its caches merged into a one-row batch and appended ({@code extend}); returns the
     * rows' next tokens (the joiner's last: its prompt's greedy next). The join's cache writes are
     * built, not evaluated.
     */
    private static int[] join(LanguageModel model, Options o, KvCache[] batch, int[] next) {
        int rows = next.length;
        int[] keep = new int[rows - 1];
        for (int i = 0; i < keep.length; i++) {
            keep[i] = i;
        }
        for (KvCache c : batch) {
            ((BatchKvCache) c).filter(keep);
        }
        int[] tokens = java.util.Arrays.copyOf(next, rows - 1);
        tokens = step(model, batch, tokens, rows - 1);
        tokens = step(model, batch, tokens, rows - 1);
        int[] prompt = DecodeBenchmark.splitmix64Prompt(4242, o.promptTokens(), model.vocabSize());
        KvCache[] alone = model.newCache();
        int first;
        try {
            try (ArrayScope s = ArrayScope.open()) {
                MlxArray logits = model.forward(Mlx.fromInts(prompt, 1, prompt.length), alone);
                first = Mlx.argmax(logits, -1, false).toIntArray()[prompt.length - 1];
            }
            for (int layer = 0; layer < batch.length; layer++) {
                try (ArrayScope s = ArrayScope.open()) {
                    ((BatchKvCache) batch[layer]).extend(BatchKvCache.merge((DenseKvCache) alone[layer]));
                }
            }
        } finally {
            for (KvCache c : alone) {
                c.close();
            }
        }
        int[] joined = java.util.Arrays.copyOf(tokens, rows);
        joined[rows - 1] = first;
        return joined;
    }

    /** One greedy decode step of all rows: their next tokens. */
    private static int[] step(LanguageModel model, KvCache[] batch, int[] tokens, int rows) {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray logits = model.forward(Mlx.fromInts(tokens, rows, 1), batch);
            return Mlx.argmax(model.cpuKernels(), logits, -1, false).toIntArray();
        }
    }

    /** One step evaluated a primitive at a time: milliseconds by primitive name, largest first. */
    private static void printPrimitives(LanguageModel model, KvCache[] batch, int[] tokens, int rows) {
        Map<String, long[]> byName = new LinkedHashMap<>();
        long total = 0;
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray logits = model.forward(Mlx.fromInts(tokens, rows, 1), batch);
            for (String line : Mlx.profileEval(Mlx.argmax(model.cpuKernels(), logits, -1, false))
                    .split("\n")) {
                if (line.isEmpty()) {
                    continue;
                }
                String name = line.substring(0, line.indexOf('\t'));
                long ns = Long.parseLong(line.substring(line.lastIndexOf('\t') + 1));
                long[] acc = byName.computeIfAbsent(name, k -> new long[2]);
                acc[0] += ns;
                acc[1]++;
                total += ns;
            }
        }
        System.out.printf(Locale.ROOT, "one step a primitive at a time: %.1f ms%n", total / 1e6);
        long all = total;
        byName.entrySet().stream()
                .sorted((a, b) -> Long.compare(b.getValue()[0], a.getValue()[0]))
                .limit(12)
                .forEach(e -> System.out.printf(
                        Locale.ROOT,
                        "  %-28s x%-4d %7.2f ms  %5.1f%%%n",
                        e.getKey(),
                        e.getValue()[1],
                        e.getValue()[0] / 1e6,
                        100.0 * e.getValue()[0] / all));
    }

    /**
     * A decode step's floating-point operations (2 per multiply-add): every row through the
     * block's seven projections and the head, and attention's scores and weighted values over
     * each row's filled positions (this step's included).
     */
    static double stepFlops(JsonNode c, int[] filled) {
        long d = c.get("hidden_size").asLong();
        long inter = c.get("intermediate_size").asLong();
        long heads = c.get("num_attention_heads").asLong();
        long kvHeads = c.path("num_key_value_heads").asLong(heads);
        long headDim = c.path("head_dim").asLong(d / heads);
        long layers = c.get("num_hidden_layers").asLong();
        long vocab = c.get("vocab_size").asLong();
        long perLayer = d * heads * headDim + 2 * d * kvHeads * headDim + heads * headDim * d + 3 * d * inter;
        double macs = 0;
        for (int f : filled) {
            macs += layers * perLayer + d * vocab + layers * 2.0 * heads * headDim * (f + 1);
        }
        return 2 * macs;
    }

    /**
     * This process's CPU time (user + system, all threads) in ms, from {@code /proc/self/stat}: on
     * a shared machine it moves less with the other load than wall time does.
     */
    private static double processCpuMs() {
        try {
            String stat = java.nio.file.Files.readString(Path.of("/proc/self/stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            // fields 14 and 15 of the line (utime, stime) are 12 and 13 after the name
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10.0;
        } catch (java.io.IOException | RuntimeException e) {
            return Double.NaN;
        }
    }

    private static void increment(int[] filled) {
        for (int i = 0; i < filled.length; i++) {
            filled[i]++;
        }
    }

    private static double median(List<Double> xs) {
        double[] a = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
    }

    static Options parse(String[] argv) {
        Path model = null;
        Numerics numerics = Numerics.DEFAULT;
        int rows = 16;
        int promptTokens = 64;
        int steps = 32;
        double peak = 0;
        boolean join = false;
        Flags f = new Flags(argv);
        while (f.next()) {
            switch (f.flag()) {
                case "--model" -> model = Path.of(f.value());
                case "--numerics" -> numerics = Numerics.parse("--numerics", f.value());
                case "--rows" -> rows = f.positive();
                case "--prompt-tokens" -> promptTokens = f.positive();
                case "--steps" -> steps = f.positive();
                case "--peak-gflops" -> peak = Double.parseDouble(f.value());
                case "--join" ->
                    join = switch (f.value()) {
                        case "on" -> true;
                        case "off" -> false;
                        default -> throw new IllegalArgumentException("--join must be on or off, got " + f.value());
                    };
                default -> throw f.unknown();
            }
        }
        if (model == null) {
            throw new IllegalArgumentException("--model DIR is needed");
        }
        return new Options(model, numerics, rows, promptTokens, steps, peak, join);
    }
}
