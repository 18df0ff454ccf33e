package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.mlxring.exec.kv.BatchKvCache;
import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.FastKernels;
import dev.mlxring.mlx.FusedDecoderBlock;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.mlx.Numerics;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The fused decoder blocks (one primitive per block, {@code FusedBlock}) against the graph of the
 * same blocks ({@code -Dmlxring.fusedBlock=false}), in both tiers, on the tiny fast-numerics
 * models (llama with float32, float16 and bfloat16 activations, qwen3's q/k norms, qwen2's q/k/v
 * biases; head sizes 32, 64 and 128; grouped-query attention in all). Both forms run the same
 * schedule over one cache: a prompt in chunks of 13 (the second chunk L > 1 at offset > 0: causal
 * attention over cached and new positions), one token per step to 40, a 214-token chunk, then
 * one token per step across the cache's growth at 256 positions.
 *
 * <p>Exact tier: the fused block runs the graph's own native computations, so every position's
 * logits must be the graph's, bit for bit, for float32, float16 and bfloat16 activations, and
 * over dequantized weights too (GreedyParityTest holds the graph, and the fused block with it,
 * to mlx-lm). Fast tier: the two differ only in rounding (the fused block keeps
 * float32 between its projections; the graph rounds at each op, to bfloat16 where the
 * activations are), so the logits must agree to a relative RMS bound and almost every argmax
 * must match; the tier's own oracle, closeness to a float64 rendering, is
 * FastNumericsOracleTest's, which runs the fused block too.
 */
class FusedBlockTest {
    private static Path models;

    @BeforeAll
    static void build() throws Exception {
        assumeTrue(FusedDecoderBlock.available(Numerics.EXACT), "this CPU has no native kernels: no fused block");
        Path work = ProjectHome.get().resolve("build/oracle/fastnum");
        Files.createDirectories(work);
        models = work.resolve("models");
        PythonScript.run("oracle/make_fast_numerics_models.py", 300, List.of("--out", models.toString()));
    }

