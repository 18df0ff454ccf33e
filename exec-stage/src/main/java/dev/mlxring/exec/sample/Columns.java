package dev.mlxring.exec.sample;

import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * {@code x[:, idx]}, {@code x[:, idx] = v} and {@code x.at[:, idx].add(v)} on a 2-D {@code x} and
 * a 1-D {@code idx}, lowered to the gather / scatter / scatter_add calls mlx.core's Python
 * indexing (python/src/indexing.cpp) makes for those expressions: the {@code :} becomes
 * {@code arange(rows)} shaped {@code [rows, 1]}, the updates are broadcast to
 * {@code [rows, n]} and shaped {@code [rows, n, 1, 1]}. And {@code x[..., -c:]} slicing of a
 * token history. Results belong to the current ArrayScope.
 */
final class Columns {
    private static final int[] AXES_01 = {0, 1};
    private static final int[] SLICE_11 = {1, 1};

    private Columns() {}

    /** {@code x[:, idx]} -> {@code [rows, n]}. */
    static MlxArray get(MlxArray x, MlxArray idx) {
        int rows = x.dim(0);
        MlxArray rowIdx = Mlx.reshape(Mlx.arange(0, rows, 1, Dtype.UINT32), rows, 1);
        MlxArray g = Mlx.gather(x, new MlxArray[] {rowIdx, idx}, AXES_01, SLICE_11);
        return Mlx.squeeze(Mlx.squeeze(g, 3), 2);
    }

    /** {@code x[:, idx] = update} (update broadcastable to {@code [rows, n]}); returns the new x. */
    static MlxArray set(MlxArray x, MlxArray idx, MlxArray update) {
        int rows = x.dim(0);
        int n = idx.dim(0);
        return Mlx.scatter(x, scatterIndices(rows, idx, n), scatterUpdates(update, rows, n), AXES_01);
    }

    /** {@code x.at[:, idx].add(update)}. */
    static MlxArray add(MlxArray x, MlxArray idx, MlxArray update) {
        int rows = x.dim(0);
        int n = idx.dim(0);
        return Mlx.scatterAdd(x, scatterIndices(rows, idx, n), scatterUpdates(update, rows, n), AXES_01);
    }

    /** {@code x.at[:, idx].subtract(update)}: scatter_add of the negated updates. */
    static MlxArray subtract(MlxArray x, MlxArray idx, MlxArray update) {
        int rows = x.dim(0);
        int n = idx.dim(0);
        return Mlx.scatterAdd(x, scatterIndices(rows, idx, n), Mlx.negative(scatterUpdates(update, rows, n)), AXES_01);
    }

    /** {@code tokens[-c:]} of a 1-D history of {@code length} tokens ({@code c == 0} keeps all, as Python). */
    static MlxArray lastTokens(MlxArray tokens, int length, int c) {
        int start = c == 0 ? 0 : Math.max(length - c, 0);
        if (start == 0) {
            return tokens;
        }
        return Mlx.slice(tokens, new int[] {start}, new int[] {length}, new int[] {1});
    }

    /** A Python float next to an array of dtype {@code like}: {@code array((float) v, like)} (float32 if not floating). */
    static MlxArray pyFloat(double v, Dtype like) {
        return Mlx.scalar((float) v, like.isFloating() ? like : Dtype.FLOAT32);
    }

    private static MlxArray[] scatterIndices(int rows, MlxArray idx, int n) {
        MlxArray rowIdx = Mlx.reshape(Mlx.arange(0, rows, 1, Dtype.UINT32), rows, 1);
        MlxArray colIdx = Mlx.reshape(idx, 1, n);
        return new MlxArray[] {Mlx.broadcastTo(rowIdx, rows, n), Mlx.broadcastTo(colIdx, rows, n)};
    }

    private static MlxArray scatterUpdates(MlxArray update, int rows, int n) {
        MlxArray up = update;
        // squeeze_leading_singletons
        while (up.ndim() > 0 && up.dim(0) == 1) {
            up = Mlx.squeeze(up, 0);
        }
        return Mlx.reshape(Mlx.broadcastTo(up, rows, n), rows, n, 1, 1);
    }
}
