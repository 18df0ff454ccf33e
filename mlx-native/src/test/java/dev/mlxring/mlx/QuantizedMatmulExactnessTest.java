package dev.mlxring.mlx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The native quantized-matmul kernel against MLX's own {@code quantized_matmul}, live, in one
 * process on the same inputs: the output bytes must be identical. Cases cover the activation
 * dtypes × bits (2 to 6 and 8) × group sizes, shapes of real models (SmolLM2's 49152×576 head and 1536×576
 * MLP, 576×1536), row counts of decode, batches and prefill, column counts that are not a
 * multiple of the kernel's 32-column unit, non-contiguous and broadcast activations, and
 * seeded random data that is ordinary, subnormal-heavy or full of NaN/Inf. MLX's scalar kernel
 * is slow with half types, so the large shapes run with few rows. Every case runs the kernels of
 * each instruction set this CPU has (AVX2, and AVX-512 where present) against the one MLX result.
 */
class QuantizedMatmulExactnessTest {

    /**
     * {@code TINY_SCALES}: ordinary activations, scales and biases near 1e-33 (below 2^-98, where the
     * kernels' pre-shifted decode would underflow, so their blocks must take the shifting decode).
     */
    enum Data {
        NORMAL,
        SUBNORMAL,
        SPECIAL,
        TINY_SCALES
    }

    enum Layout {
        CONTIGUOUS,
        TRANSPOSED,
        BROADCAST,
        STRIDED,
        BATCHED
    }

    /** {@code params}: the dtype of scales and biases (MLX promotes x and them to a common type). */
    record Case(Dtype dtype, Dtype params, int bits, int groupSize, int n, int k, int m, Data data, Layout layout) {
        Case(Dtype dtype, int bits, int groupSize, int n, int k, int m, Data data, Layout layout) {
            this(dtype, dtype, bits, groupSize, n, k, m, data, layout);
        }

        @Override
        public String toString() {
            return dtype.mlxName + (params != dtype ? " (params " + params.mlxName + ")" : "") + " b" + bits + " g"
                    + groupSize + " N" + n + " K" + k + " M" + m + " " + data + " " + layout;
        }
    }

    /** The instruction sets this CPU runs the kernels with (AVX2 first). */
    private static List<KernelIsa> isas;

    @BeforeAll
    static void requireKernels() {
        assumeTrue(Mlx.nativeKernelsAvailable(), "this CPU has no AVX2/F16C: MLX's kernel is used, nothing to compare");
        isas = java.util.Arrays.stream(KernelIsa.values())
                .filter(KernelIsa::onThisCpu)
                .toList();
        assertTrue(isas.contains(KernelIsa.AVX2));
    }

