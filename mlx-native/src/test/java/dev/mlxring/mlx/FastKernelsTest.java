package dev.mlxring.mlx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
 * The fast tier's kernel ({@link FastKernels}) against a float64 dot product of the same
 * operands, computed here from the packed words: {@code ref[m, n] = sum_k x[m, k] (s q + b)} in
 * double over the exactly widened inputs. Each output must be within
 * {@code TOLERANCE * sum_k |x[m, k]| (|s q| + |b|)} of it (float32 accumulation of K terms in
 * vector lanes, each lane summing K / lanes of them, then the lanes pairwise), plus
 * half an ulp of the output dtype's rounding. Cases: 4 and 8 bits × groups 32/64/128, rows 1 to
 * 9, 12, 13, 16, 17, 40 and 72 (tiles of 1..8 rows, a 16-row call, a tail; from 7 rows on AVX-512
 * and 5 on AVX2 the many-rows kernel, its passes of 12 and 6 rows and their tails, K in segments up
 * to 64 rows on AVX-512 and 24 on AVX2 and in one span above), the default
 * model's shapes (its 49152×576 8-bit head, 1536×576, 576×1536), float16/bfloat16/float32 parameters and activations, and views
 * as activations, K that is no whole number of 128-weight blocks, each on every instruction set
 * this CPU runs.
 */
class FastKernelsTest {

    /** Relative to sum |x| (|s q| + |b|): 2^-22, four float32 roundings (measured worst: ~2e-8, a third of one). */
    static final double TOLERANCE = 0x1p-22;

    record Case(Dtype act, Dtype params, int bits, int groupSize, int n, int k, int m, boolean transposed) {
        @Override
        public String toString() {
            return act.mlxName + " (params " + params.mlxName + ") b" + bits + " g" + groupSize + " N" + n + " K" + k
                    + " M" + m + (transposed ? " transposed" : "");
        }
    }

    private static List<KernelIsa> isas;

    @BeforeAll
    static void requireKernels() {
        assumeTrue(FastKernels.selected().isPresent(), "this CPU has no AVX2/FMA: the fast tier cannot run");
        isas = Arrays.stream(KernelIsa.values()).filter(FastKernels::onThisCpu).toList();
    }

