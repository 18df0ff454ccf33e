package dev.mlxring.exec.kv;

import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.Arrays;

/**
 * mlx-lm's {@code BatchRotatingKVCache}: one sliding-window layer's keys and values for {@code B}
 * rows decoding together, at most {@code maxSize} positions per row (plus the {@code N - 1} extra
 * positions a multi-token call needs so every new token sees a full window). Rows are
 * left-padded as in {@link BatchKvCache}; unlike it, the per-row rope offsets are tracked
 * directly ({@code offset}), because trimming and rotation move the padding
 * ({@code left_padding} may go negative once a row's oldest positions are dropped) while the
 * offsets only grow. There is no {@code keep}: mlx-lm's batch cache rotates over the whole
 * buffer (so a {@code --max-kv-size} cache, keep 4 when solo, loses its kept prefix here too).
 *
 * <p>Every operation is mlx-lm's, op for op, so the buffers, their order and the masks are the
 * oracle's at every step: the concatenating update for several tokens ({@code _update_concat}:
 * temporal order, roll of right-padded rows, trim to {@code maxSize - 1}), the in-place update
 * for one ({@code _update_in_place}: growth in {@link #STEP}s, trim, rotation), {@link #makeMask},
 * {@link #merge} (solo {@link RotatingKvCache}s right-aligned), {@link #extend}, {@link #filter}
 * (no trim of the common padding, as mlx-lm's), {@link #extract} and the right padding of a
 * prefill chunk ({@link #prepareRightPadding} / {@link #finalizePadding}). {@code mx.roll} is a
 * pure copy, built here from two slices; {@code dynamic_roll} is {@code take_along_axis} as in
 * {@link BatchKvCache}. The paddings and offsets are Java ints (the same values as mlx-lm's
 * int32 arrays).
 *
 * <p>Ownership: the cache owns its two buffers (detached) and frees superseded ones as it
 * replaces them; on the first multi-token update it takes ownership of the keys and values it is
 * given, as mlx-lm keeps the very arrays; {@link #extend} takes over (and empties) the other
 * cache; {@link #close()} frees the rest. Views and masks it returns belong to the caller's scope.
 * Single-threaded (the exec thread). Not quantizable (mlx-lm raises too).
 */
public final class BatchRotatingKvCache extends KvBuffers implements KvCache {
    public static final int STEP = 256;

    private final int maxSize;
    private int[] leftPadding;
    private int[] offsets;
    private int idx;
    /** mlx-lm's {@code _offset}: positions written through this cache (the longest row's). */
    private int offset;

    private boolean rotated;
    /** mlx-lm's {@code _lengths}: set by {@link #prepareRightPadding}, consumed by {@link #finalizePadding}. */
    private int[] lengths;

    /** An empty cache for rows with the given left padding ({@code BatchRotatingKVCache(max_size, left_padding)}). */
    public BatchRotatingKvCache(int maxSize, int[] leftPadding) {
        if (maxSize < 1) {
            throw new IllegalArgumentException("a rotating KV cache needs max size >= 1, got " + maxSize);
        }
        this.maxSize = maxSize;
        this.leftPadding = leftPadding.clone();
        this.offsets = new int[leftPadding.length];
        for (int i = 0; i < offsets.length; i++) {
            offsets[i] = -leftPadding[i];
        }
    }

    public int maxSize() {
        return maxSize;
    }

    public int batchSize() {
        return leftPadding.length;
    }

    /** mlx-lm's {@code _offset}. */
    @Override
    public int offset() {
        return offset;
    }

    public int[] leftPadding() {
        return leftPadding.clone();
    }

    /** mlx-lm's {@code offset} array: each row's rope position (int32). */
    public MlxArray offsets() {
        return Mlx.fromInts(offsets, offsets.length);
    }

    int[] rowOffsets() {
        return offsets.clone();
    }

