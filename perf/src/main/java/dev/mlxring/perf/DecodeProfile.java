package dev.mlxring.perf;

import dev.mlxring.exec.generate.DecodeTiming;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationRun;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.mlx.Numerics;
import dev.mlxring.pipeline.SamplingParams;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Where a decode token's time goes on our side; {@code scripts/bench/mlxlm_profile.py} is the
 * same harness over mlx-lm. It runs the engine's decode loop itself ({@code GenerationRun}, greedy:
 * same graph, same async_eval pipelining, clear_cache every 256 tokens) and times its parts through
 * the run's profiling hook ({@link DecodeTiming}):
 *
 * <ul>
 *   <li>{@code build}: building one step's graph on the host (model forward, last-position slice,
 *       logsumexp, argmax), i.e. the per-token host overhead: FFM calls, MlxArray/ArrayScope
 *       bookkeeping, and MLX's C++ graph construction;
 *   <li>{@code async}: the {@code async_eval} call (graph submission);
 *   <li>{@code wait}: blocking in {@code item()} for the previous token;
 *   <li>{@code sync} mode: the same step built and then evaluated synchronously, so build and
 *       compute do not overlap ({@code compute} = eval time).
 * </ul>
 *
 * {@code --ops RUNS} instead (RUNS times) evaluates each decode step one primitive at a time ({@code Mlx.profileEval})
 * and prints the per-token time of each kind of primitive (quantized matmuls by shape).
 *
 * <p>Plus a micro-benchmark of the bare per-op cost: {@code add} of two 1-element arrays, graph only
 * (no eval), created and freed in a scope.
 *
 * <pre>
 * DecodeProfile --model DIR [--prompt-tokens 128] [--gen-tokens 64] [--runs 3] [--seed 42] [--build-loop-s S] [--ops RUNS]
 *               [--numerics exact|fast|fast-q8] [--dequantized-weights off|on]
 * </pre>
 */
public final class DecodeProfile {
    private DecodeProfile() {}

    /**
     * Prefill of {@code prompt[:-1]} in one chunk as the engine does it ({@code GenerationRun}: the
     * forward pass's scope, i.e. the Java handles of every intermediate, is closed before the cache
     * state is evaluated, as in Python where the forward's locals are gone by then) or with the
     * cache state evaluated while that scope is still open. Both end with clear_cache, as the
     * engine's chunk does. Returns {seconds, peak bytes}.
     */
    private static double[] prefillMemory(LanguageModel model, int[] prompt, boolean closeScopeFirst) {
        Mlx.synchronize();
        Mlx.clearCache();
        int n = prompt.length - 1;
        double s;
        if (closeScopeFirst) {
            GenerationOptions oneChunk = new GenerationOptions(1, Math.max(1, n), new int[0], false);
            try (GenerationRun run = new GenerationRun(model, prompt, oneChunk, SamplingParams.GREEDY, null)) {
                long t0 = System.nanoTime(); // after the run's resetPeakMemory
                run.advance(); // the prefill chunk
                s = (System.nanoTime() - t0) / 1e9;
            }
        } else {
            Mlx.resetPeakMemory();
            KvCache[] cache = model.newCache();
            long t0 = System.nanoTime();
            try (ArrayScope scope = ArrayScope.open()) {
                model.forward(Mlx.expandDims(Mlx.fromInts(Arrays.copyOfRange(prompt, 0, n), n), 0), cache);
                Mlx.eval(Arrays.stream(cache)
                        .flatMap(c -> Arrays.stream(c.state()))
                        .toArray(MlxArray[]::new));
            }
            Mlx.clearCache();
            s = (System.nanoTime() - t0) / 1e9;
            for (KvCache c : cache) {
                c.close();
            }
        }
        long peak = Mlx.memory().peakBytes();
        Mlx.clearCache();
        return new double[] {s, peak};
    }

