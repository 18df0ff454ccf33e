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
 * The native {@code fast::rope} primitive against MLX's own op (its CPU fallback graph), live,
 * in one process on the same inputs: the output bytes must be identical. Cases cover the three
 * activation dtypes; queries and keys as the models hand them over ({@code [B, L, H, D]}
 * transposed to {@code [B, H, L, D]}), contiguous, rank 3 and rank 5; head dims 64 and 128 with
 * full and partial rotary dims; traditional or not; a base (10000, 1e6, linear scaling) or
 * explicit frequencies (llama3 / yarn / longrope); decode and prefill lengths; scalar offsets
 * from 0 to past the 2^23 where MLX's sin/cos switch to libm, and per-row offset arrays
 * (negative for left-padded rows of a batch); ordinary, subnormal and NaN/Inf data.
 */
class RopeExactnessTest {

    enum Layout {
        HEADS_TRANSPOSED,
        CONTIGUOUS,
        RANK3,
        RANK5
    }

    record Case(
            Dtype dtype,
            int b,
            int h,
            int l,
            int d,
            int dims,
            boolean traditional,
            float base,
            float scale,
            boolean freqs,
            int[] offsets,
            Data data,
            Layout layout) {
        @Override
        public String toString() {
            return dtype.mlxName + " B" + b + " H" + h + " L" + l + " D" + d + " dims" + dims
                    + (traditional ? " traditional" : "") + (freqs ? " freqs" : " base " + base) + " scale " + scale
                    + " offsets " + Arrays.toString(offsets) + " " + data + " " + layout;
        }
    }