    /** {@code update_and_fetch}: in place for one token, by concatenation for several. */
    public MlxArray[] updateAndFetch(MlxArray newKeys, MlxArray newValues) {
        if (newKeys.dim(2) == 1) {
            return updateInPlace(newKeys, newValues);
        }
        return updateConcat(newKeys, newValues);
    }

    /** {@code _temporal_order()}: a rotated buffer rolled back into position order. */
    private void temporalOrder() {
        if (rotated) {
            replace(roll(keys, -idx), roll(values, -idx));
            idx = keys.dim(2);
            rotated = false;
        }
    }

    private MlxArray[] updateConcat(MlxArray newKeys, MlxArray newValues) {
        if (keys == null) {
            replace(newKeys, newValues);
        } else {
            temporalOrder();
            if (keys.dim(2) > idx) {
                replace(positions(keys, 0, idx), positions(values, 0, idx));
            }
            // Right-padded rows are rolled first, so their padding never evicts real positions.
            if (lengths != null) {
                rollRows(lengths);
            }
            // At most max_size + S - 1 positions, so every new token sees max_size of context.
            int trimSize = idx - maxSize + 1;
            if (trimSize > 0) {
                for (int i = 0; i < leftPadding.length; i++) {
                    leftPadding[i] -= trimSize;
                }
            }
            replace(trim(trimSize, keys, newKeys), trim(trimSize, values, newValues));
        }
        int s = newKeys.dim(2);
        for (int i = 0; i < offsets.length; i++) {
            offsets[i] += s;
        }
        offset += s;
        idx = keys.dim(2);
        return new MlxArray[] {keys, values};
    }

    private MlxArray[] updateInPlace(MlxArray newKeys, MlxArray newValues) {
        if (lengths != null) {
            throw new IllegalStateException("finalizePadding() must run before decoding with a BatchRotatingKvCache");
        }
        int s = newKeys.dim(2);
        int prev = offset;
        if (keys == null || (prev >= keys.dim(2) && keys.dim(2) < maxSize)) {
            grow(newKeys, newValues, Math.min(STEP, maxSize - prev), -1);
            idx = prev;
        }
        int trimSize = keys.dim(2) - maxSize;
        if (trimSize > 0) {
            replace(trim(trimSize, keys, null), trim(trimSize, values, null));
            idx = maxSize;
            for (int i = 0; i < leftPadding.length; i++) {
                leftPadding[i] -= trimSize;
            }
        }
        if (idx == maxSize) {
            rotated = true;
            idx = 0;
        }
        if (rotated) {
            for (int i = 0; i < leftPadding.length; i++) {
                leftPadding[i] -= s;
            }
        }
        int[] strides = {1, 1, 1, 1};
        replace(
                Mlx.sliceUpdate(
                        keys,
                        newKeys,
                        new int[] {0, 0, idx, 0},
                        new int[] {keys.dim(0), keys.dim(1), idx + s, keys.dim(3)},
                        strides),
                Mlx.sliceUpdate(
                        values,
                        newValues,
                        new int[] {0, 0, idx, 0},
                        new int[] {values.dim(0), values.dim(1), idx + s, values.dim(3)},
                        strides));
        offset += s;
        for (int i = 0; i < offsets.length; i++) {
            offsets[i] += s;
        }
        idx += s;
        return keysAndValues();
    }

    /** {@code keys_and_values()}: the first {@code _offset} positions until the buffer is full. */
    public MlxArray[] keysAndValues() {
        if (offset < keys.dim(2)) {
            return new MlxArray[] {positions(keys, 0, offset), positions(values, 0, offset)};
        }
        return new MlxArray[] {keys, values};
    }

    /**
     * {@code prepare(lengths=..., right_padding=...)}: the next prefill call feeds rows of these
     * lengths, right-padded by these amounts.
     */
    public void prepareRightPadding(int[] rowLengths, int[] padding) {
        if (padding.length != leftPadding.length || rowLengths.length != leftPadding.length) {
            throw new IllegalArgumentException(
                    "right padding for " + padding.length + " rows, batch has " + leftPadding.length);
        }
        if (Arrays.stream(padding).max().orElse(0) > 0) {
            lengths = new int[rowLengths.length];
            for (int i = 0; i < lengths.length; i++) {
                lengths[i] = rowLengths[i] + offsets[i];
            }
        }
    }

