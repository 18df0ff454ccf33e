package dev.mlxring.mlx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.mlxring.mlx.SameBytes.Data;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The native dense matmul ({@code x @ W.T} of an unquantized Linear) against MLX's own
 * {@code matmul(x, transpose(W))}, live, in one process on the same inputs: the output bytes must
 * be identical, NaN signs included. Cases cover the three dtypes, the projection and head shapes
 * of real models (576×576, 1536×576, 576×1536, 2304×768, 49152×576), every row count of one
 * pass (1..9) and prefill chunks (31, 127, 512), contraction lengths that leave every remainder
 * of MLX's blocks of 16, column counts that leave partial tiles, the layouts the graph hands over
 * (transposed, broadcast, strided and batched activations), and seeded data that is ordinary,
 * subnormal-heavy or full of NaN/Inf. MLX's half-precision kernel is scalar and slow, so the large
 * shapes run with few rows. Every case runs the kernels of each instruction set this CPU has
 * against the one MLX result.
 */
class DenseMatmulExactnessTest {

    enum Layout {
        CONTIGUOUS,
        TRANSPOSED,
        BROADCAST,
        STRIDED,
        BATCHED
    }

    record Case(Dtype dtype, int n, int k, int m, Data data, Layout layout) {
        @Override
        public String toString() {
            return dtype.mlxName + " N" + n + " K" + k + " M" + m + " " + data + " " + layout;
        }
    }

    /** The instruction sets this CPU runs the kernels with (AVX2 first). */
    private static List<KernelIsa> isas;

    @BeforeAll
    static void requireKernels() {
        assumeTrue(Mlx.nativeKernelsAvailable(), "this CPU has no AVX2/F16C: MLX's op is used, nothing to compare");
        isas = Arrays.stream(KernelIsa.values()).filter(KernelIsa::onThisCpu).toList();
        assertTrue(isas.contains(KernelIsa.AVX2));
    }

