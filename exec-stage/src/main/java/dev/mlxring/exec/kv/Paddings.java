package dev.mlxring.exec.kv;

import java.util.Arrays;

/** The per-row padding arithmetic of the batch caches (mlx-lm does it on {@code mx.array}s). */
final class Paddings {
    private Paddings() {}

    /** Every row's padding plus {@code by}. */
    static int[] shifted(int[] padding, int by) {
        int[] out = padding.clone();
        for (int i = 0; i < out.length; i++) {
            out[i] += by;
        }
        return out;
    }

    /** The rows of {@code a}, then those of {@code b} ({@code mx.concatenate} of two batches). */
    static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    /** {@code a[keep]}. */
    static int[] gather(int[] a, int[] keep) {
        int[] out = new int[keep.length];
        for (int i = 0; i < keep.length; i++) {
            out[i] = a[keep[i]];
        }
        return out;
    }
}
