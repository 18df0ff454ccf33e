package dev.mlxring.exec.model;

import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.Arrays;

/** Top-k expert selection as mlx-lm's MoE routers write it. Stateless. */
final class TopK {
    private TopK() {}

    /** {@code mx.argpartition(a, kth=-k, axis=-1)[..., -k:]}: the indices of the k largest, unordered. */
    static MlxArray indices(MlxArray a, int k) {
        MlxArray part = Mlx.argpartition(a, -k, -1);
        int n = part.ndim();
        int[] start = new int[n];
        int[] stop = part.shape();
        int[] strides = new int[n];
        Arrays.fill(strides, 1);
        start[n - 1] = stop[n - 1] - k;
        return Mlx.slice(part, start, stop, strides);
    }
}