    /** ns per {@code add} of two scalars, graph only, freed by the scope. */
    private static double opOverhead(int n) {
        try (ArrayScope outer = ArrayScope.open()) {
            MlxArray a = Mlx.fromInts(new int[] {1}, 1);
            MlxArray b = Mlx.fromInts(new int[] {2}, 1);
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i += 100) {
                try (ArrayScope s = ArrayScope.open()) {
                    for (int j = 0; j < 100; j++) {
                        Mlx.add(a, b);
                    }
                }
            }
            return (System.nanoTime() - t0) / (double) n;
        }
    }

    /**
     * ms per decode-step graph built and thrown away, never evaluated: one token through the model
     * with fresh (empty) caches, the last-position slice, logsumexp and argmax. Nothing but host
     * work (our Java code, the FFM calls, MLX's C++ op construction and teardown), so it can be
     * profiled in isolation ({@code --build-loop-s}).
     */
    private static double buildLoop(LanguageModel model, double seconds) {
        long[] stepsAndNs = DecodeTiming.buildOnly(model, seconds);
        return stepsAndNs[1] / 1e6 / stepsAndNs[0];
    }

    /**
     * One eval's dispatch, the cost {@link Mlx#profileEval} adds per primitive: a chain of 1-element
     * adds evaluated one at a time, ns per add.
     */
    private static double profileDispatchNs(int n) {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray one = Mlx.fromInts(new int[] {1}, 1);
            MlxArray a = one;
            for (int i = 0; i < n; i++) {
                a = Mlx.add(a, one);
            }
            long total = 0;
            for (String line : Mlx.profileEval(a).split("\n")) {
                total += Long.parseLong(line.substring(line.lastIndexOf('\t') + 1));
            }
            return total / (double) n;
        }
    }

    /**
     * Per-token time by primitive over the reported steps: quantized matmuls by their N×K, every
     * other primitive by name, largest first, then the sum and the dispatch share in it.
     */
    private static void printOps(String model, int run, List<String> steps) {
        double dispatch = profileDispatchNs(2000);
        Map<String, long[]> byKey = new HashMap<>();
        long total = 0;
        int ops = 0;
        for (String step : steps) {
            for (String line : step.split("\n")) {
                String[] f = line.split("\t");
                long ns = Long.parseLong(f[3]);
                String key = f[0];
                if (key.contains("QuantizedMatmul")) {
                    String[] ins = f[2].substring(1, f[2].length() - 1).split("\\]\\[");
                    String[] x = ins[0].split("x");
                    key += " N=" + f[1].substring(f[1].lastIndexOf('x') + 1, f[1].length() - 1) + " K="
                            + x[x.length - 1];
                }
                long[] acc = byKey.computeIfAbsent(key, k -> new long[2]);
                acc[0]++;
                acc[1] += ns;
                total += ns;
                ops++;
            }
        }
        int n = steps.size();
        System.out.printf(
                Locale.ROOT,
                "%s run %d: per token, one primitive at a time (%d steps, %.0f primitives/step,"
                        + " %.1f us eval dispatch per primitive included):%n",
                model,
                run,
                n,
                ops / (double) n,
                dispatch / 1e3);
        byKey.entrySet().stream()
                .sorted((a, b) -> Long.compare(b.getValue()[1], a.getValue()[1]))
                .forEach(e -> System.out.printf(
                        Locale.ROOT,
                        "  %-52s %6.1f /token %8.3f ms/token%n",
                        e.getKey(),
                        e.getValue()[0] / (double) n,
                        e.getValue()[1] / 1e6 / n));
        System.out.printf(
                Locale.ROOT,
                "  %-52s %6.1f /token %8.3f ms/token (of which dispatch ~%.3f ms)%n",
                "total",
                ops / (double) n,
                total / 1e6 / n,
                ops / (double) n * dispatch / 1e6);
    }

    /** ns per {@code itemInt()} of an already evaluated 1-element int32 array ({@code .item()}). */
    private static double itemOverhead(int n) {
        try (ArrayScope outer = ArrayScope.open()) {
            MlxArray y = Mlx.argmax(Mlx.fromInts(new int[] {3, 1, 2}, 3), -1, false);
            Mlx.eval(y);
            long sum = 0;
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                sum += y.itemInt();
            }
            double ns = (System.nanoTime() - t0) / (double) n;
            if (sum != 0) {
                throw new AssertionError(sum);
            }
            return ns;
        }
    }

    public static void main(String[] argv) {
        Path dir = null;
        int promptTokens = 128;
        int genTokens = 64;
        int runs = 3;
        long seed = 42;
        double buildLoopS = 0;
        int opsRuns = 0;
        Numerics numerics = Numerics.DEFAULT;
        boolean dequantized = false;
        Flags f = new Flags(argv);
        while (f.next()) {
            switch (f.flag()) {
                case "--model" -> dir = Path.of(f.value());
                case "--prompt-tokens" -> promptTokens = f.integer();
                case "--gen-tokens" -> genTokens = f.integer();
                case "--runs" -> runs = f.integer();
                case "--seed" -> seed = Long.parseLong(f.value());
                case "--build-loop-s" -> buildLoopS = Double.parseDouble(f.value());
                case "--ops" -> opsRuns = f.positive();
                case "--numerics" -> numerics = Numerics.parse("--numerics", f.value());
                case "--dequantized-weights" ->
                    dequantized = switch (f.value()) {
                        case "on" -> true;
                        case "off" -> false;
                        default -> throw new IllegalArgumentException("--dequantized-weights takes on or off");
                    };
                default -> throw f.unknown();
            }
        }
        if (dir == null) {
            throw new IllegalArgumentException("--model DIR is required");
        }
        Mlx.useNewDefaultStream();
        for (int w = 0; w < 3; w++) {
            opOverhead(200_000);
        }
        System.out.printf(Locale.ROOT, "op overhead (add, graph only): %.0f ns/op%n", opOverhead(1_000_000));
        for (int w = 0; w < 3; w++) {
            itemOverhead(100_000);
        }
        System.out.printf(
                Locale.ROOT, "item overhead (itemInt of an evaluated array): %.0f ns%n", itemOverhead(200_000));
        try (LanguageModel model = Models.load(dir, CpuKernels.DEFAULT, numerics, dequantized, null)) {
            if (buildLoopS > 0) {
                buildLoop(model, Math.min(2, buildLoopS)); // JIT
                System.out.printf(
                        Locale.ROOT,
                        "graph build only (fresh cache, never evaluated): %.3f ms/step%n",
                        buildLoop(model, buildLoopS));
                return;
            }
            int[] prompt = DecodeBenchmark.splitmix64Prompt(seed, promptTokens, model.vocabSize());
            if (opsRuns > 0) {
                DecodeTiming.pipelined(model, prompt, genTokens); // warm-up (JIT)
                for (int r = 0; r < opsRuns; r++) {
                    printOps(dir.getFileName().toString(), r + 1, DecodeTiming.perOp(model, prompt, genTokens));
                }
                return;
            }
            int[] tokens = DecodeTiming.pipelined(model, prompt, genTokens).tokens(); // warm-up (JIT)
            DecodeTiming.synchronous(model, prompt, genTokens);
            for (int r = 0; r < runs; r++) {
                DecodeTiming.Pipelined p = DecodeTiming.pipelined(model, prompt, genTokens);
                DecodeTiming.Synchronous s = DecodeTiming.synchronous(model, prompt, genTokens);
                tokens = p.tokens();
                System.out.printf(
                        Locale.ROOT,
                        "%s run %d: pipelined per token: build %.2f ms, async_eval %.2f ms, wait %.2f ms, total %.2f ms"
                                + " (%.2f tok/s) | sync per token: build %.2f ms, compute %.2f ms | %d arrays/step%n",
                        dir.getFileName(),
                        r + 1,
                        p.buildNs() / 1e6,
                        p.asyncNs() / 1e6,
                        p.waitNs() / 1e6,
                        p.totalNs() / 1e6,
                        1e9 / p.totalNs(),
                        s.buildNs() / 1e6,
                        s.computeNs() / 1e6,
                        s.arrays());
            }
            long weights = Mlx.memory().activeBytes();
            for (int r = 0; r < 2; r++) {
                double[] open = prefillMemory(model, prompt, false);
                double[] closed = prefillMemory(model, prompt, true);
                System.out.printf(
                        Locale.ROOT,
                        "prefill %d tokens: eval inside the forward scope (the old GenerationRun) %.3f s, peak %.1f MB;"
                                + " scope closed before eval (GenerationRun since 6752b7a) %.3f s, peak %.1f MB"
                                + " (active before: %.1f MB)%n",
                        prompt.length - 1,
                        open[0],
                        open[1] / 1e6,
                        closed[0],
                        closed[1] / 1e6,
                        weights / 1e6);
            }
            System.out.println("tokens " + Arrays.toString(Arrays.copyOf(tokens, Math.min(8, tokens.length))));
        }
    }
}
