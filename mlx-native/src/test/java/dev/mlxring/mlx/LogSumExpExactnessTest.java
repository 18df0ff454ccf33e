package dev.mlxring.mlx;

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
 * The native logsumexp primitive against MLX's own {@code LogSumExp}, live, in one process on the
 * same inputs: the output bytes must be identical. Cases cover the sampling step's shapes (one
 * or several rows of a 49,152- or 151,936-entry vocabulary, over the last axis or every axis),
 * short rows whose length is not a multiple of eight, the layouts the graph hands over (the last
 * position of a prefill's logits, transposed, broadcast), logits-sized and subnormal values,
 * NaN/Inf-laden rows, and rows whose maximum is infinite or a signed zero.
 */
class LogSumExpExactnessTest {

    enum Layout {
        CONTIGUOUS,
        LAST_POSITION,
        TRANSPOSED,
        BROADCAST
    }

    record Case(Dtype dtype, int[] shape, float magnitude, Data data, Layout layout, boolean allAxes) {
        @Override
        public String toString() {
            return dtype.mlxName + " " + Arrays.toString(shape) + " mag " + magnitude + " " + data + " " + layout
                    + (allAxes ? " all axes" : " axis -1");
        }
    }

    static Stream<Case> cases() {
        List<Case> c = new ArrayList<>();
        for (Dtype d : new Dtype[] {Dtype.FLOAT32, Dtype.BFLOAT16, Dtype.FLOAT16}) {
            for (int[] shape : new int[][] {{1, 49152}, {4, 49152}, {1, 151936}, {3, 7}, {1, 1}, {2, 3, 100}, {5, 8}}) {
                c.add(new Case(d, shape, 8f, Data.NORMAL, Layout.CONTIGUOUS, false));
            }
            c.add(new Case(d, new int[] {1, 49152}, 8f, Data.NORMAL, Layout.CONTIGUOUS, true));
            c.add(new Case(d, new int[] {1, 49152}, 1f, Data.NORMAL, Layout.LAST_POSITION, true));
            c.add(new Case(d, new int[] {6, 40}, 3f, Data.NORMAL, Layout.TRANSPOSED, false));
            c.add(new Case(d, new int[] {3, 1000}, 3f, Data.NORMAL, Layout.BROADCAST, false));
            c.add(new Case(
                    d,
                    new int[] {2, 4099},
                    SameBytes.magnitude(Data.SUBNORMAL, d),
                    Data.SUBNORMAL,
                    Layout.CONTIGUOUS,
                    false));
            c.add(new Case(d, new int[] {16, 333}, 4f, Data.SPECIAL, Layout.CONTIGUOUS, false));
            c.add(new Case(d, new int[] {2, 49152}, 60f, Data.NORMAL, Layout.CONTIGUOUS, false));
        }
        return c.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void sameBytesAsMlx(Case c) {
        SplittableRandom rnd = SameBytes.seeded(c);
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray x = input(c, rnd);
            if (c.allAxes) {
                SameBytes.assertSame(c.toString(), Mlx.logsumexp(x, true), Mlx.logsumexp(CpuKernels.NATIVE, x, true));
            } else {
                SameBytes.assertSame(
                        c.toString(), Mlx.logsumexp(x, -1, true), Mlx.logsumexp(CpuKernels.NATIVE, x, -1, true));
            }
        }
    }

    private static MlxArray input(Case c, SplittableRandom rnd) {
        int[] shape = c.shape;
        int n = shape.length;
        return switch (c.layout) {
            case CONTIGUOUS -> SameBytes.array(rnd, c.dtype, c.magnitude, c.data, shape);
            case LAST_POSITION -> {
                // logits[:, -1, :] of a 5-position prefill, squeezed: [1, V] out of [1, 5, V]
                int v = shape[n - 1];
                MlxArray all = SameBytes.array(rnd, c.dtype, c.magnitude, c.data, 1, 5, v);
                yield Mlx.squeeze(Mlx.slice(all, new int[] {0, 4, 0}, new int[] {1, 5, v}, new int[] {1, 1, 1}), 1);
            }
            case TRANSPOSED -> {
                int[] swapped = shape.clone();
                swapped[n - 1] = shape[n - 2];
                swapped[n - 2] = shape[n - 1];
                yield Mlx.transpose(SameBytes.array(rnd, c.dtype, c.magnitude, c.data, swapped), new int[] {1, 0});
            }
            case BROADCAST -> {
                int[] one = shape.clone();
                one[0] = 1;
                yield Mlx.broadcastTo(SameBytes.array(rnd, c.dtype, c.magnitude, c.data, one), shape);
            }
        };
    }

    /**
     * Rows whose maximum is +Inf, -Inf (every entry), a NaN (scalar fold), -0 or +0 first and the
     * other later (the vectorized maximum may keep the other zero; no output bit may change), and
     * a single entry at a tail position.
     */
    @Test
    void infiniteNanAndSignedZeroMaxima() {
        float ninf = Float.NEGATIVE_INFINITY;
        int m = 19;
        float[][] rows = new float[8][m];
        for (int i = 0; i < m; i++) {
            rows[0][i] = i == 11 ? Float.POSITIVE_INFINITY : -i;
            rows[1][i] = ninf;
            rows[2][i] = i == 17 ? Float.NaN : i * 0.5f;
            rows[3][i] = i == 0 ? -0f : i == 9 ? 0f : -1f - i;
            rows[4][i] = i == 2 ? 0f : i == 12 ? -0f : -3f;
            rows[5][i] = i == 18 ? 4f : ninf;
            rows[6][i] = -0f;
            rows[7][i] = i == 3 ? Float.intBitsToFloat(0xffc00000) : i == 15 ? Float.NaN : 1f;
        }
        float[] flat = new float[8 * m];
        for (int r = 0; r < 8; r++) {
            System.arraycopy(rows[r], 0, flat, r * m, m);
        }
        try (ArrayScope s = ArrayScope.open()) {
            for (Dtype d : new Dtype[] {Dtype.FLOAT32, Dtype.BFLOAT16, Dtype.FLOAT16}) {
                MlxArray x = Mlx.astype(Mlx.fromFloats(flat, 8, m), d);
                SameBytes.assertSame(
                        "special rows " + d.mlxName,
                        Mlx.logsumexp(x, -1, true),
                        Mlx.logsumexp(CpuKernels.NATIVE, x, -1, true));
            }
        }
    }

    @Test
    void uncoveredCasesTakeMlxsOp() {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray x = Mlx.fromFloats(new float[8], 2, 4);
            assertFalse(Mlx.isNativeFastOp(Mlx.logsumexp(CpuKernels.MLX, x, -1, true)), "--cpu-kernels mlx");
            assertFalse(Mlx.isNativeFastOp(Mlx.logsumexp(CpuKernels.NATIVE, x, -1, false)), "keepdims=False");
            assertFalse(Mlx.isNativeFastOp(Mlx.logsumexp(CpuKernels.NATIVE, x, 0, true)), "not the last axis");
            assertFalse(
                    Mlx.isNativeFastOp(Mlx.logsumexp(CpuKernels.NATIVE, x, true)),
                    "every axis of [2, 4]: MLX's graph of ops, not its LogSumExp");
        }
    }
}