    /** The models every exact-block cell runs: llama, qwen2/3 and llama3's rope, f32/f16/bf16, 4 and 8 bits. */
    static java.util.stream.Stream<String> exactModels() {
        return java.util.stream.Stream.of(
                "llama-f32-q4g32",
                "qwen3-f32-q8g64",
                "qwen2-f32-q4g64",
                "llama3-f32-q8g128",
                "llama-bf16-q4g128",
                "llama-f16-q4g32-hd64",
                "qwen3-bf16-q8g64-hd128");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("exactModels")
    void exactBlockHasTheGraphsBytes(String name) {
        assertFusedHasTheGraphsBytes(name, false);
    }

    /**
     * With {@code --dequantized-weights} a half-type exact block reads the projections' layouts;
     * its logits are still the packed graph's, bit for bit, and the step is still one primitive
     * per block.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"llama-bf16-q4g128", "llama-f16-q4g32-hd64", "qwen3-bf16-q8g64-hd128"})
    void exactBlockOverDequantizedWeightsHasTheGraphsBytes(String name) {
        assertFusedHasTheGraphsBytes(name, true);
        assertEquals(2, fusedBlocksInAStep(models.resolve(name), true, Numerics.EXACT, true, 0), name);
    }

    /** Every position's logits of the exact fused block (over layouts if asked) equal the packed graph's. */
    private static void assertFusedHasTheGraphsBytes(String name, boolean dequantized) {
        int[] tokens = tokens(name);
        float[][] graph = logits(models.resolve(name), false, Numerics.EXACT, false, tokens);
        float[][] fused = logits(models.resolve(name), true, Numerics.EXACT, dequantized, tokens);
        for (int p = 0; p < tokens.length; p++) {
            assertArrayEquals(bits(graph[p]), bits(fused[p]), name + ": logits differ at position " + p);
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(
            strings = {
                "llama-f32-q4g32",
                "qwen3-f32-q8g64",
                "llama-bf16-q4g128",
                "qwen2-f32-q4g64",
                "llama-f16-q4g32-hd64",
                "qwen3-bf16-q8g64-hd128"
            })
    void fastBlockMatchesTheGraph(String name) {
        assumeTrue(FastKernels.selected().isPresent(), "this CPU has no AVX2/FMA: the fast tier cannot run");
        boolean half = name.contains("-bf16-") || name.contains("-f16-");
        int[] tokens = tokens(name);
        float[][] graph = logits(models.resolve(name), false, Numerics.FAST, false, tokens);
        float[][] fused = logits(models.resolve(name), true, Numerics.FAST, false, tokens);
        double worst = 0;
        int agree = 0;
        for (int p = 0; p < tokens.length; p++) {
            double diff = 0;
            double norm = 0;
            for (int v = 0; v < graph[p].length; v++) {
                double d = fused[p][v] - graph[p][v];
                diff += d * d;
                norm += (double) graph[p][v] * graph[p][v];
            }
            worst = Math.max(worst, Math.sqrt(diff / norm));
            agree += argmax(fused[p]) == argmax(graph[p]) ? 1 : 0;
        }
        int positions = tokens.length;
        System.out.printf(
                Locale.ROOT,
                "FusedBlockTest fast %s: worst relative RMS %.3g, argmax equal at %d/%d%n",
                name,
                worst,
                agree,
                tokens.length);
        // float32: the two orders of float32 arithmetic; half types: the graph's per-op roundings
        double bound = half ? 0.05 : 1e-4;
        assertTrue(
                worst < bound,
                name + ": fused and graph logits differ by relative RMS " + worst + " (bound " + bound + ")");
        assertTrue(
                agree >= (half ? 0.9 * positions : positions),
                name + ": argmax equal at only " + agree + " of " + positions + " positions");
    }

    /**
     * One step's graph holds one fused block per block with a full-precision cache, of the tier's
     * kind, and none otherwise.
     */
    @Test
    void aStepIsOnePrimitivePerBlock() {
        Path dir = models.resolve("qwen3-f32-q8g64");
        assertEquals(2, fusedBlocksInAStep(dir, true, Numerics.EXACT, 0), "exact tier, full-precision cache");
        assertEquals(0, fusedBlocksInAStep(dir, false, Numerics.EXACT, 0), "-Dmlxring.fusedBlock=false");
        // qwen3 takes --max-kv-size as a rotating cache: the graph, which handles its masks
        assertEquals(0, fusedBlocksInAStep(dir, true, Numerics.EXACT, 16), "rotating cache");
        // llama3's rope: the exact tier's block takes its frequencies, the fast tier's has none
        Path llama3 = models.resolve("llama3-f32-q8g128");
        assertEquals(2, fusedBlocksInAStep(llama3, true, Numerics.EXACT, 0), "exact tier, llama3 rope");
        // half-type activations
        assertEquals(
                2,
                fusedBlocksInAStep(models.resolve("llama-bf16-q4g128"), true, Numerics.EXACT, 0),
                "exact tier, bfloat16 activations");
        assertEquals(
                2,
                fusedBlocksInAStep(models.resolve("llama-f16-q4g32-hd64"), true, Numerics.EXACT, 0),
                "exact tier, float16 activations");
        assumeTrue(FastKernels.selected().isPresent(), "this CPU has no AVX2/FMA: the fast tier cannot run");
        assertEquals(2, fusedBlocksInAStep(dir, true, Numerics.FAST, 0), "fast tier, full-precision cache");
        assertEquals(0, fusedBlocksInAStep(dir, false, Numerics.FAST, 0), "fast tier, -Dmlxring.fusedBlock=false");
        assertEquals(0, fusedBlocksInAStep(dir, true, Numerics.FAST, 16), "fast tier, rotating cache");
        assertEquals(0, fusedBlocksInAStep(llama3, true, Numerics.FAST, 0), "fast tier, llama3 rope");
    }

    /**
     * A decode step of a batch's rows (left-padded batch caches, ragged offsets) is one fused block
     * of the tier's kind per block, and the graph under {@code -Dmlxring.fusedBatch=false}.
     */
    @Test
    void aBatchDecodeStepIsOnePrimitivePerBlock() {
        Path dir = models.resolve("qwen3-f32-q8g64");
        assertEquals(2, fusedBlocksInABatchStep(dir, Numerics.EXACT, "ExactDecoderBlock"), "exact tier, batch");
        assertEquals(0, fusedBlocksInABatchStep(dir, Numerics.EXACT, "FastDecoderBlock"), "exact tier, batch");
        runWithFusedBatch(
                false,
                () -> assertEquals(
                        0,
                        fusedBlocksInABatchStep(dir, Numerics.EXACT, "ExactDecoderBlock"),
                        "exact tier, batch, -Dmlxring.fusedBatch=false"));
        assumeTrue(FastKernels.selected().isPresent(), "this CPU has no AVX2/FMA: the fast tier cannot run");
        assertEquals(2, fusedBlocksInABatchStep(dir, Numerics.FAST, "FastDecoderBlock"), "fast tier, batch");
    }

    /**
     * The exact tier's fused block over a batch's rows has the graph's bytes: rows of 250, 9 and 3
     * prompt positions (left padding 0, 241 and 247) merged into one batch cache decode 12 steps,
     * across the cache's growth at 256 positions; every step's logits of every row equal, bit for
     * bit, those of the same steps on the graph ({@code -Dmlxring.fusedBatch=false}), whose bytes
     * are mlx-lm's BatchGenerator's (BatchParityTest), and each fused step is one primitive per
     * block.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("exactModels")
    void exactBlockOverABatchsRowsHasTheGraphsBytes(String name) {
        assertFusedRowsHaveTheGraphsBytes(name, false, 1);
    }

    /**
     * As above with 4 positions per row and step (a speculative verification round's {@code [B,
     * K + 1]}, K = 3): the rope at each row's offset plus the position, the causal and padding
     * mask over the new positions, the cache written 4 positions at a time across its growth.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"llama-f32-q4g32", "qwen3-bf16-q8g64-hd128", "llama3-f32-q8g128"})
    void exactBlockOverABatchsVerificationRoundsHasTheGraphsBytes(String name) {
        assertFusedRowsHaveTheGraphsBytes(name, false, 4);
    }

    /** As above over the projections' dequantized layouts ({@code --dequantized-weights}). */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"llama-bf16-q4g128", "qwen3-bf16-q8g64-hd128"})
    void exactBlockOverABatchsRowsAndDequantizedWeightsHasTheGraphsBytes(String name) {
        assertFusedRowsHaveTheGraphsBytes(name, true, 1);
    }

    private static void assertFusedRowsHaveTheGraphsBytes(String name, boolean dequantized, int width) {
        int[] tokens = tokens(name);
        int[] fusedBlocks = new int[1];
        float[][] graph =
                withFusedBatch(false, () -> batchLogits(models.resolve(name), dequantized, tokens, null, width));
        float[][] fused =
                withFusedBatch(true, () -> batchLogits(models.resolve(name), dequantized, tokens, fusedBlocks, width));
        assertEquals(2, fusedBlocks[0], name + ": a batch step is not one ExactDecoderBlock per block");
        for (int step = 0; step < graph.length; step++) {
            assertArrayEquals(bits(graph[step]), bits(fused[step]), name + ": logits differ at step " + step);
        }
    }

    /**
     * Every step's logits {@code [rows * width * vocab]} of three rows prefilled alone (250, 9 and 3
     * positions of {@code tokens}), merged into a batch cache and stepped 12 times on {@code width}
     * further tokens each; {@code fusedBlocks[0]} (where given) the first step's ExactDecoderBlock
     * count.
     */
    private static float[][] batchLogits(Path dir, boolean dequantized, int[] tokens, int[] fusedBlocks, int width) {
        int[] lengths = {250, 9, 3};
        int steps = 12;
        float[][] out = new float[steps][];
        try (LanguageModel model = load(dir, true, Numerics.EXACT, dequantized)) {
            KvCache[][] rows = new KvCache[lengths.length][];
            KvCache[] batch = null;
            try (ArrayScope s = ArrayScope.open()) {
                for (int r = 0; r < lengths.length; r++) {
                    rows[r] = model.newCache();
                    int[] prompt = Arrays.copyOfRange(tokens, r, r + lengths[r]);
                    Mlx.eval(model.forward(Mlx.fromInts(prompt, 1, prompt.length), rows[r]));
                }
                batch = new KvCache[rows[0].length];
                for (int i = 0; i < batch.length; i++) {
                    batch[i] = BatchKvCache.merge(
                            (DenseKvCache) rows[0][i], (DenseKvCache) rows[1][i], (DenseKvCache) rows[2][i]);
                }
                for (int step = 0; step < steps; step++) {
                    int[] next = new int[lengths.length * width];
                    for (int r = 0; r < lengths.length; r++) {
                        for (int j = 0; j < width; j++) {
                            next[r * width + j] = tokens[step * width + r + j];
                        }
                    }
                    MlxArray logits = model.forward(Mlx.fromInts(next, lengths.length, width), batch);
                    if (step == 0 && fusedBlocks != null) {
                        fusedBlocks[0] =
                                (int) Arrays.stream(Mlx.profileEval(logits).split("\n"))
                                        .filter(line -> line.startsWith("ExactDecoderBlock\t"))
                                        .count();
                    }
                    out[step] = Mlx.astype(logits, Dtype.FLOAT32).toFloatArray();
                }
            } finally {
                for (KvCache[] caches : rows) {
                    for (KvCache c : caches == null ? new KvCache[0] : caches) {
                        c.close();
                    }
                }
                for (KvCache c : batch == null ? new KvCache[0] : batch) {
                    if (c != null) {
                        c.close();
                    }
                }
            }
        }
        return out;
    }

    /** {@code body} with {@code -Dmlxring.fusedBatch} set as given (restored after). */
    private static <T> T withFusedBatch(boolean on, java.util.function.Supplier<T> body) {
        String was = System.getProperty("mlxring.fusedBatch");
        System.setProperty("mlxring.fusedBatch", Boolean.toString(on));
        try {
            return body.get();
        } finally {
            if (was == null) {
                System.clearProperty("mlxring.fusedBatch");
            } else {
                System.setProperty("mlxring.fusedBatch", was);
            }
        }
    }

    private static void runWithFusedBatch(boolean on, Runnable body) {
        withFusedBatch(on, () -> {
            body.run();
            return null;
        });
    }

    /** Fused blocks named {@code primitive} in a decode step of two rows of 3 and 5 cached positions. */
    private static int fusedBlocksInABatchStep(Path dir, Numerics numerics, String primitive) {
        try (LanguageModel model = load(dir, true, numerics)) {
            KvCache[] a = model.newCache();
            KvCache[] b = model.newCache();
            KvCache[] batch = new KvCache[a.length];
            try (ArrayScope s = ArrayScope.open()) {
                Mlx.eval(model.forward(Mlx.fromInts(new int[] {1, 2, 3}, 1, 3), a));
                Mlx.eval(model.forward(Mlx.fromInts(new int[] {4, 5, 6, 7, 8}, 1, 5), b));
                for (int i = 0; i < a.length; i++) {
                    batch[i] = BatchKvCache.merge((DenseKvCache) a[i], (DenseKvCache) b[i]);
                }
                MlxArray step = model.forward(Mlx.fromInts(new int[] {9, 10}, 2, 1), batch);
                return (int) Arrays.stream(Mlx.profileEval(step).split("\n"))
                        .filter(line -> line.startsWith(primitive + "\t"))
                        .count();
            } finally {
                for (KvCache[] caches : List.of(a, b, batch)) {
                    for (KvCache c : caches) {
                        if (c != null) {
                            c.close();
                        }
                    }
                }
            }
        }
    }

    /**
     * A step writes its new rows into the cache buffers in place only when nothing else holds them:
     * with another reference to the buffers alive (as a view or an unevaluated snapshot holds one),
     * the step's cache is a copy and the held buffers keep their bytes.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Numerics.class)
    void aHeldCacheBufferIsNotWrittenInPlace(Numerics numerics) {
        assumeTrue(FusedDecoderBlock.available(numerics), numerics + ": this CPU has no fused block of the tier");
        try (LanguageModel model = load(models.resolve("llama-f32-q4g32"), true, numerics)) {
            KvCache[] cache = model.newCache();
            try (ArrayScope s = ArrayScope.open()) {
                Mlx.eval(model.forward(Mlx.fromInts(new int[] {5, 6, 7, 8}, 1, 4), cache));
                MlxArray keys = ((dev.mlxring.exec.kv.DenseKvCache) cache[0]).state()[0];
                MlxArray held = Mlx.reshape(keys, keys.shape());
                int rowBytes = keys.dim(3) * 4;
                byte[] before = held.toBytes();
                Mlx.eval(model.forward(Mlx.fromInts(new int[] {9}, 1, 1), cache));
                byte[] after = ((dev.mlxring.exec.kv.DenseKvCache) cache[0]).state()[0].toBytes();
                assertTrue(Arrays.equals(before, held.toBytes()), "the held buffer was written");
                assertTrue(!Arrays.equals(before, after), "the step wrote no new key row");
                // position 4 of kv head 0 changed, positions 0-3 are the same
                assertTrue(Arrays.equals(Arrays.copyOf(before, 4 * rowBytes), Arrays.copyOf(after, 4 * rowBytes)));
            } finally {
                for (KvCache c : cache) {
                    c.close();
                }
            }
        }
    }

    private static int fusedBlocksInAStep(Path dir, boolean fusedBlock, Numerics numerics, int maxKvSize) {
        return fusedBlocksInAStep(dir, fusedBlock, numerics, false, maxKvSize);
    }

    private static int fusedBlocksInAStep(
            Path dir, boolean fusedBlock, Numerics numerics, boolean dequantized, int maxKvSize) {
        String name = (numerics == Numerics.FAST ? "FastDecoderBlock" : "ExactDecoderBlock") + "\t";
        try (LanguageModel model = load(dir, fusedBlock, numerics, dequantized)) {
            KvCache[] cache = model.newCache(maxKvSize);
            try (ArrayScope s = ArrayScope.open()) {
                Mlx.eval(model.forward(Mlx.fromInts(new int[] {1, 2, 3}, 1, 3), cache));
                MlxArray step = model.forward(Mlx.fromInts(new int[] {4}, 1, 1), cache);
                return (int) Arrays.stream(Mlx.profileEval(step).split("\n"))
                        .filter(line -> line.startsWith(name))
                        .count();
            } finally {
                for (KvCache c : cache) {
                    c.close();
                }
            }
        }
    }

    private static LanguageModel load(Path dir, boolean fusedBlock, Numerics numerics) {
        return load(dir, fusedBlock, numerics, false);
    }

    private static LanguageModel load(Path dir, boolean fusedBlock, Numerics numerics, boolean dequantized) {
        String was = System.getProperty("mlxring.fusedBlock");
        System.setProperty("mlxring.fusedBlock", Boolean.toString(fusedBlock));
        try {
            return Models.load(dir, CpuKernels.NATIVE, numerics, dequantized, null);
        } finally {
            if (was == null) {
                System.clearProperty("mlxring.fusedBlock");
            } else {
                System.setProperty("mlxring.fusedBlock", was);
            }
        }
    }

    /**
     * Every position's logits: chunks [0, 13) and [13, 26), one token per forward to 40, a chunk to
     * 254, then one token per forward across the cache's growth at 256 positions.
     */
    private static float[][] logits(
            Path dir, boolean fusedBlock, Numerics numerics, boolean dequantized, int[] tokens) {
        float[][] out = new float[tokens.length][];
        try (LanguageModel model = load(dir, fusedBlock, numerics, dequantized)) {
            KvCache[] cache = model.newCache();
            try {
                int at = 0;
                while (at < tokens.length) {
                    int len = at < 26 ? 13 : at == 40 ? 214 : 1;
                    try (ArrayScope s = ArrayScope.open()) {
                        MlxArray l =
                                model.forward(Mlx.fromInts(Arrays.copyOfRange(tokens, at, at + len), 1, len), cache);
                        float[] all = Mlx.astype(l, Dtype.FLOAT32).toFloatArray();
                        int vocab = all.length / len;
                        for (int i = 0; i < len; i++) {
                            out[at + i] = Arrays.copyOfRange(all, i * vocab, (i + 1) * vocab);
                        }
                    }
                    at += len;
                }
            } finally {
                for (KvCache c : cache) {
                    c.close();
                }
            }
        }
        return out;
    }

    /** 262 token ids below the models' vocabulary of 512, drawn from a seed per model. */
    private static int[] tokens(String name) {
        SplittableRandom rnd = new SplittableRandom(name.hashCode());
        int[] tokens = new int[262];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = rnd.nextInt(512);
        }
        return tokens;
    }

    private static int[] bits(float[] l) {
        int[] b = new int[l.length];
        for (int i = 0; i < l.length; i++) {
            b[i] = Float.floatToRawIntBits(l[i]);
        }
        return b;
    }

    private static int argmax(float[] l) {
        int best = 0;
        for (int v = 1; v < l.length; v++) {
            if (l[v] > l[best]) {
                best = v;
            }
        }
        return best;
    }
}