    /** {@code finalize()}: each row rolled right by {@code max(0, offset - lengths)}, which becomes left padding. */
    public void finalizePadding() {
        if (lengths != null) {
            rollRows(lengths);
            lengths = null;
        }
    }

    /** {@code roll = maximum(0, offset - lengths)}; {@code dynamic_roll} of both buffers; padding and offsets follow. */
    private void rollRows(int[] rowLengths) {
        int b = leftPadding.length;
        int[] roll = new int[b];
        for (int r = 0; r < b; r++) {
            roll[r] = Math.max(0, offsets[r] - rowLengths[r]);
        }
        int n = keys.dim(2);
        int[] index = new int[b * n];
        for (int r = 0; r < b; r++) {
            for (int j = 0; j < n; j++) {
                index[r * n + j] = Math.floorMod(j - roll[r], n);
            }
        }
        MlxArray indices = Mlx.fromInts(index, b, 1, n, 1);
        replace(Mlx.takeAlongAxis(keys, indices, 2), Mlx.takeAlongAxis(values, indices, 2));
        for (int r = 0; r < b; r++) {
            leftPadding[r] += roll[r];
            offsets[r] -= roll[r];
        }
    }

    /**
     * {@code make_mask(N, window_size)}: boolean {@code [B, 1, N, K]}, the windowed causal mask
     * over {@code min(maxSize - 1, _offset)} past positions with each row's left padding (less
     * what the coming update trims or overwrites) masked, rolled to the buffer's rotation for a
     * single token. Built before the layers update.
     *
     * @param windowSize the layer's window, or null ({@code maxSize})
     */
    public MlxArray makeMask(int n, Integer windowSize) {
        int window = windowSize != null && windowSize != 0 ? windowSize : maxSize;
        int off = Math.min(maxSize - 1, offset);
        MlxArray rinds = Mlx.arange(0, off + n, 1, Dtype.INT32);
        MlxArray linds = off != 0 ? Mlx.arange(off, off + n, 1, Dtype.INT32) : rinds;
        linds = Mlx.expandDims(linds, 1);
        rinds = Mlx.expandDims(rinds, 0);
        MlxArray mask = Mlx.greaterEqual(linds, rinds);
        mask = Mlx.logicalAnd(mask, Mlx.less(linds, Mlx.add(rinds, Mlx.scalar(window, Dtype.INT32))));
        int[] lp = leftPadding.clone();
        int trimSize = idx - maxSize + (n > 1 ? 1 : 0);
        if (trimSize > 0) {
            for (int i = 0; i < lp.length; i++) {
                lp[i] -= trimSize;
            }
        }
        boolean rotatedMask = n == 1 && (rotated || idx >= maxSize);
        if (rotatedMask) {
            for (int i = 0; i < lp.length; i++) {
                lp[i] -= 1;
            }
        }
        mask = Mlx.logicalAnd(mask, Mlx.greaterEqual(rinds, Mlx.fromInts(lp, lp.length, 1, 1, 1)));
        if (rotatedMask) {
            int i = idx >= maxSize ? 0 : idx;
            mask = rollAxis(mask, i + 1, mask.ndim() - 1);
        }
        return mask;
    }

