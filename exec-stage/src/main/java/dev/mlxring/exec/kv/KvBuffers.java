package dev.mlxring.exec.kv;

import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * The key and value buffers of a full-precision cache layer ({@code [B, kvHeads, positions,
 * headDim]}, null while empty) and the one way they are replaced, shared by the four cache
 * classes that hold them as mlx-lm's {@code self.keys} / {@code self.values}.
 *
 * <p>Ownership: the buffers are detached from any scope and owned here; {@link #replace} frees
 * the superseded pair, {@link #closeBuffers} the current one. Single-threaded (the exec thread).
 */
abstract sealed class KvBuffers permits DenseKvCache, RotatingKvCache, BatchKvCache, BatchRotatingKvCache {
    MlxArray keys;
    MlxArray values;

    /**
     * {@code next}, an update built on {@code superseded}, with {@code superseded}'s handle freed
     * (its caller's own array, not used again): Python's in-place update ({@code keys[...] = x})
     * drops the old array, so at evaluation MLX donates its buffer to the update. A handle held
     * until the graph is evaluated forces a full copy per update instead: a merge of n rows would
     * hold n batch buffers at once.
     */
    static MlxArray superseding(MlxArray superseded, MlxArray next) {
        superseded.close();
        return next;
    }

    /** The buffers (for evaluating the cache after a prefill chunk); empty while nothing is stored. */
    public MlxArray[] state() {
        return keys == null ? new MlxArray[0] : new MlxArray[] {keys, values};
    }

    /** mlx-lm's {@code empty()}: nothing stored yet. */
    public boolean isEmpty() {
        return keys == null;
    }

    /** Takes ownership of {@code k} and {@code v} and frees the pair they supersede. */
    final void replace(MlxArray k, MlxArray v) {
        MlxArray oldK = keys;
        MlxArray oldV = values;
        keys = k.detach();
        values = v.detach();
        // MLX's graph holds its own references, so dropping ours after building on them is safe.
        if (oldK != null && oldK != k) {
            oldK.close();
        }
        if (oldV != null && oldV != v) {
            oldV.close();
        }
    }

    /** Starts this (empty) cache's buffers as views of {@code other}'s whole buffers. */
    final void viewsOf(KvBuffers other) {
        if (other.keys != null) {
            keys = positions(other.keys, 0, other.keys.dim(2)).detach();
            values = positions(other.values, 0, other.values.dim(2)).detach();
        }
    }

    final void closeBuffers() {
        if (keys != null) {
            keys.close();
            values.close();
            keys = null;
            values = null;
        }
    }

    /**
     * Grows the buffers by {@code size} zero positions (the new keys' and values' batch, heads,
     * head dims and dtype), as each mlx-lm cache's update does before writing: the current
     * buffers, first cut to {@code cutTo} positions unless it is negative, then the zeros; or the
     * zeros alone while empty.
     */
    final void grow(MlxArray newKeys, MlxArray newValues, int size, int cutTo) {
        grow(newKeys.dim(0), newKeys.dim(1), newKeys.dim(3), newValues.dim(3), newKeys.dtype(), size, cutTo);
    }

    /** {@link #grow(MlxArray, MlxArray, int, int)} given the new rows' batch, heads, head dims and dtype. */
    final void grow(int b, int heads, int keyDim, int valueDim, Dtype dtype, int size, int cutTo) {
        MlxArray newK = Mlx.zeros(new int[] {b, heads, size, keyDim}, dtype);
        MlxArray newV = Mlx.zeros(new int[] {b, heads, size, valueDim}, dtype);
        if (keys == null) {
            replace(newK, newV);
            return;
        }
        MlxArray k = keys;
        MlxArray v = values;
        if (cutTo >= 0) {
            k = positions(keys, 0, cutTo);
            v = positions(values, 0, cutTo);
        }
        replace(Mlx.concatenate(2, k, newK), Mlx.concatenate(2, v, newV));
    }

    /** {@code v[..., start:stop, :]}, bounds clamped as Python slices are. */
    static MlxArray positions(MlxArray v, int start, int stop) {
        int len = v.dim(2);
        start = Math.max(0, Math.min(start, len));
        stop = Math.max(start, Math.min(stop, len));
        return Mlx.slice(
                v, new int[] {0, 0, start, 0}, new int[] {v.dim(0), v.dim(1), stop, v.dim(3)}, new int[] {1, 1, 1, 1});
    }

    /** {@code x} with {@code left} zero positions before and {@code right} after (axis 2). */
    static MlxArray padPositions(MlxArray x, int left, int right) {
        MlxArray l = Mlx.zeros(new int[] {x.dim(0), x.dim(1), left, x.dim(3)}, x.dtype());
        MlxArray r = Mlx.zeros(new int[] {x.dim(0), x.dim(1), right, x.dim(3)}, x.dtype());
        return Mlx.concatenate(2, l, x, r);
    }

    /**
     * {@code extend}'s {@code concatenate([pad(a), pad(b)], axis=0)} of one tensor ({@code a}'s
     * {@code rowsA} rows, then {@code b}'s; either may be null, an empty side) with one copy of
     * each side's first {@code filled} positions: each side's filled positions shifted right by
     * its {@code left} positions and cut at {@code size}, zeros elsewhere. Every position a cache
     * reads (below its index) holds what padding each side with zeros and concatenating holds
     * ({@link #justified}, mlx-lm's graph); the capacity past a side's index, never read before it
     * is written, is zero instead of a copy. One {@link Mlx#placeRows} writes each slab of the
     * result once: the padded intermediates copied every joining row's whole buffer twice, and
     * zeros of the joined shape with a slice update per side wrote it up to three times (60
     * buffers of {@code [16, 3, 287, 64]} float32, a burst of 15 rows joining one on the default
     * model: 67-72 ms against 36-41 ms, {@code JoinedRowsCost}; docs/benchmarks.md).
     */
    static MlxArray joined(
            MlxArray a,
            int rowsA,
            int leftA,
            int filledA,
            MlxArray b,
            int rowsB,
            int leftB,
            int filledB,
            int size,
            int heads,
            int dim,
            Dtype dtype) {
        int lenA = placed(a, leftA, filledA, size);
        int lenB = placed(b, leftB, filledB, size);
        return Mlx.placeRows(
                new MlxArray[] {side(a, rowsA, heads, dim, dtype), side(b, rowsB, heads, dim, dtype)},
                new int[] {Math.min(leftA, size - lenA), Math.min(leftB, size - lenB)},
                new int[] {lenA, lenB},
                size);
    }

    /** A side's buffer, or its rows with no positions when it is empty. */
    private static MlxArray side(MlxArray x, int rows, int heads, int dim, Dtype dtype) {
        return x != null ? x : Mlx.zeros(new int[] {rows, heads, 0, dim}, dtype);
    }

    /** How many of {@code x}'s positions land in the joined buffer: its first {@code filled}, cut at {@code size}. */
    private static int placed(MlxArray x, int left, int filled, int size) {
        return x == null ? 0 : Math.max(0, Math.min(Math.min(x.dim(2), filled), size - left));
    }

    /**
     * {@code extend}'s {@code pad(c)} of the batch caches: {@code c}'s buffers ({@code rows} rows,
     * none yet counting as zero positions) shifted right by {@code left} positions, then cut or
     * zero-padded on the right to {@code size} positions.
     */
    static MlxArray[] justified(KvBuffers c, int rows, int left, int size, int heads, int d, int m, Dtype dtype) {
        MlxArray k = c.keys;
        MlxArray v = c.values;
        if (k == null) {
            k = Mlx.zeros(new int[] {rows, heads, 0, d}, dtype);
            v = Mlx.zeros(new int[] {rows, heads, 0, m}, dtype);
        }
        int right = size - k.dim(2) - left;
        if (right < 0) {
            k = positions(k, 0, k.dim(2) + right);
            v = positions(v, 0, v.dim(2) + right);
            right = 0;
        }
        if (left != 0 || right != 0) {
            // mx.pad with zeros: the same values as zeros concatenated on both sides.
            k = padPositions(k, left, right);
            v = padPositions(v, left, right);
        }
        return new MlxArray[] {k, v};
    }
}
