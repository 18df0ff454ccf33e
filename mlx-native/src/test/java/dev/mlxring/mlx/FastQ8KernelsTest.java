package dev.mlxring.mlx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The 8-bit-activation kernels ({@link Numerics#FAST_Q8}, {@code mlxr_fastq8.h}) against their
 * oracle, a float64 rendering of their arithmetic written here from its definition: each block of
 * 32 activations of a row rounded to {@code rint(x * (127 / amax))} with scale {@code amax / 127}
 * (float32 steps, as the definition has them), the block's product with the weights' centred
 * integers {@code q - 2^(bits-1)} exact, scaled by {@code s * d} (one float32 product), and the
 * centred bias {@code fma(2^(bits-1), s, b)} times the group's sum of the unrounded activations,
 * all summed in float64. Each output must be within {@link #tolerance} of the sum of its terms'
 * magnitudes (the kernels' float32 sums over blocks and groups) plus half an ulp of the output
 * dtype. Then two properties of the scheme itself:
 * <ul>
 *   <li>against the unrounded product (float64, as FastKernelsTest's oracle), each output's error
 *       is within what rounding the activations can cause: half a step {@code d / 2} per
 *       activation times the weight's centred magnitude, summed, plus the same float slack;
 *   <li>every instruction set this CPU runs gives the same bytes (the integer sums are exact and
 *       each output's float steps are the same at any lane width).
 * </ul>
 * Cases: 4 and 8 bits × groups 32/64/128, rows 1 to 9, 13, 16 and 40 (the passes of 6 rows on
 * AVX-512 and 4 on AVX2, and their tails), K whose words do not fill the panel's eights, the
 * default model's shapes, float16/bfloat16/float32 parameters and activations, a block of zeros.
 */
class FastQ8KernelsTest {

    /**
     * Relative to the terms' magnitudes: a float32 rounding (2^-24) per term the kernels sum (K / 32
     * blocks, then K / group size groups), and four more (the product {@code s * d}, the centred
     * bias, a group's float32 sum of its activations, the output): recursive summation's bound.
     */
    static double tolerance(Case c) {
        return (c.k / 32 + c.k / c.groupSize + 4) * 0x1p-24;
    }

    record Case(Dtype act, Dtype params, int bits, int groupSize, int n, int k, int m) {
        @Override
        public String toString() {
            return act.mlxName + " (params " + params.mlxName + ") b" + bits + " g" + groupSize + " N" + n + " K" + k
                    + " M" + m;
        }
    }

    private static List<KernelIsa> isas;

    @BeforeAll
    static void requireKernels() {
        assumeTrue(FastKernels.selected().isPresent(), "this CPU has no AVX2/FMA: the fast tiers cannot run");
        isas = Arrays.stream(KernelIsa.values()).filter(FastKernels::onThisCpu).toList();
    }

    static Stream<Case> cases() {
        List<Case> c = new ArrayList<>();
        for (int bits : new int[] {4, 8}) {
            for (int g : new int[] {32, 64, 128}) {
                for (int m : new int[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 16, 40}) {
                    c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, bits, g, 84, 384, m));
                }
            }
        }
        // 44 and 11 words a row: the panel's last words that do not fill eight.
        for (int m : new int[] {1, 7, 13}) {
            c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 4, 32, 40, 352, m));
            c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 8, 32, 40, 352, m));
            c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 4, 32, 24, 64, m));
        }
        c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 8, 64, 49152, 576, 1));
        c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 8, 64, 49152, 576, 8));
        c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 4, 64, 1536, 576, 8));
        c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 4, 64, 576, 1536, 32));
        for (Dtype d : new Dtype[] {Dtype.FLOAT32, Dtype.FLOAT16, Dtype.BFLOAT16}) {
            for (Dtype p : new Dtype[] {Dtype.FLOAT32, Dtype.FLOAT16, Dtype.BFLOAT16}) {
                c.add(new Case(d, p, 4, 64, 100, 576, 2));
                c.add(new Case(d, p, 8, 128, 36, 256, 7));
            }
        }
        return c.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void withinToleranceOfFloat64(Case c) {
        SplittableRandom rnd = new SplittableRandom(c.toString().hashCode());
        int centre = 1 << (c.bits - 1);
        try (ArrayScope s = ArrayScope.open()) {
            int words = c.k * c.bits / 32;
            int groups = c.k / c.groupSize;
            int[] w = randomWords(rnd, c.n * words);
            MlxArray weight = Mlx.astype(Mlx.fromInts(w, c.n, words), Dtype.UINT32);
            MlxArray scales = Mlx.astype(
                    Mlx.fromFloats(FastKernelsTest.gaussian(rnd, c.n * groups, 0.02), c.n, groups), c.params);
            float[] sv = Mlx.astype(scales, Dtype.FLOAT32).toFloatArray();
            float[] bv = new float[sv.length];
            for (int i = 0; i < bv.length; i++) {
                bv[i] = (float) (-sv[i] * centre + rnd.nextGaussian() * 0.002);
            }
            MlxArray biases = Mlx.astype(Mlx.fromFloats(bv, c.n, groups), c.params);
            float[] xv = FastKernelsTest.gaussian(rnd, c.m * c.k, 1.0);
            // Row 0's first block all zeros (scale 0), and one activation far above the rest.
            Arrays.fill(xv, 0, 32, 0f);
            if (c.k >= 64) {
                xv[40] = 37f;
            }
            MlxArray x = Mlx.astype(Mlx.fromFloats(xv, c.m, c.k), c.act);
            float[] xs = Mlx.astype(x, Dtype.FLOAT32).toFloatArray();
            float[] ss = Mlx.astype(scales, Dtype.FLOAT32).toFloatArray();
            float[] bs = Mlx.astype(biases, Dtype.FLOAT32).toFloatArray();
            double outUlp = c.act == Dtype.FLOAT32 ? 0x1p-24 : c.act == Dtype.FLOAT16 ? 0x1p-11 : 0x1p-8;
            float[] first = null;
            for (KernelIsa isa : isas) {
                MlxArray out = FastKernels.quantizedMatmul(
                        x, weight, scales, biases, c.groupSize, c.bits, isa, Numerics.FAST_Q8);
                assertTrue(FastKernels.isFast(out), "the fast kernels did not take " + c);
                float[] got = Mlx.astype(out, Dtype.FLOAT32).toFloatArray();
                assertEquals(c.m * c.n, got.length);
                assertArrayEquals(
                        got,
                        unwidened(x, weight, scales, biases, c, isa),
                        isa + " " + c + ": widened parameters changed bytes");
                if (first == null) {
                    first = got;
                } else {
                    assertArrayEquals(first, got, isa + " " + c + ": not the bytes of " + isas.get(0));
                }
                double worst = 0;
                double worstRounding = 0;
                for (int m = 0; m < c.m; m++) {
                    Quantized xq = quantize(xs, m * c.k, c.k, c.groupSize);
                    for (int n = 0; n < c.n; n++) {
                        double ref = 0;
                        double mag = 0;
                        double exact = 0;
                        double roundingBound = 0;
                        for (int b = 0; b < c.k / 32; b++) {
                            int g = n * groups + b * 32 / c.groupSize;
                            long dot = 0;
                            double centredMag = 0;
                            for (int k = b * 32; k < b * 32 + 32; k++) {
                                int q = FastKernelsTest.quant(w, n * words, k, c.bits) - centre;
                                dot += (long) q * xq.q[k];
                                centredMag += Math.abs((double) ss[g] * q);
                            }
                            double term = dot * (double) (ss[g] * xq.d[b]);
                            ref += term;
                            mag += Math.abs(term);
                            roundingBound += centredMag * xq.d[b] / 2;
                        }
                        for (int gi = 0; gi < groups; gi++) {
                            int g = n * groups + gi;
                            double bc = Math.fma((float) centre, ss[g], bs[g]);
                            double term = bc * xq.sums[gi];
                            ref += term;
                            mag += Math.abs(bc) * xq.absSums[gi];
                        }
                        for (int k = 0; k < c.k; k++) {
                            int g = n * groups + k / c.groupSize;
                            exact += xs[m * c.k + k]
                                    * ((double) ss[g] * FastKernelsTest.quant(w, n * words, k, c.bits) + bs[g]);
                        }
                        double v = got[m * c.n + n];
                        double err = Math.abs(v - ref);
                        double slack = tolerance(c) * mag + outUlp * Math.abs(ref);
                        if (!(err <= slack)) {
                            fail(isa + " " + c + ": row " + m + " column " + n + ": q8 " + v + ", float64 " + ref
                                    + ", error " + err + " > bound " + slack);
                        }
                        double roundingErr = Math.abs(v - exact);
                        if (!(roundingErr <= roundingBound + slack + outUlp * Math.abs(exact))) {
                            fail(isa + " " + c + ": row " + m + " column " + n + ": q8 " + v + ", unrounded " + exact
                                    + ", error " + roundingErr + " > the activations' rounding bound " + roundingBound);
                        }
                        worst = Math.max(worst, mag == 0 ? 0 : (err - outUlp * Math.abs(ref)) / mag);
                        worstRounding = Math.max(worstRounding, roundingBound == 0 ? 0 : roundingErr / roundingBound);
                    }
                }
                System.out.printf(
                        "FastQ8KernelsTest %s %s: worst error / magnitude %.3g (tolerance %.3g); error against the"
                                + " unrounded product / rounding bound %.3f%n",
                        isa, c, worst, tolerance(c), worstRounding);
            }
        }
    }

    /** {@code count} random packed words (every bit pattern a weight's words can hold). */
    private static int[] randomWords(SplittableRandom rnd, int count) {
        int[] w = new int[count];
        for (int i = 0; i < w.length; i++) {
            w[i] = rnd.nextInt();
        }
        return w;
    }

    /** A random packed weight of {@code rows} rows of {@code words} uint32 words. */
    private static MlxArray packedWeight(SplittableRandom rnd, int rows, int words) {
        return Mlx.astype(Mlx.fromInts(randomWords(rnd, rows * words), rows, words), Dtype.UINT32);
    }

    /** The same call with each call widening its own group parameters ({@link FastKernels#widenedParams}). */
    private static float[] unwidened(
            MlxArray x, MlxArray weight, MlxArray scales, MlxArray biases, Case c, KernelIsa isa) {
        boolean before = FastKernels.widenedParams(false);
        try {
            return Mlx.astype(
                            FastKernels.quantizedMatmul(
                                    x, weight, scales, biases, c.groupSize, c.bits, isa, Numerics.FAST_Q8),
                            Dtype.FLOAT32)
                    .toFloatArray();
        } finally {
            FastKernels.widenedParams(before);
        }
    }

    /**
     * A weight's widened parameters are made on its first call, held while its arrays live, and freed
     * by {@link FastKernels#releaseWidenedParams} once they are gone; a new weight whose scales land
     * where a freed one's were gets its own.
     */
    @Test
    void widenedParamsLiveAsLongAsTheirWeight() {
        boolean before = FastKernels.widenedParams(true);
        try {
            FastKernels.releaseWidenedParams();
            long base = FastKernels.widenedParamsBytes();
            int n = 64, k = 256, groups = k / 32, words = k * 4 / 32;
            // two floats per group and row, rows in blocks of 32
            long expected = 2L * groups * n * Float.BYTES;
            float[] previous = null;
            for (int round = 0; round < 3; round++) {
                SplittableRandom rnd = new SplittableRandom(round);
                float[] got;
                try (ArrayScope s = ArrayScope.open()) {
                    MlxArray weight = packedWeight(rnd, n, words);
                    MlxArray scales = Mlx.astype(
                            Mlx.fromFloats(FastKernelsTest.gaussian(rnd, n * groups, 0.02), n, groups), Dtype.FLOAT16);
                    MlxArray biases = Mlx.astype(
                            Mlx.fromFloats(FastKernelsTest.gaussian(rnd, n * groups, 0.02), n, groups), Dtype.FLOAT16);
                    MlxArray x = Mlx.fromFloats(FastKernelsTest.gaussian(rnd, 3 * k, 1.0), 3, k);
                    Mlx.eval(weight, scales, biases, x);
                    got = Mlx.astype(
                                    FastKernels.quantizedMatmul(x, weight, scales, biases, 32, 4, Numerics.FAST_Q8),
                                    Dtype.FLOAT32)
                            .toFloatArray();
                    assertEquals(base + expected, FastKernels.widenedParamsBytes(), "held while the weight lives");
                    assertArrayEquals(
                            got,
                            unwidened(
                                    x,
                                    weight,
                                    scales,
                                    biases,
                                    new Case(Dtype.FLOAT32, Dtype.FLOAT16, 4, 32, n, k, 3),
                                    FastKernels.selected().orElseThrow()),
                            "round " + round);
                }
                if (previous != null) {
                    assertTrue(!Arrays.equals(previous, got), "each round's weight is its own");
                }
                previous = got;
                assertEquals(expected, FastKernels.releaseWidenedParams(), "freed once the weight is gone");
                assertEquals(base, FastKernels.widenedParamsBytes());
            }
        } finally {
            FastKernels.widenedParams(before);
        }
    }

    /**
     * A weight freed while its widened parameters are still cached, and a new weight of the same shape
     * made at once: MLX's buffer cache hands the new arrays the freed buffers, so the new scales and
     * biases sit where the old ones did and the cache's entry matches them by address and shape; only
     * the check that the entry's buffers are the new arrays' (not expired ones at the same address)
     * keeps the old weight's parameters out. Making that check always true fails this test.
     */
    @Test
    void aNewWeightAtAFreedWeightsAddressGetsItsOwnParams() {
        boolean before = FastKernels.widenedParams(true);
        try {
            FastKernels.releaseWidenedParams();
            int n = 64, k = 256, groups = k / 32, words = k * 4 / 32;
            Case c = new Case(Dtype.FLOAT32, Dtype.FLOAT16, 4, 32, n, k, 3);
            float[] previous = null;
            for (int round = 0; round < 6; round++) {
                SplittableRandom rnd = new SplittableRandom(100 + round);
                float[] got;
                float[] own;
                try (ArrayScope s = ArrayScope.open()) {
                    MlxArray weight = packedWeight(rnd, n, words);
                    // Scales and biases as the two halves of one buffer, so a new weight's land together
                    // where the freed one's were.
                    MlxArray params = Mlx.astype(
                            Mlx.fromFloats(FastKernelsTest.gaussian(rnd, 2 * n * groups, 0.02), 2 * n, groups),
                            Dtype.FLOAT16);
                    MlxArray scales = Mlx.slice(params, new int[] {0, 0}, new int[] {n, groups}, new int[] {1, 1});
                    MlxArray biases = Mlx.slice(params, new int[] {n, 0}, new int[] {2 * n, groups}, new int[] {1, 1});
                    MlxArray x = Mlx.fromFloats(FastKernelsTest.gaussian(rnd, 3 * k, 1.0), 3, k);
                    Mlx.eval(weight, scales, biases, x);
                    own = unwidened(
                            x, weight, scales, biases, c, FastKernels.selected().orElseThrow());
                    got = Mlx.astype(
                                    FastKernels.quantizedMatmul(x, weight, scales, biases, 32, 4, Numerics.FAST_Q8),
                                    Dtype.FLOAT32)
                            .toFloatArray();
                }
                // No release between rounds: the freed weight's entry stays for the next round to meet.
                assertArrayEquals(own, got, "round " + round + ": the weight's own parameters");
                if (previous != null) {
                    assertTrue(!Arrays.equals(previous, got), "each round's weight is its own");
                }
                previous = got;
            }
        } finally {
            FastKernels.releaseWidenedParams();
            FastKernels.widenedParams(before);
        }
    }

    @Test
    void exactTierIsRefused() {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray x = Mlx.fromFloats(new float[64], 1, 64);
            MlxArray w = Mlx.astype(Mlx.fromInts(new int[8 * 8], 8, 8), Dtype.UINT32);
            MlxArray sc = Mlx.fromFloats(new float[8], 8, 1);
            assertThrows(
                    IllegalArgumentException.class,
                    () -> FastKernels.quantizedMatmul(x, w, sc, sc, 64, 4, Numerics.EXACT));
        }
    }

    /** A row's activations as the definition rounds them, and its groups' sums of the unrounded ones. */
    record Quantized(int[] q, float[] d, double[] sums, double[] absSums) {}

    private static Quantized quantize(float[] xs, int from, int k, int groupSize) {
        int[] q = new int[k];
        float[] d = new float[k / 32];
        for (int b = 0; b < k / 32; b++) {
            float amax = 0f;
            for (int i = b * 32; i < b * 32 + 32; i++) {
                amax = Math.max(amax, Math.abs(xs[from + i]));
            }
            d[b] = amax / 127.0f;
            float inv = amax > 0f ? 127.0f / amax : 0f;
            for (int i = b * 32; i < b * 32 + 32; i++) {
                float scaled = xs[from + i] * inv;
                q[i] = (int) Math.rint(scaled);
                if (Math.abs(q[i]) > 127) {
                    fail("an activation rounded to " + q[i]);
                }
            }
        }
        double[] sums = new double[k / groupSize];
        double[] absSums = new double[k / groupSize];
        for (int i = 0; i < k; i++) {
            sums[i / groupSize] += xs[from + i];
            absSums[i / groupSize] += Math.abs(xs[from + i]);
        }
        return new Quantized(q, d, sums, absSums);
    }
}