    /**
     * Rolls row {@code r} back by {@code counts[r]} positions, as {@link BatchKvCache#trimRows}
     * does (the common count off the shared index and {@code _offset}, a row that drops more
     * rolled right by the difference into its left padding), each row's rope offset stepping back
     * by its count, then the padding every row has dropped (the shared index and {@code _offset}
     * stay the longest row's length). Only while the cache is a plain prefix of its window: not rotated and holding
     * fewer than {@code maxSize} positions (mlx-lm's {@code is_trimmable}), which
     * {@link #trimmableAfter} lets a caller check before it writes the positions it may trim.
     *
     * @return the counts forgotten per row (capped at each row's filled positions)
     * @throws IllegalStateException when the cache has rotated or filled its window, or during a
     *     prefill chunk
     * @throws IllegalArgumentException for a negative count or not one count per row
     */
    public int[] trimRows(int[] counts) {
        int b = leftPadding.length;
        if (counts.length != b) {
            throw new IllegalArgumentException("trim counts for " + counts.length + " rows, batch has " + b);
        }
        if (lengths != null) {
            throw new IllegalStateException("trimRows during a prefill chunk (finalizePadding first)");
        }
        if (keys == null) {
            for (int c : counts) {
                KvCache.trimCount(0, c);
            }
            return new int[b];
        }
        if (rotated || idx != offset || offset >= maxSize) {
            throw new IllegalStateException("a rotating batch cache cannot be trimmed once it fills its window of "
                    + maxSize + " positions (offset " + offset + ")");
        }
        int[] done = new int[b];
        int common = Integer.MAX_VALUE;
        for (int r = 0; r < b; r++) {
            done[r] = KvCache.trimCount(idx - Math.max(0, leftPadding[r]), counts[r]);
            common = Math.min(common, done[r]);
        }
        idx -= common;
        offset -= common;
        int[] shift = new int[b];
        boolean any = false;
        for (int r = 0; r < b; r++) {
            shift[r] = done[r] - common;
            offsets[r] -= done[r];
            any |= shift[r] > 0;
        }
        if (any) {
            int n = keys.dim(2);
            int[] index = new int[b * n];
            for (int r = 0; r < b; r++) {
                for (int j = 0; j < n; j++) {
                    index[r * n + j] = Math.floorMod(j - shift[r], n);
                }
            }
            MlxArray indices = Mlx.fromInts(index, b, 1, n, 1);
            replace(Mlx.takeAlongAxis(keys, indices, 2), Mlx.takeAlongAxis(values, indices, 2));
            for (int r = 0; r < b; r++) {
                leftPadding[r] += shift[r];
            }
            // The padding every row has goes, so the window's room is the longest row's.
            int minPad = Arrays.stream(leftPadding).min().orElse(0);
            if (minPad > 0) {
                replace(positions(keys, minPad, keys.dim(2)), positions(values, minPad, values.dim(2)));
                idx -= minPad;
                offset -= minPad;
                for (int r = 0; r < b; r++) {
                    leftPadding[r] -= minPad;
                }
            }
        }
        return done;
    }

    /**
     * Whether {@link #trimRows} can still run after {@code positions} more are written: the cache
     * has not rotated and will hold fewer than {@code maxSize} positions.
     */
    public boolean trimmableAfter(int positions) {
        return !rotated && idx == offset && (long) offset + positions < maxSize;
    }

    /** In-place {@code filter(batch_indices)}: keeps those rows (no padding trim, as mlx-lm's). */
    public void filter(int[] keep) {
        if (keep.length == 0) {
            throw new IllegalArgumentException("filter keeps no row (the batch drops the cache instead)");
        }
        if (keys != null) {
            MlxArray index = Mlx.fromInts(keep, keep.length);
            replace(Mlx.take(keys, index, 0), Mlx.take(values, index, 0));
        }
        offsets = Paddings.gather(offsets, keep);
        leftPadding = Paddings.gather(leftPadding, keep);
        if (lengths != null) {
            lengths = Paddings.gather(lengths, keep);
        }
    }

    /** A copy of this cache holding only {@code rows} ({@code copy.deepcopy} then {@link #filter}). */
    public BatchRotatingKvCache select(int[] rows) {
        BatchRotatingKvCache copy = new BatchRotatingKvCache(maxSize, leftPadding);
        copy.offsets = offsets.clone();
        copy.idx = idx;
        copy.offset = offset;
        copy.rotated = rotated;
        copy.lengths = lengths == null ? null : lengths.clone();
        // The first filter step gathers new arrays, so the copy can start from shared views.
        copy.viewsOf(this);
        copy.filter(rows);
        return copy;
    }