    static Stream<Case> cases() {
        List<Case> c = new ArrayList<>();
        Dtype[] dtypes = {Dtype.FLOAT32, Dtype.BFLOAT16, Dtype.FLOAT16};
        for (Dtype dt : dtypes) {
            for (boolean trad : new boolean[] {false, true}) {
                for (int d : new int[] {64, 128}) {
                    // decode and prefill, the models' layout
                    c.add(new Case(
                            dt,
                            1,
                            9,
                            1,
                            d,
                            d,
                            trad,
                            10000f,
                            1f,
                            false,
                            new int[] {263},
                            Data.NORMAL,
                            Layout.HEADS_TRANSPOSED));
                    c.add(new Case(
                            dt,
                            1,
                            3,
                            37,
                            d,
                            d,
                            trad,
                            1e6f,
                            1f,
                            false,
                            new int[] {0},
                            Data.NORMAL,
                            Layout.HEADS_TRANSPOSED));
                }
                // explicit frequencies, linear scaling, partial rotary dims
                c.add(new Case(
                        dt,
                        1,
                        4,
                        5,
                        64,
                        64,
                        trad,
                        0f,
                        1f,
                        true,
                        new int[] {4000},
                        Data.NORMAL,
                        Layout.HEADS_TRANSPOSED));
                c.add(new Case(
                        dt,
                        1,
                        2,
                        6,
                        64,
                        64,
                        trad,
                        10000f,
                        0.25f,
                        false,
                        new int[] {77},
                        Data.NORMAL,
                        Layout.HEADS_TRANSPOSED));
                c.add(new Case(
                        dt,
                        1,
                        2,
                        3,
                        96,
                        32,
                        trad,
                        10000f,
                        1f,
                        false,
                        new int[] {5},
                        Data.NORMAL,
                        Layout.HEADS_TRANSPOSED));
                c.add(new Case(
                        dt, 1, 2, 3, 80, 24, trad, 0f, 1f, true, new int[] {5}, Data.NORMAL, Layout.HEADS_TRANSPOSED));
                // batched rows: one offset per row, negative for left padding; decode and prefill
                c.add(new Case(
                        dt,
                        4,
                        3,
                        1,
                        64,
                        64,
                        trad,
                        10000f,
                        1f,
                        false,
                        new int[] {12, -3, 0, 250},
                        Data.NORMAL,
                        Layout.HEADS_TRANSPOSED));
                c.add(new Case(
                        dt,
                        3,
                        2,
                        9,
                        64,
                        64,
                        trad,
                        0f,
                        1f,
                        true,
                        new int[] {-5, 0, 31},
                        Data.NORMAL,
                        Layout.HEADS_TRANSPOSED));
                c.add(new Case(
                        dt,
                        3,
                        2,
                        4,
                        64,
                        64,
                        trad,
                        10000f,
                        1f,
                        false,
                        new int[] {7},
                        Data.NORMAL,
                        Layout.HEADS_TRANSPOSED));
                // other ranks and layouts
                c.add(new Case(dt, 2, 1, 5, 64, 64, trad, 10000f, 1f, false, new int[] {3}, Data.NORMAL, Layout.RANK3));
                c.add(new Case(dt, 2, 4, 5, 64, 64, trad, 10000f, 1f, false, new int[] {3}, Data.NORMAL, Layout.RANK5));
                c.add(new Case(
                        dt,
                        2,
                        3,
                        4,
                        64,
                        64,
                        trad,
                        10000f,
                        1f,
                        false,
                        new int[] {9, 1},
                        Data.NORMAL,
                        Layout.CONTIGUOUS));
                // special data; positions past 2^23 (MLX's sin/cos take libm there)
                c.add(new Case(
                        dt,
                        1,
                        2,
                        4,
                        64,
                        64,
                        trad,
                        10000f,
                        1f,
                        false,
                        new int[] {11},
                        Data.SPECIAL,
                        Layout.HEADS_TRANSPOSED));
                c.add(new Case(
                        dt,
                        1,
                        2,
                        4,
                        64,
                        64,
                        trad,
                        10000f,
                        1f,
                        false,
                        new int[] {11},
                        Data.SUBNORMAL,
                        Layout.HEADS_TRANSPOSED));
                c.add(new Case(
                        dt,
                        1,
                        2,
                        3,
                        64,
                        64,
                        trad,
                        10000f,
                        1f,
                        false,
                        new int[] {9_000_000},
                        Data.NORMAL,
                        Layout.HEADS_TRANSPOSED));
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
            MlxArray x = input(c, rnd, mag);
            MlxArray freqs = c.freqs ? frequencies(c.dims / 2, rnd) : null;
            MlxArray expected;
            MlxArray actual;
            if (c.offsets.length == 1) {
                int o = c.offsets[0];
                expected = c.freqs
                        ? Mlx.rope(x, c.dims, c.traditional, c.scale, o, freqs)
                        : Mlx.rope(x, c.dims, c.traditional, c.base, c.scale, o);
                actual = c.freqs
                        ? Mlx.rope(CpuKernels.NATIVE, x, c.dims, c.traditional, c.scale, o, freqs)
                        : Mlx.rope(CpuKernels.NATIVE, x, c.dims, c.traditional, c.base, c.scale, o);
            } else {
                MlxArray offsets = Mlx.fromInts(c.offsets, c.offsets.length);
                expected = c.freqs
                        ? Mlx.rope(x, c.dims, c.traditional, c.scale, offsets, freqs)
                        : Mlx.rope(x, c.dims, c.traditional, c.base, c.scale, offsets);
                actual = c.freqs
                        ? Mlx.rope(CpuKernels.NATIVE, x, c.dims, c.traditional, c.scale, offsets, freqs)
                        : Mlx.rope(CpuKernels.NATIVE, x, c.dims, c.traditional, c.base, c.scale, offsets);
            }
            SameBytes.assertSame(c.toString(), expected, actual);
        }
    }

    static Stream<Case> headsCases() {
        return cases().filter(c -> c.layout == Layout.HEADS_TRANSPOSED);
    }

    /**
     * The rope of the heads' view of a projection's output {@code [B, L, H * D]}, read in place by
     * one native primitive, against MLX's reshape, transpose and rope.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("headsCases")
    void headsViewSameBytesAsMlx(Case c) {
        SplittableRandom rnd = SameBytes.seeded(c);
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray flat =
                    SameBytes.array(rnd, c.dtype, SameBytes.magnitude(c.data, c.dtype), c.data, c.b, c.l, c.h * c.d);
            assertHeadsSameBytes(c, rnd, flat, " (heads view)");
        }
    }

    /** MLX's reshape, transpose and rope of {@code flat} [B, L, H * D] against the native heads rope. */
    private static void assertHeadsSameBytes(Case c, SplittableRandom rnd, MlxArray flat, String label) {
        MlxArray view = Mlx.transpose(Mlx.reshape(flat, c.b, c.l, c.h, c.d), 0, 2, 1, 3);
        MlxArray freqs = c.freqs ? frequencies(c.dims / 2, rnd) : null;
        MlxArray offsets = c.offsets.length > 1 ? Mlx.fromInts(c.offsets, c.offsets.length) : null;
        int o = c.offsets[0];
        MlxArray expected;
        if (offsets == null) {
            expected = c.freqs
                    ? Mlx.rope(view, c.dims, c.traditional, c.scale, o, freqs)
                    : Mlx.rope(view, c.dims, c.traditional, c.base, c.scale, o);
        } else {
            expected = c.freqs
                    ? Mlx.rope(view, c.dims, c.traditional, c.scale, offsets, freqs)
                    : Mlx.rope(view, c.dims, c.traditional, c.base, c.scale, offsets);
        }
        MlxArray actual = Mlx.nativeRopeHeads(
                flat, c.h, c.dims, c.traditional, c.freqs ? null : c.base, c.scale, o, offsets, freqs);
        SameBytes.assertSame(c + label, expected, actual);
    }

    /**
     * As {@link #headsViewSameBytesAsMlx} for a projection that is a slice of a wider one not yet
     * evaluated (a fused q/k/v projection split at the head boundaries): its layout is known only
     * at evaluation, when the primitive reads it through its strides. (The entry point once judged
     * it by the flags of the unevaluated slice, which claim row-contiguity, and read every row
     * past a prefill's first as if the rows were dense: 72 of these 84 cases failed.)
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("headsCases")
    void headsViewOfALazySliceSameBytesAsMlx(Case c) {
        SplittableRandom rnd = SameBytes.seeded(c);
        try (ArrayScope s = ArrayScope.open()) {
            float mag = SameBytes.magnitude(c.data, c.dtype);
            int width = c.h * c.d;
            MlxArray wide = Mlx.concatenate(
                    2,
                    SameBytes.array(rnd, c.dtype, mag, c.data, c.b, c.l, 8),
                    SameBytes.array(rnd, c.dtype, mag, c.data, c.b, c.l, width + 16));
            MlxArray flat = Mlx.slice(wide, new int[] {0, 0, 8}, new int[] {c.b, c.l, 8 + width}, new int[] {1, 1, 1});
            assertHeadsSameBytes(c, rnd, flat, " (heads view of a lazy slice)");
        }
    }

    /** Positive frequencies spread over decades as llama3 / yarn produce them (float32). */
    private static MlxArray frequencies(int n, SplittableRandom rnd) {
        float[] f = new float[n];
        for (int i = 0; i < n; i++) {
            f[i] = (float) Math.pow(10000.0, (2.0 * i) / (2 * n)) * (float) (0.5 + rnd.nextDouble());
        }
        return Mlx.fromFloats(f, n);
    }

    private static MlxArray input(Case c, SplittableRandom rnd, float mag) {
        return switch (c.layout) {
            case HEADS_TRANSPOSED ->
                Mlx.transpose(
                        Mlx.reshape(
                                SameBytes.array(rnd, c.dtype, mag, c.data, c.b, c.l, c.h * c.d), c.b, c.l, c.h, c.d),
                        0,
                        2,
                        1,
                        3);
            case CONTIGUOUS -> SameBytes.array(rnd, c.dtype, mag, c.data, c.b, c.h, c.l, c.d);
            case RANK3 -> SameBytes.array(rnd, c.dtype, mag, c.data, c.b, c.l, c.d);
            case RANK5 -> SameBytes.array(rnd, c.dtype, mag, c.data, c.b, 2, c.h / 2, c.l, c.d);
        };
    }

    @Test
    void uncoveredCasesTakeMlxsOp() {
        try (ArrayScope s = ArrayScope.open()) {
            MlxArray x = Mlx.fromFloats(new float[2 * 3 * 64], 1, 2, 3, 64);
            assertFalse(Mlx.isNativeFastOp(Mlx.rope(CpuKernels.MLX, x, 64, false, 10000f, 1f, 0)), "--cpu-kernels mlx");
            MlxArray uint8Offsets = Mlx.astype(Mlx.fromInts(new int[] {1}, 1), Dtype.UINT8);
            assertFalse(
                    Mlx.isNativeFastOp(Mlx.rope(CpuKernels.NATIVE, x, 64, false, 10000f, 1f, uint8Offsets)),
                    "uint8 offsets (MLX casts them first)");
        }
    }
}
