package dev.mlxring.mlx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * What the exactness tests of the native {@code fast::} primitives share: seeded input data of a
 * few kinds and a byte-for-byte comparison of MLX's result with ours that names the first
 * differing element. Where MLX's element is a NaN, only its sign bit may differ (the sign of a
 * NaN where two NaNs meet follows MLX's compiled operand order, which is not reproduced; the
 * payload, and so MLX's float16/bfloat16 NaN encodings, must match). Stateless.
 */
final class SameBytes {
    private SameBytes() {}

    /** How the values of an input are drawn. */
    enum Data {
        /** Gaussian around zero at the given magnitude. */
        NORMAL,
        /** Gaussian at a magnitude where float16 / bfloat16 / float32 values are subnormal. */
        SUBNORMAL,
        /** Gaussian with about one in sixteen values NaN (either sign), +Inf or -Inf. */
        SPECIAL
    }

    /**
     * The magnitude of a case's activations: 1, or for {@link Data#SUBNORMAL} the neighbourhood of
     * the smallest normal value of {@code d} (float32 and bfloat16 share their exponent range).
     */
    static float magnitude(Data data, Dtype d) {
        return data != Data.SUBNORMAL ? 1f : d == Dtype.FLOAT16 ? 3e-5f : 1e-38f;
    }

    /** A generator seeded by the case's description, so a failing case replays alone. */
    static SplittableRandom seeded(Object testCase) {
        return new SplittableRandom(testCase.toString().hashCode());
    }

    static float[] values(SplittableRandom rnd, int n, float mag, Data data) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) (rnd.nextGaussian() * mag);
            if (data == Data.SPECIAL) {
                switch (rnd.nextInt(64)) {
                    case 0 -> v[i] = Float.NaN;
                    case 1 -> v[i] = Float.intBitsToFloat(0xffc00000); // NaN with the sign bit
                    case 2 -> v[i] = Float.POSITIVE_INFINITY;
                    case 3 -> v[i] = Float.NEGATIVE_INFINITY;
                    default -> {}
                }
            }
        }
        return v;
    }

    /** A {@code dtype} array of {@code shape} holding {@link #values}. */
    static MlxArray array(SplittableRandom rnd, Dtype dtype, float mag, Data data, int... shape) {
        int n = Arrays.stream(shape).reduce(1, (a, b) -> a * b);
        return Mlx.astype(Mlx.fromFloats(values(rnd, n, mag, data), shape), dtype);
    }

    /** Asserts {@code actual} is a native primitive's output with {@code expected}'s dtype, shape and bytes. */
    static void assertSame(String label, MlxArray expected, MlxArray actual) {
        assertTrue(Mlx.isNativeFastOp(actual), "the native primitive did not take " + label);
        assertEquals(expected.dtype(), actual.dtype(), "dtype of " + label);
        assertEquals(Arrays.toString(expected.shape()), Arrays.toString(actual.shape()), "shape of " + label);
        byte[] e = expected.toBytes();
        byte[] a = actual.toBytes();
        assertEquals(e.length, a.length, "byte count of " + label);
        int size = expected.dtype().sizeInBytes;
        for (int i = 0; i < e.length; i += size) {
            long be = bits(e, i, size);
            long ba = bits(a, i, size);
            long sign = 1L << (8 * size - 1);
            // Where MLX's result is NaN only its sign bit may differ (see mlxr_fast.h).
            boolean same = be == ba || (isNaN(expected.dtype(), be) && (be & ~sign) == (ba & ~sign));
            if (!same) {
                fail(label + ": element " + i / size + " of " + Arrays.toString(expected.shape()) + " differs: MLX "
                        + hex(e, i, size) + ", native " + hex(a, i, size));
            }
        }
    }

    /**
     * Asserts that two outputs of {@code columns} columns and {@code size}-byte elements are
     * identical byte for byte, NaN signs included, naming the first differing element's row and column.
     */
    static void assertIdentical(String label, int columns, byte[] expected, byte[] actual, int size) {
        assertEquals(expected.length, actual.length, "byte count of " + label);
        for (int i = 0; i < expected.length; i += size) {
            if (bits(expected, i, size) != bits(actual, i, size)) {
                fail(label + ": element " + i / size + " (row " + i / size / columns + ", column " + i / size % columns
                        + ") differs: MLX " + hex(expected, i, size) + ", native " + hex(actual, i, size));
            }
        }
    }

    private static long bits(byte[] a, int at, int size) {
        long v = 0;
        for (int b = size - 1; b >= 0; b--) {
            v = (v << 8) | (a[at + b] & 0xff);
        }
        return v;
    }

    private static boolean isNaN(Dtype d, long bits) {
        return switch (d) {
            case FLOAT32 -> Float.isNaN(Float.intBitsToFloat((int) bits));
            case FLOAT16 -> (bits & 0x7c00) == 0x7c00 && (bits & 0x03ff) != 0;
            case BFLOAT16 -> (bits & 0x7f80) == 0x7f80 && (bits & 0x007f) != 0;
            default -> false;
        };
    }

    private static String hex(byte[] a, int at, int size) {
        StringBuilder sb = new StringBuilder("0x");
        for (int b = size - 1; b >= 0; b--) {
            sb.append(String.format("%02x", a[at + b]));
        }
        return sb.toString();
    }

    /**
     * Seeded values of {@code shape} ({@code uint32}: random words; otherwise Gaussian), evaluated,
     * held by the returned handle alone (a primitive may take its buffer once it is closed).
     */
    static MlxArray evaluated(SplittableRandom rnd, Dtype dtype, int[] shape) {
        int count = Arrays.stream(shape).reduce(1, (x, y) -> x * y);
        MlxArray raw;
        if (dtype == Dtype.UINT32) {
            int[] words = new int[count];
            for (int i = 0; i < count; i++) {
                words[i] = rnd.nextInt();
            }
            raw = Mlx.fromInts(words, shape);
        } else {
            raw = Mlx.fromFloats(values(rnd, count, 1f, SameBytes.Data.NORMAL), shape);
        }
        MlxArray v = Mlx.astype(raw, dtype);
        Mlx.eval(v);
        // astype to the same dtype shares raw's array: one handle must be left for the buffer to be taken.
        raw.close();
        return v;
    }
}