    /**
     * In-place {@code extend(other)}: {@code other}'s rows appended. Unless both share rotation
     * and index, both are put in temporal order first; then both are padded (zeros) so their
     * write indices line up at the larger one. Takes over {@code other}'s arrays and closes it.
     */
    public void extend(BatchRotatingKvCache other) {
        if (other.maxSize != maxSize) {
            throw new IllegalArgumentException(
                    "cannot extend a rotating cache of max size " + maxSize + " with one of " + other.maxSize);
        }
        if (keys == null && other.keys == null) {
            leftPadding = Paddings.concat(leftPadding, other.leftPadding);
            offsets = Paddings.concat(offsets, other.offsets);
            other.close();
            return;
        }
        if (rotated != other.rotated || idx != other.idx) {
            temporalOrder();
            other.temporalOrder();
        }
        int maxIdx = Math.max(idx, other.idx);
        MlxArray ref = other.keys != null ? other.keys : keys;
        MlxArray refV = other.keys != null ? other.values : values;
        int heads = ref.dim(1);
        int d = ref.dim(3);
        int m = refV.dim(3);
        int maxLen = Math.max(keys == null ? 0 : keys.dim(2), other.keys == null ? 0 : other.keys.dim(2));
        Dtype dtype = (keys != null ? keys : other.keys).dtype();
        int rowsA = offsets.length;
        int rowsB = other.offsets.length;
        int leftA = maxIdx - idx;
        int leftB = maxIdx - other.idx;
        int[] lpA = Paddings.shifted(leftPadding, leftA);
        int[] lpB = Paddings.shifted(other.leftPadding, leftB);
        // A rotating buffer's every position may be read (it wraps): each side is copied whole.
        int all = Integer.MAX_VALUE;
        replace(
                joined(keys, rowsA, leftA, all, other.keys, rowsB, leftB, all, maxLen, heads, d, dtype),
                joined(values, rowsA, leftA, all, other.values, rowsB, leftB, all, maxLen, heads, m, dtype));
        offsets = Paddings.concat(offsets, other.offsets);
        leftPadding = Paddings.concat(lpA, lpB);
        idx = maxIdx;
        offset = Math.max(offset, other.offset);
        other.close();
    }

    /**
     * {@code extract(idx)}: row {@code row} as a solo {@link RotatingKvCache} (keep 0), its
     * positions in temporal order from its padding on; this cache is unchanged.
     */
    public RotatingKvCache extract(int row) {
        int padding = Math.max(0, leftPadding[row]);
        MlxArray k = Mlx.slice(
                keys, new int[] {row, 0, 0, 0}, new int[] {row + 1, keys.dim(1), keys.dim(2), keys.dim(3)}, new int[] {
                    1, 1, 1, 1
                });
        MlxArray v = Mlx.slice(
                values,
                new int[] {row, 0, 0, 0},
                new int[] {row + 1, values.dim(1), values.dim(2), values.dim(3)},
                new int[] {1, 1, 1, 1});
        int end = idx;
        if (rotated) {
            k = roll(k, -idx);
            v = roll(v, -idx);
            end = maxSize;
        }
        k = Mlx.contiguous(positions(k, padding, end));
        v = Mlx.contiguous(positions(v, padding, end));
        return RotatingKvCache.restored(maxSize, k, v, offsets[row]);
    }