    static Stream<Case> cases() {
        List<Case> c = new ArrayList<>();
        Dtype[] dtypes = {Dtype.FLOAT32, Dtype.BFLOAT16, Dtype.FLOAT16};
        for (Dtype d : dtypes) {
            boolean half = d != Dtype.FLOAT32;
            // Every pass size (1, 2, 4, 8 rows; 3 and 7 with a repeated row; 5, 6, 9 as two passes) on a
            // shape whose N leaves partial blocks and tiles.
            for (int m = 1; m <= 9; m++) {
                c.add(new Case(d, 84, 160, m, Data.NORMAL, Layout.CONTIGUOUS));
            }
            // The models' shapes: SmolLM2's attention, MLP and tied head, qwen3-bench-bf16's MLP.
            for (int m : new int[] {1, 5, 31}) {
                c.add(new Case(d, 576, 576, m, Data.NORMAL, Layout.CONTIGUOUS));
            }
            for (int m : new int[] {1, 9}) {
                c.add(new Case(d, 1536, 576, m, Data.NORMAL, Layout.CONTIGUOUS));
            }
            c.add(new Case(d, 576, 1536, 1, Data.NORMAL, Layout.CONTIGUOUS));
            c.add(new Case(d, 576, 1536, half ? 9 : 127, Data.NORMAL, Layout.CONTIGUOUS));
            c.add(new Case(d, 2304, 768, 1, Data.NORMAL, Layout.CONTIGUOUS));
            c.add(new Case(d, 768, 2304, half ? 8 : 127, Data.NORMAL, Layout.CONTIGUOUS));
            c.add(new Case(d, 49152, 576, 1, Data.NORMAL, Layout.CONTIGUOUS));
            // Prefill: 512 rows are eight slabs of 64 (half types on a narrower N: MLX's kernel is slow).
            c.add(new Case(d, half ? 40 : 576, 576, 512, Data.NORMAL, Layout.CONTIGUOUS));
            c.add(new Case(d, 96, 768, half ? 127 : 512, Data.NORMAL, Layout.CONTIGUOUS));
            // Every remainder of simd_gemm's blocks of 16 (its partial block, element by element).
            for (int tail = 1; tail < 16; tail++) {
                c.add(new Case(d, 40, 32 + tail, tail % 4 + 1, Data.SPECIAL, Layout.CONTIGUOUS));
            }
            c.add(new Case(d, 17, 7, 3, Data.NORMAL, Layout.CONTIGUOUS));
            // Subnormal-heavy and NaN/Inf data, one and several rows.
            for (Data data : new Data[] {Data.SUBNORMAL, Data.SPECIAL}) {
                c.add(new Case(d, 576, 576, 1, data, Layout.CONTIGUOUS));
                c.add(new Case(d, 200, 256, 7, data, Layout.CONTIGUOUS));
                c.add(new Case(d, 100, 2304, 2, data, Layout.CONTIGUOUS));
            }
            // Activations the graph can hand over as views.
            for (Layout layout : new Layout[] {Layout.TRANSPOSED, Layout.BROADCAST, Layout.STRIDED, Layout.BATCHED}) {
                c.add(new Case(d, 192, 576, 1, Data.NORMAL, layout));
                c.add(new Case(d, 200, 256, 6, Data.SPECIAL, layout));
            }
        }
        return c.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void sameBytesAsMlx(Case c) {
        SplittableRandom rnd = SameBytes.seeded(c);
        try (ArrayScope s = ArrayScope.open()) {
            float mag = SameBytes.magnitude(c.data, c.dtype);
            MlxArray w = SameBytes.array(rnd, c.dtype, mag, c.data, c.n, c.k);
            Mlx.eval(w);
            MlxArray x = activations(c, rnd, mag);
            MlxArray expected = Mlx.matmul(x, Mlx.transposeAll(w));
            byte[] e = expected.toBytes();
            for (KernelIsa isa : isas) {
                MlxArray actual = Mlx.nativeLinear(x, w, isa);
                assertTrue(Mlx.isNativeLinear(actual), "the native kernel did not take " + c);
                assertEquals(expected.dtype(), actual.dtype());
                assertEquals(Arrays.toString(expected.shape()), Arrays.toString(actual.shape()));
                SameBytes.assertIdentical(isa + " " + c, c.n, e, actual.toBytes(), expected.dtype().sizeInBytes);
            }
        }
    }

    /** x of shape [M, K] (or [2, M, K]) as the layout asks. */
    private static MlxArray activations(Case c, SplittableRandom rnd, float mag) {
        return switch (c.layout) {
            case CONTIGUOUS -> SameBytes.array(rnd, c.dtype, mag, c.data, c.m, c.k);
            case TRANSPOSED -> Mlx.transposeAll(SameBytes.array(rnd, c.dtype, mag, c.data, c.k, c.m));
            case BROADCAST -> Mlx.broadcastTo(SameBytes.array(rnd, c.dtype, mag, c.data, 1, c.k), c.m, c.k);
            case STRIDED ->
                Mlx.slice(
                        SameBytes.array(rnd, c.dtype, mag, c.data, c.m, 2 * c.k),
                        new int[] {0, 1},
                        new int[] {c.m, 2 * c.k},
                        new int[] {1, 2});
            case BATCHED -> SameBytes.array(rnd, c.dtype, mag, c.data, 2, c.m, c.k);
        };
    }

    /**
     * Which operand of a multiply or add comes first decides the sign of a NaN where two NaNs
     * meet; MLX's order comes from its compiled code and, for the half types, varies with the
     * position in simd_gemm's blocks of 16 and in its partial last block. Row j - 1 of the add
     * probe holds -NaN at 0 and +NaN at j (every weight 1), so the output's sign is the add's order
     * at position j; in the multiply probe output (j, j) meets a +NaN activation and a -NaN weight
     * at position j only. Every contraction length of one and two blocks plus a remainder.
     */
    @ParameterizedTest(name = "{0} K{1}")
    @MethodSource("nanProbes")
    void nanOperandOrderAsMlx(Dtype dtype, int k) {
        float minusNan = Float.intBitsToFloat(0xffc00000);
        try (ArrayScope s = ArrayScope.open()) {
            float[] x = new float[(k - 1) * k];
            for (int j = 1; j < k; j++) {
                x[(j - 1) * k] = minusNan;
                x[(j - 1) * k + j] = Float.NaN;
            }
            float[] ones = new float[3 * k];
            Arrays.fill(ones, 1f);
            probe(dtype, x, k - 1, ones, 3, k);
            float[] xd = new float[k * k];
            float[] wd = new float[k * k];
            Arrays.fill(xd, 1f);
            Arrays.fill(wd, 1f);
            for (int j = 0; j < k; j++) {
                xd[j * k + j] = Float.NaN;
                wd[j * k + j] = minusNan;
            }
            probe(dtype, xd, k, wd, k, k);
        }
    }

    private static void probe(Dtype dtype, float[] x, int m, float[] w, int n, int k) {
        MlxArray xa = Mlx.astype(Mlx.fromFloats(x, m, k), dtype);
        MlxArray wa = Mlx.astype(Mlx.fromFloats(w, n, k), dtype);
        Mlx.eval(wa);
        byte[] e = Mlx.matmul(xa, Mlx.transposeAll(wa)).toBytes();
        for (KernelIsa isa : isas) {
            MlxArray actual = Mlx.nativeLinear(xa, wa, isa);
            assertTrue(Mlx.isNativeLinear(actual));
            SameBytes.assertIdentical(
                    isa + " " + dtype.mlxName + " NaN probe K" + k, n, e, actual.toBytes(), dtype.sizeInBytes);
        }
    }

    static Stream<Arguments> nanProbes() {
        List<Arguments> a = new ArrayList<>();
        for (Dtype d : new Dtype[] {Dtype.FLOAT32, Dtype.FLOAT16, Dtype.BFLOAT16}) {
            for (int k = 2; k < 48; k++) {
                if (d == Dtype.FLOAT16 || k % 8 == 3) {
                    a.add(Arguments.of(d, k));
                }
            }
        }
        return a.stream();
    }

    @Test
    void uncoveredCasesTakeMlxsOp() {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray w = Mlx.astype(Mlx.fromFloats(new float[64 * 32], 64, 32), Dtype.BFLOAT16);
            Mlx.eval(w);
            MlxArray x32 = Mlx.fromFloats(new float[2 * 32], 2, 32);
            assertFalse(Mlx.isNativeLinear(Mlx.nativeLinear(x32, w)), "mixed dtypes (MLX promotes W) are not covered");
            MlxArray lazy = Mlx.astype(Mlx.fromFloats(new float[64 * 32], 64, 32), Dtype.BFLOAT16);
            MlxArray x = Mlx.astype(x32, Dtype.BFLOAT16);
            assertFalse(Mlx.isNativeLinear(Mlx.nativeLinear(x, lazy)), "an unevaluated W is not covered");
            MlxArray wt = Mlx.transposeAll(Mlx.astype(Mlx.fromFloats(new float[64 * 32], 32, 64), Dtype.BFLOAT16));
            Mlx.eval(wt);
            assertFalse(Mlx.isNativeLinear(Mlx.nativeLinear(x, wt)), "a transposed W is not covered");
            assertTrue(Mlx.isNativeLinear(Mlx.nativeLinear(x, w)));
        }
    }

    @Test
    void emptyContractionIsZerosAsMlx() {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray w = Mlx.astype(Mlx.fromFloats(new float[0], 5, 0), Dtype.BFLOAT16);
            Mlx.eval(w);
            MlxArray x = Mlx.astype(Mlx.fromFloats(new float[0], 3, 0), Dtype.BFLOAT16);
            MlxArray actual = Mlx.nativeLinear(x, w);
            assertTrue(Mlx.isNativeLinear(actual));
            assertEquals(
                    Arrays.toString(Mlx.matmul(x, Mlx.transposeAll(w)).toBytes()), Arrays.toString(actual.toBytes()));
        }
    }
}