    static Stream<Case> cases() {
        List<Case> c = new ArrayList<>();
        for (int bits : new int[] {4, 8}) {
            for (int g : new int[] {32, 64, 128}) {
                for (int m : new int[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 40, 72}) {
                    c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, bits, g, 84, 384, m, false));
                }
            }
        }
        // K not a whole number of the AVX-512 one-to-three-row kernel's 128-weight blocks (its
        // last block masked), and K below one block.
        // The many-rows kernel's last words that do not fill eight (44 words a row) at 13, 40 and 72
        // rows: the last segment of K, or the one span of it.
        for (int m : new int[] {1, 2, 3, 13, 40, 72}) {
            c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 4, 32, 40, 352, m, false));
            c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 4, 64, 40, 320, m, false));
            c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 4, 32, 24, 64, m, false));
        }
        c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 8, 32, 49152, 576, 1, false));
        c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 4, 32, 1536, 576, 1, false));
        c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 4, 32, 1536, 576, 31, false));
        c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 4, 32, 576, 1536, 3, false));
        c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 4, 32, 576, 1536, 64, false));
        c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 8, 32, 49152, 576, 16, false));
        for (Dtype d : new Dtype[] {Dtype.FLOAT32, Dtype.FLOAT16, Dtype.BFLOAT16}) {
            for (Dtype p : new Dtype[] {Dtype.FLOAT32, Dtype.FLOAT16, Dtype.BFLOAT16}) {
                c.add(new Case(d, p, 4, 64, 100, 576, 2, false));
                c.add(new Case(d, p, 8, 128, 36, 256, 5, false));
                c.add(new Case(d, p, 4, 64, 100, 576, 13, false));
            }
            c.add(new Case(d, d, 4, 32, 192, 576, 3, true));
            c.add(new Case(d, d, 4, 32, 192, 576, 20, true));
        }
        return c.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void withinToleranceOfFloat64(Case c) {
        SplittableRandom rnd = new SplittableRandom(c.toString().hashCode());
        try (ArrayScope s = ArrayScope.open()) {
            int words = c.k * c.bits / 32;
            int groups = c.k / c.groupSize;
            int[] w = new int[c.n * words];
            for (int i = 0; i < w.length; i++) {
                w[i] = rnd.nextInt();
            }
            MlxArray weight = Mlx.astype(Mlx.fromInts(w, c.n, words), Dtype.UINT32);
            MlxArray scales = Mlx.astype(Mlx.fromFloats(gaussian(rnd, c.n * groups, 0.02), c.n, groups), c.params);
            // Biases near -scale * 2^(bits-1), as quantization makes them: the bias term nearly
            // cancels the scale term, the hard case for the factored sum.
            float[] sv = Mlx.astype(scales, Dtype.FLOAT32).toFloatArray();
            float[] bv = new float[sv.length];
            for (int i = 0; i < bv.length; i++) {
                bv[i] = (float) (-sv[i] * (1 << (c.bits - 1)) + rnd.nextGaussian() * 0.002);
            }
            MlxArray biases = Mlx.astype(Mlx.fromFloats(bv, c.n, groups), c.params);
            float[] xv = gaussian(rnd, c.m * c.k, 1.0);
            MlxArray x = c.transposed
                    ? Mlx.transposeAll(Mlx.astype(Mlx.fromFloats(transpose(xv, c.m, c.k), c.k, c.m), c.act))
                    : Mlx.astype(Mlx.fromFloats(xv, c.m, c.k), c.act);
            float[] xs = Mlx.astype(x, Dtype.FLOAT32).toFloatArray();
            float[] ss = Mlx.astype(scales, Dtype.FLOAT32).toFloatArray();
            float[] bs = Mlx.astype(biases, Dtype.FLOAT32).toFloatArray();
            double outUlp = c.act == Dtype.FLOAT32 ? 0x1p-24 : c.act == Dtype.FLOAT16 ? 0x1p-11 : 0x1p-8;
            for (KernelIsa isa : isas) {
                MlxArray out = FastKernels.quantizedMatmul(x, weight, scales, biases, c.groupSize, c.bits, isa);
                assertTrue(FastKernels.isFast(out), "the fast kernel did not take " + c);
                float[] got = Mlx.astype(out, Dtype.FLOAT32).toFloatArray();
                assertEquals(c.m * c.n, got.length);
                double worst = 0;
                for (int m = 0; m < c.m; m++) {
                    for (int n = 0; n < c.n; n++) {
                        double ref = 0;
                        double mag = 0;
                        for (int k = 0; k < c.k; k++) {
                            int q = quant(w, n * words, k, c.bits);
                            int g = n * groups + k / c.groupSize;
                            double sq = (double) ss[g] * q;
                            ref += xs[m * c.k + k] * (sq + bs[g]);
                            mag += Math.abs(xs[m * c.k + k]) * (Math.abs(sq) + Math.abs(bs[g]));
                        }
                        double err = Math.abs(got[m * c.n + n] - ref);
                        double bound = TOLERANCE * mag + outUlp * Math.abs(ref);
                        if (!(err <= bound)) {
                            fail(isa + " " + c + ": row " + m + " column " + n + ": fast " + got[m * c.n + n]
                                    + ", float64 " + ref + ", error " + err + " > bound " + bound);
                        }
                        worst = Math.max(worst, (err - outUlp * Math.abs(ref)) / mag);
                    }
                }
                System.out.printf(
                        "FastKernelsTest %s %s: worst error / magnitude %.3g (tolerance %.3g)%n",
                        isa, c, worst, TOLERANCE);
            }
        }
    }

    @Test
    void otherWidthsAreNotCovered() {
        assertTrue(FastKernels.covers(4, 32));
        assertTrue(FastKernels.covers(8, 128));
        assertFalse(FastKernels.covers(2, 64));
        assertFalse(FastKernels.covers(4, 16));
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray x = Mlx.fromFloats(new float[2 * 64], 2, 64);
            MlxArray w = Mlx.astype(Mlx.fromInts(new int[8 * 4], 8, 4), Dtype.UINT32);
            MlxArray sc = Mlx.fromFloats(new float[8], 8, 1);
            MlxArray out = FastKernels.quantizedMatmul(x, w, sc, sc, 64, 2);
            assertFalse(FastKernels.isFast(out), "2-bit weights must take MLX's op");
            assertEquals("[2, 8]", Arrays.toString(out.shape()));
        }
    }

    /** The weight q of row {@code rowWord}'s element k: MLX packs element j of a word at bits j * bits. */
    static int quant(int[] w, int rowWord, int k, int bits) {
        int perWord = 32 / bits;
        return (w[rowWord + k / perWord] >>> (bits * (k % perWord))) & ((1 << bits) - 1);
    }

    static float[] gaussian(SplittableRandom rnd, int n, double mag) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) (rnd.nextGaussian() * mag);
        }
        return v;
    }

    private static float[] transpose(float[] a, int rows, int cols) {
        float[] t = new float[a.length];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                t[c * rows + r] = a[r * cols + c];
            }
        }
        return t;
    }
}
