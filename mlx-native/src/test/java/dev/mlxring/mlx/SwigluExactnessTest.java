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
 * The native float32 swiglu primitive against the kernel MLX compiles for mlx-lm's
 * {@code swiglu} (the shim's {@code mlxr_swiglu}), live, in one process on the same inputs: the
 * output bytes must be identical. Cases cover the MLP shapes of decode, prefill and batched rows
 * (intermediate sizes 1536 and 2304), lengths that are not a multiple of eight, gates large
 * enough that {@code exp(|g|)} overflows, subnormal and NaN/Inf-laden data, and transposed or
 * broadcast operands.
 */
class SwigluExactnessTest {

    enum Layout { CONTIGUOUS, TRANSPOSED, BROADCAST }

    record Case(int[] shape, float magnitude, Data data, Layout layout) {
        @Override
        public String toString() {
            return Arrays.toString(shape) + " mag " + magnitude + " " + data + " " + layout;
        }
    }

    static Stream<Case> cases() {
        List<Case> c = new ArrayList<>();
        for (int[] shape : new int[][] {{1, 1, 1536}, {1, 37, 1536}, {4, 1, 1536}, {1, 3, 2304}, {1, 5, 7}, {3}}) {
            c.add(new Case(shape, 2f, Data.NORMAL, Layout.CONTIGUOUS));
        }
        c.add(new Case(new int[] {2, 1536}, 60f, Data.NORMAL, Layout.CONTIGUOUS));
        c.add(new Case(new int[] {2, 1536}, SameBytes.magnitude(Data.SUBNORMAL, Dtype.FLOAT32), Data.SUBNORMAL,
                Layout.CONTIGUOUS));
        c.add(new Case(new int[] {3, 1000}, 4f, Data.SPECIAL, Layout.CONTIGUOUS));
        c.add(new Case(new int[] {24, 40}, 2f, Data.NORMAL, Layout.TRANSPOSED));
        c.add(new Case(new int[] {3, 1536}, 2f, Data.NORMAL, Layout.BROADCAST));
        return c.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void sameBytesAsMlx(Case c) {
        SplittableRandom rnd = SameBytes.seeded(c);
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray gate = input(c, rnd);
            MlxArray x = input(c, rnd);
            SameBytes.assertSame(c.toString(), Mlx.swiglu(gate, x), Mlx.swiglu(CpuKernels.NATIVE, gate, x));
        }
    }

    private static MlxArray input(Case c, SplittableRandom rnd) {
        int[] shape = c.shape;
        return switch (c.layout) {
            case CONTIGUOUS -> SameBytes.array(rnd, Dtype.FLOAT32, c.magnitude, c.data, shape);
            case TRANSPOSED -> Mlx.transpose(
                    SameBytes.array(rnd, Dtype.FLOAT32, c.magnitude, c.data, shape[1], shape[0]), new int[] {1, 0});
            case BROADCAST -> Mlx.broadcastTo(
                    SameBytes.array(rnd, Dtype.FLOAT32, c.magnitude, c.data, 1, shape[1]), shape);
        };
    }

    @Test
    void uncoveredCasesTakeTheCompiledKernel() {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray x = Mlx.fromFloats(new float[8], 2, 4);
            assertFalse(Mlx.isNativeFastOp(Mlx.swiglu(CpuKernels.MLX, x, x)), "--cpu-kernels mlx");
            MlxArray b = Mlx.astype(x, Dtype.BFLOAT16);
            assertFalse(Mlx.isNativeFastOp(Mlx.swiglu(CpuKernels.NATIVE, b, b)), "bfloat16");
            MlxArray row = Mlx.fromFloats(new float[4], 4);
            assertFalse(Mlx.isNativeFastOp(Mlx.swiglu(CpuKernels.NATIVE, x, row)), "a broadcast operand");
        }
    }
}
