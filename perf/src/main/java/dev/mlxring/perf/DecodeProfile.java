package dev.mlxring.perf;

import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;

/**
 * Where a decode token's time goes on our side; {@code scripts/bench/mlxlm_profile.py} is the
 * same harness over mlx-lm. It replays the engine's decode loop ({@code GenerationRun}) with public
 * API calls (same graph, same async_eval pipelining, clear_cache every 256 tokens) and times its
 * parts:
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
 * Plus a micro-benchmark of the bare per-op cost: {@code add} of two 1-element arrays, graph only
 * (no eval), created and freed in a scope.
 *
 * <pre>
 * DecodeProfile --model DIR [--prompt-tokens 128] [--gen-tokens 64] [--runs 3] [--seed 42] [--build-loop-s S]
 * </pre>
 */
public final class DecodeProfile {
    private DecodeProfile() {}

    private record Step(MlxArray y, MlxArray logprobs) implements AutoCloseable {
        @Override
        public void close() {
            y.close();
            logprobs.close();
        }
    }

    private static int arraysPerStep;

    /** The engine's {@code step} ({@code generate_step._step}) without the logits capture. */
    private static Step step(LanguageModel model, MlxArray inputTokens, KvCache[] cache) {
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray logits = model.forward(Mlx.expandDims(inputTokens, 0), cache);
            int length = logits.dim(1);
            int vocab = logits.dim(2);
            logits = Mlx.squeeze(Mlx.slice(logits, new int[] {0, length - 1, 0}, new int[] {1, length, vocab},
                    new int[] {1, 1, 1}), 1);
            MlxArray logprobs = Mlx.subtract(logits, Mlx.logsumexp(logits, true));
            MlxArray sampled = Mlx.argmax(logprobs, -1, false);
            arraysPerStep = scope.ownedCount();
            return new Step(sampled.detach(), Mlx.squeeze(logprobs, 0).detach());
        }
    }

    private static KvCache[] prefill(LanguageModel model, int[] prompt) {
        KvCache[] cache = model.newCache();
        int n = prompt.length - 1;
        if (n > 0) {
            try (ArrayScope scope = ArrayScope.open()) {
                model.forward(Mlx.expandDims(Mlx.fromInts(Arrays.copyOfRange(prompt, 0, n), n), 0), cache);
                MlxArray[] state = new MlxArray[cache.length * 2];
                for (int i = 0; i < cache.length; i++) {
                    MlxArray[] kv = cache[i].state();
                    state[2 * i] = kv[0];
                    state[2 * i + 1] = kv[1];
                }
                Mlx.eval(state);
            }
            Mlx.clearCache();
        }
        return cache;
    }

    /**
     * Prefill of {@code prompt[:-1]} as the engine does it (the cache state is evaluated while the
     * forward pass's scope, i.e. the Java handles of every intermediate, is still open) or with the
     * scope closed first (only the cache buffers are referenced when MLX evaluates, as in Python
     * where the forward's locals are gone by then). Returns {seconds, peak bytes}.
     */
    private static double[] prefillMemory(LanguageModel model, int[] prompt, boolean closeScopeFirst) {
        Mlx.synchronize();
        Mlx.clearCache();
        Mlx.resetPeakMemory();
        KvCache[] cache = model.newCache();
        int n = prompt.length - 1;
        long t0 = System.nanoTime();
        MlxArray[] state = new MlxArray[cache.length * 2];
        try (ArrayScope scope = ArrayScope.open()) {
            model.forward(Mlx.expandDims(Mlx.fromInts(Arrays.copyOfRange(prompt, 0, n), n), 0), cache);
            for (int i = 0; i < cache.length; i++) {
                MlxArray[] kv = cache[i].state();
                state[2 * i] = kv[0];
                state[2 * i + 1] = kv[1];
            }
            if (!closeScopeFirst) {
                Mlx.eval(state);
            }
        }
        if (closeScopeFirst) {
            Mlx.eval(state);
        }
        double s = (System.nanoTime() - t0) / 1e9;
        long peak = Mlx.memory().peakBytes();
        for (KvCache c : cache) {
            c.close();
        }
        Mlx.clearCache();
        return new double[] {s, peak};
    }

    /** Pipelined decode exactly like the engine; returns {build, async, wait, total} ns per token. */
    private static double[] pipelined(LanguageModel model, int[] prompt, int maxTokens, int[] tokensOut) {
        KvCache[] cache = prefill(model, prompt);
        long build = 0;
        long async = 0;
        long wait = 0;
        long first = 0;
        long last = 0;
        Step current;
        Step next = null;
        try (ArrayScope scope = ArrayScope.open()) {
            current = step(model, Mlx.fromInts(new int[] {prompt[prompt.length - 1]}, 1), cache);
        }
        Mlx.asyncEval(current.y(), current.logprobs());
        try {
            for (int n = 0; ; n++) {
                if (n != maxTokens) {
                    long t0 = System.nanoTime();
                    next = step(model, current.y(), cache);
                    long t1 = System.nanoTime();
                    Mlx.asyncEval(next.y(), next.logprobs());
                    long t2 = System.nanoTime();
                    if (n > 0) {
                        build += t1 - t0;
                        async += t2 - t1;
                    }
                }
                if (n == 0) {
                    Mlx.eval(current.y());
                }
                if (n == maxTokens) {
                    break;
                }
                long t3 = System.nanoTime();
                int token = current.y().itemInt();
                long t4 = System.nanoTime();
                if (n == 0) {
                    first = t4;
                } else {
                    wait += t4 - t3;
                }
                tokensOut[n] = token;
                last = t4;
                if (n % 256 == 0) {
                    Mlx.clearCache();
                }
                current.close();
                current = next;
                next = null;
            }
        } finally {
            current.close();
            if (next != null) {
                next.close();
            }
            for (KvCache c : cache) {
                c.close();
            }
            Mlx.synchronize();
        }
        int k = maxTokens - 1;
        return new double[] {build / (double) k, async / (double) k, wait / (double) k, (last - first) / (double) k};
    }

    /** Build then eval synchronously, per token: {build, compute} ns. */
    private static double[] synchronous(LanguageModel model, int[] prompt, int maxTokens) {
        KvCache[] cache = prefill(model, prompt);
        long build = 0;
        long compute = 0;
        Step current;
        try (ArrayScope scope = ArrayScope.open()) {
            current = step(model, Mlx.fromInts(new int[] {prompt[prompt.length - 1]}, 1), cache);
        }
        Mlx.eval(current.y(), current.logprobs());
        try {
            for (int n = 1; n < maxTokens; n++) {
                long t0 = System.nanoTime();
                Step next = step(model, current.y(), cache);
                long t1 = System.nanoTime();
                Mlx.eval(next.y(), next.logprobs());
                next.y().itemInt();
                long t2 = System.nanoTime();
                build += t1 - t0;
                compute += t2 - t1;
                current.close();
                current = next;
            }
        } finally {
            current.close();
            for (KvCache c : cache) {
                c.close();
            }
        }
        int k = maxTokens - 1;
        return new double[] {build / (double) k, compute / (double) k};
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
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long t0 = System.nanoTime();
        int n = 0;
        do {
            KvCache[] cache = model.newCache();
            try (ArrayScope scope = ArrayScope.open()) {
                step(model, Mlx.fromInts(new int[] {1}, 1), cache).close();
            }
            for (KvCache c : cache) {
                c.close();
            }
            n++;
        } while (System.nanoTime() < end);
        return (System.nanoTime() - t0) / 1e6 / n;
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
        for (int i = 0; i + 1 < argv.length; i += 2) {
            switch (argv[i]) {
                case "--model" -> dir = Path.of(argv[i + 1]);
                case "--prompt-tokens" -> promptTokens = Integer.parseInt(argv[i + 1]);
                case "--gen-tokens" -> genTokens = Integer.parseInt(argv[i + 1]);
                case "--runs" -> runs = Integer.parseInt(argv[i + 1]);
                case "--seed" -> seed = Long.parseLong(argv[i + 1]);
                case "--build-loop-s" -> buildLoopS = Double.parseDouble(argv[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + argv[i]);
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
        System.out.printf(Locale.ROOT, "item overhead (itemInt of an evaluated array): %.0f ns%n", itemOverhead(200_000));
        try (LanguageModel model = Models.load(dir)) {
            if (buildLoopS > 0) {
                buildLoop(model, Math.min(2, buildLoopS)); // JIT
                System.out.printf(Locale.ROOT, "graph build only (fresh cache, never evaluated): %.3f ms/step%n",
                        buildLoop(model, buildLoopS));
                return;
            }
            int[] prompt = DecodeBenchmark.splitmix64Prompt(seed, promptTokens, model.vocabSize());
            int[] tokens = new int[genTokens];
            pipelined(model, prompt, genTokens, tokens); // warm-up (JIT)
            synchronous(model, prompt, genTokens);
            for (int r = 0; r < runs; r++) {
                double[] p = pipelined(model, prompt, genTokens, tokens);
                double[] s = synchronous(model, prompt, genTokens);
                System.out.printf(Locale.ROOT,
                        "%s run %d: pipelined per token: build %.2f ms, async_eval %.2f ms, wait %.2f ms, total %.2f ms"
                                + " (%.2f tok/s) | sync per token: build %.2f ms, compute %.2f ms | %d arrays/step%n",
                        dir.getFileName(), r + 1, p[0] / 1e6, p[1] / 1e6, p[2] / 1e6, p[3] / 1e6, 1e9 / p[3],
                        s[0] / 1e6, s[1] / 1e6, arraysPerStep);
            }
            long weights = Mlx.memory().activeBytes();
            for (int r = 0; r < 2; r++) {
                double[] open = prefillMemory(model, prompt, false);
                double[] closed = prefillMemory(model, prompt, true);
                System.out.printf(Locale.ROOT,
                        "prefill %d tokens: eval inside the forward scope (as GenerationRun does today) %.3f s, peak %.1f MB;"
                                + " scope closed before eval %.3f s, peak %.1f MB (active before: %.1f MB)%n",
                        prompt.length - 1, open[0], open[1] / 1e6, closed[0], closed[1] / 1e6, weights / 1e6);
            }
            System.out.println("tokens " + Arrays.toString(Arrays.copyOf(tokens, Math.min(8, tokens.length))));
        }
    }
}
