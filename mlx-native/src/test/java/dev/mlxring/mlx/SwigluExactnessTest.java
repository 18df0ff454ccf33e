package dev.mlxring.mlx;

import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.mlxring.mlx.SameBytes.Data;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The native swiglu primitive against the kernel MLX compiles for mlx-lm's {@code swiglu} (the
 * shim's {@code mlxr_swiglu}), live, in one process on the same inputs: the output bytes must be
 * identical. Cases cover float32, float16 and bfloat16 (whose compiled kernel rounds after each
 * step), the MLP shapes of decode, prefill and batched rows (intermediate sizes 1536 and 2304),
 * lengths that are not a multiple of eight, gates large enough that {@code exp(|g|)} overflows,
 * subnormal and NaN/Inf-laden data, transposed or broadcast operands, and for the half types
 * every one of the 65,536 gate encodings.
 */
class SwigluExactnessTest {

    enum Layout {
        CONTIGUOUS,
        TRANSPOSED,
        BROADCAST
    }

    record Case(Dtype dtype, int[] shape, float magnitude, Data data, Layout layout) {
        @Override
        public String toString() {
            return dtype + " " + Arrays.toString(shape) + " mag " + magnitude + " " + data + " " + layout;
        }
    }

    static Stream<Case> cases() {
        List<Case> c = new ArrayList<>();
        for (Dtype d : new Dtype[] {Dtype.FLOAT32, Dtype.FLOAT16, Dtype.BFLOAT16}) {
            for (int[] shape : new int[][] {{1, 1, 1536}, {1, 37, 1536}, {4, 1, 1536}, {1, 3, 2304}, {1, 5, 7}, {3}}) {
                c.add(new Case(d, shape, 2f, Data.NORMAL, Layout.CONTIGUOUS));
            }
            c.add(new Case(d, new int[] {2, 1536}, 60f, Data.NORMAL, Layout.CONTIGUOUS));
            c.add(new Case(
                    d, new int[] {2, 1536}, SameBytes.magnitude(Data.SUBNORMAL, d), Data.SUBNORMAL, Layout.CONTIGUOUS));
            c.add(new Case(d, new int[] {3, 1000}, 4f, Data.SPECIAL, Layout.CONTIGUOUS));
            c.add(new Case(d, new int[] {24, 40}, 2f, Data.NORMAL, Layout.TRANSPOSED));
            c.add(new Case(d, new int[] {3, 1536}, 2f, Data.NORMAL, Layout.BROADCAST));
        }
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
            case CONTIGUOUS -> SameBytes.array(rnd, c.dtype, c.magnitude, c.data, shape);
            case TRANSPOSED ->
                Mlx.transpose(SameBytes.array(rnd, c.dtype, c.magnitude, c.data, shape[1], shape[0]), new int[] {1, 0});
            case BROADCAST -> Mlx.broadcastTo(SameBytes.array(rnd, c.dtype, c.magnitude, c.data, 1, shape[1]), shape);
        };
    }

    /**
     * Every encoding of a half type as the gate (so every value of {@code silu(g)} the compiled
     * kernel rounds), against ones (the silu itself) and against random, tiny and special x.
     */
    @ParameterizedTest(name = "{0} x {1}")
    @MethodSource("halfTypes")
    void everyHalfGate(Dtype dtype, Data xData) {
        int n = 1 << 16;
        try (ArrayScope s = ArrayScope.open();
                Arena arena = Arena.ofConfined()) {
            MemorySegment bits = arena.allocate(ValueLayout.JAVA_SHORT, n);
            for (int i = 0; i < n; i++) {
                bits.setAtIndex(ValueLayout.JAVA_SHORT, i, (short) i);
            }
            MlxArray gate = Mlx.fromBytes(bits, new int[] {n}, dtype);
            MlxArray x = xData == null
                    ? Mlx.astype(Mlx.fromFloats(ones(n), n), dtype)
                    : SameBytes.array(
                            new SplittableRandom(n + xData.ordinal()),
                            dtype,
                            SameBytes.magnitude(xData, dtype),
                            xData,
                            n);
            SameBytes.assertSame(dtype + " every gate", Mlx.swiglu(gate, x), Mlx.swiglu(CpuKernels.NATIVE, gate, x));
        }
    }

    static Stream<Arguments> halfTypes() {
        List<Arguments> a = new ArrayList<>();
        for (Dtype d : new Dtype[] {Dtype.FLOAT16, Dtype.BFLOAT16}) {
            a.add(Arguments.of(d, null));
            for (Data x : Data.values()) {
                a.add(Arguments.of(d, x));
            }
        }
        return a.stream();
    }

    private static float[] ones(int n) {
        float[] v = new float[n];
        Arrays.fill(v, 1f);
        return v;
    }

    @Test
    void uncoveredCasesTakeTheCompiledKernel() {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray x = Mlx.fromFloats(new float[8], 2, 4);
            assertFalse(Mlx.isNativeFastOp(Mlx.swiglu(CpuKernels.MLX, x, x)), "--cpu-kernels mlx");
            MlxArray b = Mlx.astype(x, Dtype.BFLOAT16);
            assertFalse(Mlx.isNativeFastOp(Mlx.swiglu(CpuKernels.NATIVE, x, b)), "float32 with bfloat16");
            MlxArray row = Mlx.fromFloats(new float[4], 4);
            assertFalse(Mlx.isNativeFastOp(Mlx.swiglu(CpuKernels.NATIVE, x, row)), "a broadcast operand");
        }
    }
}