    /**
     * {@code BatchRotatingKVCache.merge(caches)} ({@code RotatingKVCache.merge}): each solo
     * cache's last {@code size()} positions in temporal order, right-aligned to the longest; the
     * rows keep their own offsets. The solo caches are unchanged (the caller closes them).
     *
     * @throws IllegalArgumentException if the caches' max sizes differ
     */
    public static BatchRotatingKvCache merge(RotatingKvCache... caches) {
        int maxSize = caches[0].maxSize();
        for (RotatingKvCache c : caches) {
            if (c.maxSize() != maxSize) {
                throw new IllegalArgumentException(
                        "BatchRotatingKvCache can only merge caches with the same maximum size");
            }
        }
        int b = caches.length;
        int[] lengths = new int[b];
        int[] rowOffsets = new int[b];
        int maxLength = 0;
        for (int i = 0; i < b; i++) {
            lengths[i] = caches[i].size();
            rowOffsets[i] = caches[i].offset();
            maxLength = Math.max(maxLength, lengths[i]);
        }
        if (maxLength == 0) {
            return new BatchRotatingKvCache(maxSize, new int[b]);
        }
        int[] padding = new int[b];
        int heads = 0;
        int dk = 0;
        int dv = 0;
        Dtype dt = null;
        for (int i = 0; i < b; i++) {
            padding[i] = maxLength - lengths[i];
            if (!caches[i].isEmpty()) {
                MlxArray[] s = caches[i].state();
                heads = Math.max(heads, s[0].dim(1));
                dk = Math.max(dk, s[0].dim(3));
                dv = Math.max(dv, s[1].dim(3));
                if (dt == null) {
                    dt = s[0].dtype();
                }
            }
        }
        MlxArray keys = Mlx.zeros(new int[] {b, heads, maxLength, dk}, dt);
        MlxArray values = Mlx.zeros(new int[] {b, heads, maxLength, dv}, dt);
        int[] strides = {1, 1, 1, 1};
        for (int i = 0; i < b; i++) {
            RotatingKvCache c = caches[i];
            if (c.isEmpty()) {
                continue;
            }
            MlxArray[] ordered = c.temporallyOrdered();
            int l = lengths[i];
            int p = padding[i];
            MlxArray k = positions(ordered[0], ordered[0].dim(2) - l, ordered[0].dim(2));
            MlxArray v = positions(ordered[1], ordered[1].dim(2) - l, ordered[1].dim(2));
            keys = KvBuffers.superseding(
                    keys,
                    Mlx.sliceUpdate(keys, k, new int[] {i, 0, p, 0}, new int[] {i + 1, heads, p + l, dk}, strides));
            values = KvBuffers.superseding(
                    values,
                    Mlx.sliceUpdate(values, v, new int[] {i, 0, p, 0}, new int[] {i + 1, heads, p + l, dv}, strides));
        }
        BatchRotatingKvCache cache = new BatchRotatingKvCache(maxSize, padding);
        cache.replace(keys, values);
        cache.offsets = rowOffsets;
        cache.idx = maxLength;
        cache.offset = maxLength;
        return cache;
    }

    /** {@code _trim}: drops the first {@code trimSize} positions, then appends. */
    private static MlxArray trim(int trimSize, MlxArray v, MlxArray append) {
        if (trimSize > 0) {
            v = positions(v, trimSize, v.dim(2));
        }
        return append == null ? v : Mlx.concatenate(2, v, append);
    }

    /** {@code mx.roll(x, shift, axis=2)}: a copy, element {@code j} from {@code (j - shift) mod n}. */
    private static MlxArray roll(MlxArray x, int shift) {
        return rollAxis(x, shift, 2);
    }

    private static MlxArray rollAxis(MlxArray x, int shift, int axis) {
        int n = x.dim(axis);
        int s = n == 0 ? 0 : Math.floorMod(shift, n);
        int[] start = new int[x.ndim()];
        int[] stop = x.shape();
        int[] strides = new int[x.ndim()];
        Arrays.fill(strides, 1);
        if (s == 0) {
            return Mlx.slice(x, start, stop, strides);
        }
        int[] tailStart = start.clone();
        tailStart[axis] = n - s;
        int[] headStop = stop.clone();
        headStop[axis] = n - s;
        return Mlx.concatenate(axis, Mlx.slice(x, tailStart, stop, strides), Mlx.slice(x, start, headStop, strides));
    }

    @Override
    public void close() {
        closeBuffers();
        idx = 0;
        offset = 0;
        leftPadding = new int[0];
        offsets = new int[0];
        lengths = null;
        rotated = false;
    }
}
