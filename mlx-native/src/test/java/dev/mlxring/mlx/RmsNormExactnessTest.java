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
 * The native {@code fast::rms_norm} primitive against MLX's own op (its CPU fallback graph),
 * live, in one process on the same inputs: the output bytes must be identical. Cases cover the
 * dtypes of x and weight as models pair them (float32 norms under float32 activations, bfloat16
 * and float16 throughout, mixed), the shapes of decode, prefill, batched rows and per-head
 * q/k norms (head dims 64/128, hidden sizes 576/2048), the layouts the graph can hand over
 * (transposed, strided, broadcast), and ordinary, subnormal and NaN/Inf data.
 */
class RmsNormExactnessTest {

    enum Layout {
        CONTIGUOUS,
        TRANSPOSED,
        STRIDED,
        BROADCAST
    }

    record Case(Dtype x, Dtype weight, int[] shape, float eps, Data data, Layout layout) {
        @Override
        public String toString() {
            return "x " + x.mlxName + " w " + weight.mlxName + " " + Arrays.toString(shape) + " eps " + eps + " " + data
                    + " " + layout;
        }
    }

    static Stream<Case> cases() {
        List<Case> c = new ArrayList<>();
        Dtype[] dtypes = {Dtype.FLOAT32, Dtype.BFLOAT16, Dtype.FLOAT16};
        int[][] shapes = {
            {1, 1, 576}, {1, 37, 576}, {4, 1, 576}, {1, 3, 2048}, {2, 5, 9, 64}, {1, 7, 4, 128}, {3, 1}, {1, 1, 1}
        };
        for (Dtype d : dtypes) {
            for (int[] shape : shapes) {
                c.add(new Case(d, d, shape, 1e-5f, Data.NORMAL, Layout.CONTIGUOUS));
            }
            for (Data data : new Data[] {Data.SUBNORMAL, Data.SPECIAL}) {
                c.add(new Case(d, d, new int[] {1, 9, 576}, 1e-6f, data, Layout.CONTIGUOUS));
                c.add(new Case(d, d, new int[] {2, 3, 4, 64}, 1e-6f, data, Layout.CONTIGUOUS));
            }
            for (Layout layout : new Layout[] {Layout.TRANSPOSED, Layout.STRIDED, Layout.BROADCAST}) {
                c.add(new Case(d, d, new int[] {2, 6, 64}, 1e-5f, Data.NORMAL, layout));
            }
            for (Dtype w : dtypes) {
                if (w != d) {
                    c.add(new Case(d, w, new int[] {1, 4, 576}, 1e-5f, Data.NORMAL, Layout.CONTIGUOUS));
                }
            }
        }
        return c.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void sameBytesAsMlx(Case c) {
        SplittableRandom rnd = SameBytes.seeded(c);
        try (ArrayScope s = ArrayScope.open()) {
            float mag = SameBytes.magnitude(c.data, c.x);
            MlxArray x = input(c, rnd, mag);
            int d = c.shape[c.shape.length - 1];
            MlxArray w = SameBytes.array(rnd, c.weight, 1f, Data.NORMAL, d);
            SameBytes.assertSame(c.toString(), Mlx.rmsNorm(x, w, c.eps), Mlx.rmsNorm(CpuKernels.NATIVE, x, w, c.eps));
        }
    }

    private static MlxArray input(Case c, SplittableRandom rnd, float mag) {
        int[] shape = c.shape;
        int n = shape.length;
        return switch (c.layout) {
            case CONTIGUOUS -> SameBytes.array(rnd, c.x, mag, c.data, shape);
            case TRANSPOSED -> {
                int[] swapped = shape.clone();
                swapped[n - 1] = shape[n - 2];
                swapped[n - 2] = shape[n - 1];
                int[] axes = new int[n];
                Arrays.setAll(axes, i -> i);
                axes[n - 1] = n - 2;
                axes[n - 2] = n - 1;
                yield Mlx.transpose(SameBytes.array(rnd, c.x, mag, c.data, swapped), axes);
            }
            case STRIDED -> {
                int[] wide = shape.clone();
                wide[n - 1] *= 2;
                int[] start = new int[n];
                start[n - 1] = 1;
                int[] strides = new int[n];
                Arrays.fill(strides, 1);
                strides[n - 1] = 2;
                yield Mlx.slice(SameBytes.array(rnd, c.x, mag, c.data, wide), start, wide, strides);
            }
            case BROADCAST -> {
                int[] one = shape.clone();
                one[0] = 1;
                yield Mlx.broadcastTo(SameBytes.array(rnd, c.x, mag, c.data, one), shape);
            }
        };
    }

    /** Rows whose squares overflow float32 (mean +Inf, scale 0, so x * 0 or Inf * 0) and an all-zero row. */
    @Test
    void overflowAndZeroRows() {
        try (ArrayScope s = ArrayScope.open()) {
            float[] v = new float[3 * 64];
            for (int i = 0; i < 64; i++) {
                v[i] = (i % 2 == 0 ? 1 : -1) * 3e30f;
                v[64 + i] = i == 5 ? Float.MAX_VALUE : 1f;
            }
            MlxArray w = Mlx.fromFloats(SameBytes.values(new SplittableRandom(1), 64, 1f, Data.NORMAL), 64);
            for (Dtype d : new Dtype[] {Dtype.FLOAT32, Dtype.BFLOAT16}) {
                MlxArray x = Mlx.astype(Mlx.fromFloats(v, 3, 64), d);
                MlxArray wd = Mlx.astype(w, d);
                SameBytes.assertSame(
                        "overflow " + d.mlxName,
                        Mlx.rmsNorm(x, wd, 1e-5f),
                        Mlx.rmsNorm(CpuKernels.NATIVE, x, wd, 1e-5f));
            }
        }
    }

    @Test
    void uncoveredCasesTakeMlxsOp() {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray x = Mlx.fromFloats(new float[8], 2, 4);
            assertFalse(Mlx.isNativeFastOp(Mlx.rmsNorm(CpuKernels.NATIVE, x, null, 1e-5f)), "no weight");
            MlxArray w = Mlx.fromFloats(new float[4], 4);
            assertFalse(Mlx.isNativeFastOp(Mlx.rmsNorm(CpuKernels.MLX, x, w, 1e-5f)), "--cpu-kernels mlx");
            assertFalse(
                    Mlx.isNativeFastOp(Mlx.rmsNorm(CpuKernels.NATIVE, Mlx.astype(x, Dtype.INT32), w, 1e-5f)),
                    "int32 x");
        }
    }
}
