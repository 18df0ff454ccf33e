package dev.mlxring.mlx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.mlxring.mlx.SameBytes.Data;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The native argmax primitive against MLX's own {@code ArgReduce}, live, in one process on the
 * same inputs: the indices' bytes must be identical. Cases: the sampling step's shapes (one to 32
 * rows of a 49,152- or 151,936-entry vocabulary; each with and without keepdims), short rows whose
 * length is not a multiple of eight, a transposed and a sliced layout, NaN/Inf-laden rows, ties,
 * and rows that start with NaN, hold only -Inf, or whose largest value is a signed zero.
 */
class ArgMaxExactnessTest {

    record Case(int[] shape, float magnitude, Data data, boolean transposed) {
        @Override
        public String toString() {
            return Arrays.toString(shape) + " mag " + magnitude + " " + data + (transposed ? " transposed" : "");
        }
    }

    static Stream<Case> cases() {
        List<Case> c = new ArrayList<>();
        for (int[] shape :
                new int[][] {{1, 49152}, {8, 49152}, {32, 49152}, {1, 151936}, {3, 7}, {5, 9}, {2, 3, 100}}) {
            c.add(new Case(shape, 8f, Data.NORMAL, false));
        }
        c.add(new Case(new int[] {6, 40}, 3f, Data.NORMAL, true));
        c.add(new Case(new int[] {16, 333}, 4f, Data.SPECIAL, false));
        c.add(new Case(new int[] {4, 4099}, 4f, Data.SPECIAL, false));
        return c.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void sameIndicesAsMlx(Case c) {
        SplittableRandom rnd = SameBytes.seeded(c);
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray x;
            if (c.transposed) {
                int n = c.shape.length;
                int[] swapped = c.shape.clone();
                swapped[n - 1] = c.shape[n - 2];
                swapped[n - 2] = c.shape[n - 1];
                x = Mlx.transpose(SameBytes.array(rnd, Dtype.FLOAT32, c.magnitude, c.data, swapped), new int[] {1, 0});
            } else {
                x = SameBytes.array(rnd, Dtype.FLOAT32, c.magnitude, c.data, c.shape);
            }
            // keepdims: the primitive's own output; without: MLX's squeeze of it, as MLX's op.
            SameBytes.assertSame(c.toString(), Mlx.argmax(x, -1, true), Mlx.argmax(CpuKernels.NATIVE, x, -1, true));
            MlxArray expected = Mlx.argmax(x, -1, false);
            MlxArray actual = Mlx.argmax(CpuKernels.NATIVE, x, -1, false);
            assertEquals(Arrays.toString(expected.shape()), Arrays.toString(actual.shape()), "shape without keepdims");
            SameBytes.assertIdentical(c + " without keepdims", 1, expected.toBytes(), actual.toBytes(), 4);
        }
    }

    /**
     * Rows whose largest value comes twice (the first wins), that start with NaN (index 0 whatever
     * follows), hold NaN later (never taken), hold only -Inf (index 0), whose largest value is -0
     * then +0 or +0 then -0 (the first of them), and whose largest value sits in the tail past the
     * last whole eight.
     */
    @Test
    void tiesNanInfinitiesAndSignedZeros() {
        float ninf = Float.NEGATIVE_INFINITY;
        int m = 19;
        float[][] rows = new float[10][m];
        for (int i = 0; i < m; i++) {
            rows[0][i] = i == 5 || i == 13 ? 7f : -i;
            rows[1][i] = i == 0 ? Float.NaN : i;
            rows[2][i] = i == 4 ? Float.NaN : i == 9 ? 3f : 1f;
            rows[3][i] = ninf;
            rows[4][i] = i == 2 ? -0f : i == 12 ? 0f : -3f;
            rows[5][i] = i == 2 ? 0f : i == 12 ? -0f : -3f;
            rows[6][i] = i == 18 ? 4f : ninf;
            rows[7][i] = i == 11 ? Float.POSITIVE_INFINITY : i == 15 ? Float.NaN : -i;
            rows[8][i] = Float.NaN;
            rows[9][i] = i == 16 ? 2f : i == 17 ? 2f : 1f;
        }
        float[] flat = new float[rows.length * m];
        for (int r = 0; r < rows.length; r++) {
            System.arraycopy(rows[r], 0, flat, r * m, m);
        }
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray x = Mlx.fromFloats(flat, rows.length, m);
            SameBytes.assertSame("special rows", Mlx.argmax(x, -1, true), Mlx.argmax(CpuKernels.NATIVE, x, -1, true));
        }
    }

    @Test
    void uncoveredCasesTakeMlxsOp() {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray x = Mlx.fromFloats(new float[8], 2, 4);
            assertFalse(Mlx.isNativeFastOp(Mlx.argmax(CpuKernels.MLX, x, -1, false)), "--cpu-kernels mlx");
            assertFalse(Mlx.isNativeFastOp(Mlx.argmax(CpuKernels.NATIVE, x, 0, false)), "not the last axis");
            assertFalse(
                    Mlx.isNativeFastOp(Mlx.argmax(CpuKernels.NATIVE, Mlx.astype(x, Dtype.BFLOAT16), -1, false)),
                    "bfloat16");
        }
    }
}