    static Stream<Case> cases() {
        List<Case> c = new ArrayList<>();
        Dtype[] dtypes = {Dtype.FLOAT32, Dtype.BFLOAT16, Dtype.FLOAT16};
        // Every dtype × bits × group size × M from 1 to 9 (passes of 1, 2, 4 and 8 rows sharing each
        // decoded weight, 3 and 7 with a repeated row, 5, 6 and 9 as two passes) on a small shape whose
        // N leaves a partial unit, block and tile.
        for (Dtype d : dtypes) {
            for (int bits : new int[] {2, 4, 8}) {
                for (int g : new int[] {32, 64, 128}) {
                    for (int m = 1; m <= 9; m++) {
                        c.add(new Case(d, bits, g, 84, 384, m, Data.NORMAL, Layout.CONTIGUOUS));
                    }
                }
            }
        }
        for (Dtype d : dtypes) {
            boolean half = d != Dtype.FLOAT32;
            // The models' shapes: the tied 8-bit head, the 4-bit MLP and attention projections.
            c.add(new Case(d, 8, 32, 49152, 576, 1, Data.NORMAL, Layout.CONTIGUOUS));
            c.add(new Case(d, 4, 64, 49152, 576, 1, Data.NORMAL, Layout.CONTIGUOUS));
            for (int m : half ? new int[] {1, 2, 5, 9} : new int[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 31, 127}) {
                c.add(new Case(d, 4, 32, 1536, 576, m, Data.NORMAL, Layout.CONTIGUOUS));
            }
            c.add(new Case(d, 4, 32, 576, 1536, half ? 3 : 31, Data.NORMAL, Layout.CONTIGUOUS));
            c.add(new Case(d, 8, 64, 192, 576, half ? 31 : 127, Data.NORMAL, Layout.CONTIGUOUS));
            c.add(new Case(d, 4, 32, half ? 64 : 192, half ? 256 : 576, 512, Data.NORMAL, Layout.CONTIGUOUS));
            // Subnormal-heavy and NaN/Inf data, one and several rows.
            for (Data data : new Data[] {Data.SUBNORMAL, Data.SPECIAL}) {
                for (int bits : new int[] {4, 8}) {
                    c.add(new Case(d, bits, 32, 576, 576, 1, data, Layout.CONTIGUOUS));
                    c.add(new Case(d, bits, 128, 200, 256, 7, data, Layout.CONTIGUOUS));
                }
            }
            // Activations the graph can hand over as views.
            for (Layout layout : new Layout[] {Layout.TRANSPOSED, Layout.BROADCAST, Layout.STRIDED, Layout.BATCHED}) {
                c.add(new Case(d, 4, 32, 192, 576, 1, Data.NORMAL, layout));
                c.add(new Case(d, 4, 64, 200, 256, 6, Data.NORMAL, layout));
            }
        }
        // Both kernels read rows eight words at a time (transposed in registers) and gathers a
        // row's last words when they do not fill eight; it widens group parameters eight groups at a
        // time and the rest one by one. Rows whose packed length leaves such tails (4-bit K 160:
        // 20 words; 2-bit K 576: 36 words; 2-bit K 192: 12 words), groups that are not a multiple
        // of eight, and N leaving a partial unit, for every activation dtype and each parameter dtype.
        for (Dtype d : dtypes) {
            for (Dtype params : dtypes) {
                c.add(new Case(d, params, 4, 32, 84, 160, 1, Data.NORMAL, Layout.CONTIGUOUS));
                c.add(new Case(d, params, 2, 32, 84, 576, 1, Data.NORMAL, Layout.CONTIGUOUS));
                c.add(new Case(d, params, 2, 64, 36, 192, 1, Data.SPECIAL, Layout.CONTIGUOUS));
                c.add(new Case(d, params, 8, 32, 100, 1152, 1, Data.SUBNORMAL, Layout.CONTIGUOUS));
            }
            // The M > 1 kernel decodes its weights through the same reads; from 5 rows (AVX-512) a
            // panel of 16 words at a time, here 16 and then 4 with gathered tails.
            c.add(new Case(d, 4, 32, 84, 160, 3, Data.NORMAL, Layout.CONTIGUOUS));
            c.add(new Case(d, 4, 32, 84, 160, 9, Data.NORMAL, Layout.CONTIGUOUS));
            c.add(new Case(d, 8, 32, 84, 160, 12, Data.SPECIAL, Layout.CONTIGUOUS));
            c.add(new Case(d, 2, 32, 84, 576, 5, Data.SPECIAL, Layout.CONTIGUOUS));
        }
        // Scales too small to pre-shift exactly (float32 and bfloat16 parameters; float16's smallest is
        // 2^-24): every bit width, one and several rows.
        for (Dtype d : new Dtype[] {Dtype.FLOAT32, Dtype.BFLOAT16}) {
            for (Dtype params : new Dtype[] {Dtype.FLOAT32, Dtype.BFLOAT16}) {
                for (int bits : new int[] {2, 4, 8}) {
                    c.add(new Case(d, params, bits, 32, 84, 384, 1, Data.TINY_SCALES, Layout.CONTIGUOUS));
                }
                c.add(new Case(d, params, 4, 64, 84, 384, 3, Data.TINY_SCALES, Layout.CONTIGUOUS));
                c.add(new Case(d, params, 8, 32, 84, 384, 9, Data.TINY_SCALES, Layout.CONTIGUOUS));
            }
        }
        straddlingWidths(c, dtypes);
        // Mixed dtypes, as models store them: SmolLM2 has float16 scales under float32 activations.
        c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 4, 32, 1536, 576, 1, Data.NORMAL, Layout.CONTIGUOUS));
        c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 8, 32, 49152, 576, 1, Data.NORMAL, Layout.CONTIGUOUS));
        c.add(new Case(Dtype.FLOAT32, Dtype.FLOAT16, 4, 32, 576, 576, 9, Data.SPECIAL, Layout.CONTIGUOUS));
        c.add(new Case(Dtype.FLOAT32, Dtype.BFLOAT16, 4, 64, 576, 576, 4, Data.SUBNORMAL, Layout.CONTIGUOUS));
        c.add(new Case(Dtype.FLOAT16, Dtype.BFLOAT16, 4, 64, 200, 256, 3, Data.NORMAL, Layout.CONTIGUOUS));
        c.add(new Case(Dtype.BFLOAT16, Dtype.FLOAT32, 8, 128, 200, 256, 2, Data.NORMAL, Layout.CONTIGUOUS));
        return c.stream();
    }

    /**
     * 3, 5 and 6 bits, whose values straddle 32-bit words (MLX packs them as one bit stream per
     * row; the kernels read them eight packs of 3 or 5 words at a time and gather a row's last
     * packs): every dtype × width × group size × M from 1 to 9 on the small shape (K 384: 3-bit
     * rows of 36 words end in four gathered packs, 5-bit of 60 words in four, 6-bit of 72 in
     * none), the MLP/attention/head shapes of 3- and 6-bit checkpoints, rows too short for one
     * eight-pack read, subnormal-heavy, NaN/Inf and tiny-scale data, views, and mixed parameter
     * dtypes.
     */
    private static void straddlingWidths(List<Case> c, Dtype[] dtypes) {
        for (Dtype d : dtypes) {
            boolean half = d != Dtype.FLOAT32;
            for (int bits : new int[] {3, 5, 6}) {
                for (int g : new int[] {32, 64, 128}) {
                    for (int m = 1; m <= 9; m++) {
                        c.add(new Case(d, bits, g, 84, 384, m, Data.NORMAL, Layout.CONTIGUOUS));
                    }
                }
                // Rows shorter than eight packs (3-bit K 160: 15 words; 5-bit K 96: 15; 6-bit K 160: 30).
                c.add(new Case(d, bits, 32, 84, bits == 5 ? 96 : 160, 1, Data.NORMAL, Layout.CONTIGUOUS));
                c.add(new Case(d, bits, 32, 84, bits == 5 ? 96 : 160, 3, Data.NORMAL, Layout.CONTIGUOUS));
                for (Data data : new Data[] {Data.SUBNORMAL, Data.SPECIAL, Data.TINY_SCALES}) {
                    if (data == Data.TINY_SCALES && d == Dtype.FLOAT16) {
                        continue; // float16 cannot hold such scales
                    }
                    c.add(new Case(d, bits, 32, 576, 576, 1, data, Layout.CONTIGUOUS));
                    c.add(new Case(d, bits, 128, 200, 256, 7, data, Layout.CONTIGUOUS));
                }
            }
            for (int bits : new int[] {3, 6}) {
                c.add(new Case(d, bits, 64, 49152, 576, 1, Data.NORMAL, Layout.CONTIGUOUS));
                for (int m : half ? new int[] {1, 2, 9} : new int[] {1, 2, 5, 9, 31, 127}) {
                    c.add(new Case(d, bits, 64, 1536, 576, m, Data.NORMAL, Layout.CONTIGUOUS));
                }
                c.add(new Case(d, bits, 64, 576, 1536, half ? 3 : 31, Data.NORMAL, Layout.CONTIGUOUS));
                c.add(new Case(d, bits, 32, 192, 576, half ? 31 : 127, Data.NORMAL, Layout.CONTIGUOUS));
                for (Layout layout :
                        new Layout[] {Layout.TRANSPOSED, Layout.BROADCAST, Layout.STRIDED, Layout.BATCHED}) {
                    c.add(new Case(d, bits, 32, 192, 576, 1, Data.NORMAL, layout));
                    c.add(new Case(d, bits, 64, 200, 256, 6, Data.NORMAL, layout));
                }
            }
            for (Dtype params : dtypes) {
                if (params != d) {
                    c.add(new Case(d, params, 3, 64, 84, 384, 2, Data.NORMAL, Layout.CONTIGUOUS));
                    c.add(new Case(d, params, 6, 32, 84, 384, 1, Data.SUBNORMAL, Layout.CONTIGUOUS));
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void sameBytesAsMlx(Case c) {
        SplittableRandom rnd = new SplittableRandom(c.toString().hashCode());
        try (ArrayScope s = ArrayScope.open()) {
            int words = c.k * c.bits / 32;
            int[] w = new int[c.n * words];
            for (int i = 0; i < w.length; i++) {
                w[i] = rnd.nextInt();
            }
            MlxArray weight = Mlx.astype(Mlx.fromInts(w, c.n, words), Dtype.UINT32);
            int groups = c.k / c.groupSize;
            float scaleMag = switch (c.data) {
                case NORMAL -> 0.02f;
                case SUBNORMAL -> c.dtype == Dtype.FLOAT16 ? 2e-4f : 1e-20f;
                case SPECIAL -> c.dtype == Dtype.FLOAT16 ? 3000f : 1e30f;
                case TINY_SCALES -> 1e-33f;
            };
            MlxArray scales =
                    Mlx.astype(Mlx.fromFloats(values(rnd, c.n * groups, scaleMag, Data.NORMAL), c.n, groups), c.params);
            MlxArray biases = Mlx.astype(
                    Mlx.fromFloats(values(rnd, c.n * groups, scaleMag * 4, Data.NORMAL), c.n, groups), c.params);
            float xMag = switch (c.data) {
                case NORMAL -> 1f;
                case SUBNORMAL -> c.dtype == Dtype.FLOAT16 ? 5e-3f : 1e-19f;
                case SPECIAL -> c.dtype == Dtype.FLOAT16 ? 30f : 1e10f;
                case TINY_SCALES -> 1f;
            };
            MlxArray x = activations(c, rnd, xMag);
            MlxArray expected = Mlx.quantizedMatmul(x, weight, scales, biases, true, c.groupSize, c.bits);
            byte[] expectedBytes = expected.toBytes();
            for (KernelIsa isa : isas) {
                MlxArray actual = Mlx.nativeQuantizedMatmul(x, weight, scales, biases, true, c.groupSize, c.bits, isa);
                assertTrue(Mlx.isNativeQuantizedMatmul(actual), "the native kernel did not take " + c);
                assertEquals(expected.dtype(), actual.dtype());
                assertEquals(java.util.Arrays.toString(expected.shape()), java.util.Arrays.toString(actual.shape()));
                compare(isa + " " + c, c, expectedBytes, actual.toBytes());
            }
            assertDequantizedSame(c, x, weight, scales, biases, expectedBytes);
        }
    }

    /**
     * Where the activations are float16 or bfloat16 and of the group parameters' dtype, the kernels
     * over the weights' dequantized layout ({@code --dequantized-weights}) must give MLX's bytes
     * too, for every instruction set, the layout evaluated once and read by each.
     */
    private static void assertDequantizedSame(
            Case c, MlxArray x, MlxArray weight, MlxArray scales, MlxArray biases, byte[] expected) {
        if (!DequantizedWeights.covers(scales, biases, c.bits, c.groupSize) || x.dtype() != scales.dtype()) {
            return;
        }
        MlxArray layout = DequantizedWeights.layout(weight, scales, biases, c.groupSize, c.bits);
        for (KernelIsa isa : isas) {
            MlxArray actual =
                    DequantizedWeights.quantizedMatmul(x, weight, scales, biases, layout, c.groupSize, c.bits, isa);
            assertTrue(DequantizedWeights.computes(actual), "the dequantized kernel did not take " + c);
            compare("dequantized " + isa + " " + c, c, expected, actual.toBytes());
        }
    }

    /** x of shape [M, K] (or [2, M, K]) as the layout asks, its values drawn for the data kind. */
    private static MlxArray activations(Case c, SplittableRandom rnd, float mag) {
        return switch (c.layout) {
            case CONTIGUOUS -> Mlx.astype(Mlx.fromFloats(values(rnd, c.m * c.k, mag, c.data), c.m, c.k), c.dtype);
            case TRANSPOSED ->
                Mlx.transposeAll(Mlx.astype(Mlx.fromFloats(values(rnd, c.m * c.k, mag, c.data), c.k, c.m), c.dtype));
            case BROADCAST ->
                Mlx.broadcastTo(Mlx.astype(Mlx.fromFloats(values(rnd, c.k, mag, c.data), 1, c.k), c.dtype), c.m, c.k);
            case STRIDED ->
                Mlx.slice(
                        Mlx.astype(Mlx.fromFloats(values(rnd, c.m * 2 * c.k, mag, c.data), c.m, 2 * c.k), c.dtype),
                        new int[] {0, 1},
                        new int[] {c.m, 2 * c.k},
                        new int[] {1, 2});
            case BATCHED -> Mlx.astype(Mlx.fromFloats(values(rnd, 2 * c.m * c.k, mag, c.data), 2, c.m, c.k), c.dtype);
        };
    }

    private static float[] values(SplittableRandom rnd, int n, float mag, Data data) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) (rnd.nextGaussian() * mag);
            if (data == Data.SPECIAL) {
                int r = rnd.nextInt(64);
                if (r == 0) {
                    v[i] = Float.NaN;
                } else if (r == 1) {
                    v[i] = Float.intBitsToFloat(0xffc00000); // NaN with the sign bit
                } else if (r == 2) {
                    v[i] = Float.POSITIVE_INFINITY;
                } else if (r == 3) {
                    v[i] = Float.NEGATIVE_INFINITY;
                }
            }
        }
        return v;
    }

    private static void compare(String what, Case c, byte[] expected, byte[] actual) {
        assertEquals(expected.length, actual.length, "byte count of " + what);
        int size = expected.length / (c.m * c.n * (c.layout == Layout.BATCHED ? 2 : 1));
        for (int i = 0; i < expected.length; i += size) {
            for (int b = 0; b < size; b++) {
                if (expected[i + b] != actual[i + b]) {
                    fail(what + ": element " + i / size + " (row " + i / size / c.n + ", column " + i / size % c.n
                            + ") differs: MLX " + hex(expected, i, size) + ", native " + hex(actual, i, size));
                }
            }
        }
    }

    private static String hex(byte[] a, int at, int size) {
        StringBuilder sb = new StringBuilder("0x");
        for (int b = size - 1; b >= 0; b--) {
            sb.append(String.format("%02x", a[at + b]));
        }
        return sb.toString();
    }

    /**
     * Which operand of a multiply or add comes first decides the sign of a NaN when both are
     * NaN; MLX's order comes from its compiled code, not its source, and varies with the
     * position in the group. Row j of x holds -NaN at 0 and +NaN at j (both reach the sum),
     * so the rows probe the add's order at every position; a second call makes every weight
     * -NaN (scale inf, q 0) under +NaN activations to probe the multiply's.
     */
    @ParameterizedTest(name = "{0} b{1} g{2}")
    @MethodSource("nanProbes")
    void nanOperandOrderAsMlx(Dtype dtype, int bits, int groupSize) {
        try (ArrayScope s = ArrayScope.open()) {
            int k = 2 * groupSize;
            int n = 8;
            int m = k - 1;
            int words = k * bits / 32;
            // Every weight q = 1: the values' bit stream (which straddles words at 3, 5 and 6 bits).
            int[] w = new int[n * words];
            for (int r = 0; r < n; r++) {
                for (int e = 0; e < k; e++) {
                    long at = (long) r * words * 32 + (long) bits * e;
                    w[(int) (at / 32)] |= 1 << (at % 32);
                }
            }
            float[] x = new float[m * k];
            for (int j = 1; j < k; j++) {
                x[(j - 1) * k] = Float.intBitsToFloat(0xffc00000);
                x[(j - 1) * k + j] = Float.NaN;
            }
            float[] ones = new float[n * 2];
            java.util.Arrays.fill(ones, 1f);
            check(dtype, bits, groupSize, Mlx.fromFloats(x, m, k), w, ones, new float[n * 2], n, words, true);
            float[] allNan = new float[2 * k];
            java.util.Arrays.fill(allNan, Float.NaN);
            float[] inf = new float[n * 2];
            java.util.Arrays.fill(inf, Float.POSITIVE_INFINITY);
            check(
                    dtype,
                    bits,
                    groupSize,
                    Mlx.fromFloats(allNan, 2, k),
                    new int[n * words],
                    inf,
                    new float[n * 2],
                    n,
                    words,
                    false);
        }
    }

    private static void check(
            Dtype dtype,
            int bits,
            int groupSize,
            MlxArray x32,
            int[] w,
            float[] scales,
            float[] biases,
            int n,
            int words,
            boolean mixedSigns) {
        MlxArray x = Mlx.astype(x32, dtype);
        MlxArray weight = Mlx.astype(Mlx.fromInts(w, n, words), Dtype.UINT32);
        MlxArray sc = Mlx.astype(Mlx.fromFloats(scales, n, 2), dtype);
        MlxArray bi = Mlx.astype(Mlx.fromFloats(biases, n, 2), dtype);
        MlxArray expected = Mlx.quantizedMatmul(x, weight, sc, bi, true, groupSize, bits);
        byte[] e = expected.toBytes();
        if (mixedSigns && dtype == Dtype.FLOAT32) {
            // The probe discriminates only if MLX's answers differ in sign across positions.
            java.util.Set<Integer> signs = new java.util.HashSet<>();
            for (int i = 3; i < e.length; i += 4) {
                signs.add(e[i] & 0x80);
            }
            if (bits != 8 && !(bits == 4 && groupSize != 32)) {
                assertEquals(2, signs.size(), "MLX's NaN signs should vary with the position here");
            }
        }
        Case c = new Case(dtype, bits, groupSize, n, 2 * groupSize, x.dim(0), Data.SPECIAL, Layout.CONTIGUOUS);
        for (KernelIsa isa : isas) {
            MlxArray actual = Mlx.nativeQuantizedMatmul(x, weight, sc, bi, true, groupSize, bits, isa);
            assertTrue(Mlx.isNativeQuantizedMatmul(actual));
            compare(isa + " " + c, c, e, actual.toBytes());
        }
        assertDequantizedSame(c, x, weight, sc, bi, e);
    }

    static Stream<org.junit.jupiter.params.provider.Arguments> nanProbes() {
        List<org.junit.jupiter.params.provider.Arguments> a = new ArrayList<>();
        for (Dtype d : new Dtype[] {Dtype.FLOAT32, Dtype.FLOAT16, Dtype.BFLOAT16}) {
            for (int bits : new int[] {2, 3, 4, 5, 6, 8}) {
                for (int g : new int[] {32, 64, 128}) {
                    a.add(org.junit.jupiter.params.provider.Arguments.of(d, bits, g));
                }
            }
        }
        return a.stream();
    }

    /**
     * A NaN made by an invalid operation (Inf + -Inf) is x86's 0xFFC00000, negative; MLX rounds
     * every bfloat16 NaN to 0x7FC0, which the kernels do when they store (they carry NaNs through
     * their bfloat16 roundings as they are): every output here must be 0x7FC0, as MLX's, for
     * single rows and for passes of several.
     */
    @Test
    void bfloat16NanOfAnInvalidOperationIsStoredAsMlx() {
        try (ArrayScope s = ArrayScope.open()) {
            int k = 64;
            int n = 40;
            int m = 8;
            float[] x = new float[m * k];
            for (int r = 0; r < m; r++) {
                x[r * k + r] = Float.POSITIVE_INFINITY;
                x[r * k + r + 1] = Float.NEGATIVE_INFINITY;
            }
            int[] w = new int[n * k * 4 / 32];
            java.util.Arrays.fill(w, 0x11111111); // every weight q = 1
            float[] ones = new float[n];
            java.util.Arrays.fill(ones, 1f);
            MlxArray weight = Mlx.astype(Mlx.fromInts(w, n, k * 4 / 32), Dtype.UINT32);
            MlxArray sc = Mlx.astype(Mlx.fromFloats(ones, n, 1), Dtype.BFLOAT16);
            MlxArray bi = Mlx.astype(Mlx.fromFloats(new float[n], n, 1), Dtype.BFLOAT16);
            for (int rows : new int[] {1, 8}) {
                MlxArray xs = Mlx.astype(Mlx.fromFloats(java.util.Arrays.copyOf(x, rows * k), rows, k), Dtype.BFLOAT16);
                byte[] e = Mlx.quantizedMatmul(xs, weight, sc, bi, true, 64, 4).toBytes();
                for (int i = 0; i < e.length; i += 2) {
                    assertEquals(0x7fc0, (e[i] & 0xff) | (e[i + 1] & 0xff) << 8, "MLX's bfloat16 NaN");
                }
                Case c = new Case(Dtype.BFLOAT16, 4, 64, n, k, rows, Data.SPECIAL, Layout.CONTIGUOUS);
                for (KernelIsa isa : isas) {
                    MlxArray actual = Mlx.nativeQuantizedMatmul(xs, weight, sc, bi, true, 64, 4, isa);
                    assertTrue(Mlx.isNativeQuantizedMatmul(actual));
                    compare(isa + " " + c, c, e, actual.toBytes());
                }
                assertDequantizedSame(c, xs, weight, sc, bi, e);
            }
        }
    }

    @Test
    void uncoveredCasesTakeMlxsOp() {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray x = Mlx.fromFloats(new float[64], 1, 64);
            MlxArray[] q4 = Mlx.quantize(Mlx.fromFloats(new float[64 * 64], 64, 64), 64, 4);
            assertTrue(
                    !Mlx.isNativeQuantizedMatmul(Mlx.nativeQuantizedMatmul(x, q4[0], q4[1], q4[2], false, 64, 4)),
                    "transpose=false is not covered");
        }
    }

    /**
     * A dequantized layout is read only by activations of its dtype: float32 activations (a model
     * whose norms are float32) take the packed kernels, with MLX's bytes.
     */
    @Test
    void dequantizedLayoutOfAnotherDtypeIsNotRead() {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray[] q4 = Mlx.quantize(
                    Mlx.astype(
                            Mlx.fromFloats(values(new SplittableRandom(7), 64 * 128, 1f, Data.NORMAL), 64, 128),
                            Dtype.BFLOAT16),
                    64,
                    4);
            assertEquals(Dtype.BFLOAT16, q4[1].dtype());
            MlxArray layout = DequantizedWeights.layout(q4[0], q4[1], q4[2], 64, 4);
            MlxArray x = Mlx.fromFloats(values(new SplittableRandom(8), 3 * 128, 1f, Data.NORMAL), 3, 128);
            MlxArray y = DequantizedWeights.quantizedMatmul(x, q4[0], q4[1], q4[2], layout, 64, 4);
            assertTrue(!DequantizedWeights.computes(y) && Mlx.isNativeQuantizedMatmul(y));
            assertEquals(
                    java.util.HexFormat.of()
                            .formatHex(Mlx.quantizedMatmul(x, q4[0], q4[1], q4[2], true, 64, 4)
                                    .toBytes()),
                    java.util.HexFormat.of().formatHex(y.toBytes()));
            assertTrue(
                    !DequantizedWeights.covers(
                            Mlx.astype(q4[1], Dtype.FLOAT32), Mlx.astype(q4[2], Dtype.FLOAT32), 4, 64),
                    "float32 group parameters have no half-type layout");
            MlxException e =
                    assertThrows(MlxException.class, () -> DequantizedWeights.layout(q4[0], q4[1], q4[2], 64, 7));
            assertTrue(e.getMessage().contains("7 bits"), e.getMessage());
        }
    }

    /**
     * The entries (the exact kernels' and the fast tier's) build their primitives directly only for
     * operands MLX's op accepts unchanged; any other (here a K that does not match the weight's, and
     * scales without biases' shape) still gets MLX's validation and its message.
     */
    @Test
    void invalidOperandsGetMlxsError() {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray[] q4 = Mlx.quantize(Mlx.fromFloats(new float[64 * 128], 64, 128), 64, 4);
            MlxArray wrongK = Mlx.fromFloats(new float[64], 1, 64);
            assertMlxError(
                    "[quantized_matmul] Last dimension of first input",
                    () -> Mlx.nativeQuantizedMatmul(wrongK, q4[0], q4[1], q4[2], true, 64, 4),
                    () -> FastKernels.quantizedMatmul(wrongK, q4[0], q4[1], q4[2], 64, 4));
            MlxArray x = Mlx.fromFloats(new float[128], 1, 128);
            MlxArray oneGroup = Mlx.fromFloats(new float[64], 64, 1);
            assertMlxError(
                    "Scales and biases should have the same shape",
                    () -> Mlx.nativeQuantizedMatmul(x, q4[0], q4[1], oneGroup, true, 64, 4),
                    () -> FastKernels.quantizedMatmul(x, q4[0], q4[1], oneGroup, 64, 4));
            // the entry over a dequantized layout checks ranks before it reads a shape
            MlxArray[] b4 =
                    Mlx.quantize(Mlx.astype(Mlx.fromFloats(new float[64 * 128], 64, 128), Dtype.BFLOAT16), 64, 4);
            MlxArray layout = DequantizedWeights.layout(b4[0], b4[1], b4[2], 64, 4);
            MlxArray xb = Mlx.astype(x, Dtype.BFLOAT16);
            MlxArray scalarWeight = Mlx.scalar(1, Dtype.UINT32);
            assertMlxError(
                    "Weight and scales should have the same batch shape",
                    () -> Mlx.nativeQuantizedMatmul(xb, scalarWeight, b4[1], b4[2], true, 64, 4),
                    () -> DequantizedWeights.quantizedMatmul(xb, scalarWeight, b4[1], b4[2], layout, 64, 4));
        }
    }

    private static void assertMlxError(String fragment, Executable... calls) {
        for (Executable call : calls) {
            MlxException e = assertThrows(MlxException.class, call);
            assertTrue(e.getMessage().contains(fragment), e.getMessage());
        }
    }
}
