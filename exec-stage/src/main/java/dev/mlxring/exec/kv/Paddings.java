package dev.mlxring.exec.kv;

import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
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

    /** mlx-lm's batch {@code offset} array: each row's rope position, {@code idx - leftPadding[i]} (int32). */
    static MlxArray offsets(int idx, int[] leftPadding) {
        int[] o = new int[leftPadding.length];
        for (int i = 0; i < o.length; i++) {
            o[i] = idx - leftPadding[i];
        }
        return Mlx.fromInts(o, o.length);
    }

    /**
     * {@code create_causal_mask(N, offset=idx, left_padding)}: boolean {@code [B, 1, N, idx + N]},
     * position {@code k} visible to query {@code q} when {@code idx + q >= k} and
     * {@code k >= leftPadding[row]}.
     */
    static MlxArray causalMask(int idx, int[] leftPadding, int n) {
        MlxArray rinds = Mlx.arange(0, idx + n, 1, Dtype.INT32);
        MlxArray linds = idx != 0 ? Mlx.arange(idx, idx + n, 1, Dtype.INT32) : rinds;
        MlxArray causal = Mlx.greaterEqual(Mlx.expandDims(linds, 1), Mlx.expandDims(rinds, 0));
        MlxArray pad = Mlx.fromInts(leftPadding, leftPadding.length, 1, 1, 1);
        return Mlx.logicalAnd(causal, Mlx.greaterEqual(Mlx.expandDims(rinds, 0), pad));
    }
}
