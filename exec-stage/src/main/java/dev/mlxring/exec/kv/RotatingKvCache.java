package dev.mlxring.exec.kv;

import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.ArrayList;
import java.util.List;

/**
 * mlx-lm's {@code RotatingKVCache(max_size, keep)}: a KV cache that holds at most
 * {@code maxSize} positions (plus, during a multi-token call, the {@code N - 1} extra positions
 * every new token needs to see a full window), keeping the first {@code keep} positions forever.
 * Used by sliding-window layers ({@code max_size} = the window, keep 0) and, for any model
 * without its own cache layout, by {@code --max-kv-size} ({@code max_kv_size}, keep 4).
 *
 * <p>Two update paths, as mlx-lm's: several tokens at once concatenate onto the temporally
 * ordered buffer after trimming it to {@code maxSize - 1} ({@code _update_concat}); a single
 * token is written in place, growing the buffer in steps of {@link #STEP} up to {@code maxSize}
 * and then rotating its write index back to {@code keep} ({@code _update_in_place}). The
 * buffers, offsets and index follow mlx-lm's op for op, so attention sees the same arrays (and
 * the same masks: {@link #makeMask}).
 *
 * <p>Ownership: the cache owns its two buffers (detached from any scope) and frees superseded
 * ones as it replaces them; {@link #close()} frees the rest. On the first multi-token update it
 * takes ownership of the keys and values it is given (they leave the caller's scope), as mlx-lm
 * keeps the very arrays. Views it returns belong to the caller's scope. Single-threaded (the
 * exec thread). Not quantizable: mlx-lm's {@code to_quantized} raises for it.
 */
public final class RotatingKvCache extends KvBuffers implements KvCache {
    public static final int STEP = 256;

    private final int maxSize;
    private final int keep;
    private int offset;
    private int idx;

    /**
     * @throws IllegalArgumentException unless {@code maxSize > keep >= 0}
     */
    public RotatingKvCache(int maxSize, int keep) {
        if (keep < 0 || maxSize <= keep) {
            throw new IllegalArgumentException(
                    "a rotating KV cache needs max size > keep >= 0, got max size " + maxSize + ", keep " + keep);
        }
        this.maxSize = maxSize;
        this.keep = keep;
    }

    public int maxSize() {
        return maxSize;
    }

    public int keep() {
        return keep;
    }

    @Override
    public int offset() {
        return offset;
    }

    /** mlx-lm's {@code is_trimmable()}: until the buffer wraps ({@code offset < max_size}). */
    @Override
    public boolean isTrimmable() {
        return offset < maxSize;
    }

    /** mlx-lm's {@code trim(n)}: {@code offset} and the write index both step back. */
    @Override
    public int trim(int n) {
        if (!isTrimmable()) {
            throw new IllegalStateException("a rotating cache that has wrapped (offset " + offset + ", max size "
                    + maxSize + ") cannot be trimmed");
        }
        int trimmed = KvCache.trimCount(offset, n);
        offset -= trimmed;
        idx -= trimmed;
        return trimmed;
    }

    /** mlx-lm's {@code size()}: the positions held, {@code min(offset, max_size)}. */
    public int size() {
        return Math.min(offset, maxSize);
    }

    /**
     * A cache (keep 0) over {@code keys} / {@code values} already in temporal order, as
     * {@code BatchRotatingKVCache.extract} builds one; it takes ownership of both arrays.
     */
    static RotatingKvCache restored(int maxSize, MlxArray keys, MlxArray values, int offset) {
        RotatingKvCache c = new RotatingKvCache(maxSize, 0);
        c.replace(keys, values);
        c.offset = offset;
        c.idx = keys.dim(2);
        return c;
    }

    /** {@code _temporal_order} of both buffers (views in the caller's scope; this cache is unchanged). */
    MlxArray[] temporallyOrdered() {
        return new MlxArray[] {temporalOrder(keys), temporalOrder(values)};
    }

    /** {@code update_and_fetch}: in place for one token, by concatenation for several. */
    public MlxArray[] updateAndFetch(MlxArray newKeys, MlxArray newValues) {
        if (newKeys.dim(2) == 1) {
            return updateInPlace(newKeys, newValues);
        }
        return updateConcat(newKeys, newValues);
    }

    private MlxArray[] updateConcat(MlxArray newKeys, MlxArray newValues) {
        if (keys == null) {
            replace(newKeys, newValues);
        } else {
            // Temporal order first, to preserve context; then at most max_size - 1 old positions,
            // so every new token sees max_size positions.
            replace(temporalOrder(keys), temporalOrder(values));
            idx = keys.dim(2);
            int trimSize = idx - maxSize + 1;
            replace(trim(trimSize, keys, newKeys), trim(trimSize, values, newValues));
        }
        offset += newKeys.dim(2);
        idx = keys.dim(2);
        return new MlxArray[] {keys, values};
    }

    private MlxArray[] updateInPlace(MlxArray newKeys, MlxArray newValues) {
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
        }
        if (idx == maxSize) {
            idx = keep; // rotate
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
        idx += s;
        if (offset < keys.dim(2)) {
            return new MlxArray[] {positions(keys, 0, offset), positions(values, 0, offset)};
        }
        return new MlxArray[] {keys, values};
    }

    /** {@code _trim}: drops {@code trimSize} positions after the first {@code keep}, then appends. */
    private MlxArray trim(int trimSize, MlxArray v, MlxArray append) {
        List<MlxArray> parts = new ArrayList<>(3);
        if (trimSize > 0) {
            parts.add(positions(v, 0, keep));
            parts.add(positions(v, trimSize + keep, v.dim(2)));
        } else {
            parts.add(v);
        }
        if (append != null) {
            parts.add(append);
        }
        return Mlx.concatenate(2, parts.toArray(MlxArray[]::new));
    }

    /** {@code _temporal_order}: the buffer in position order, the unused end sliced off. */
    private MlxArray temporalOrder(MlxArray v) {
        if (idx == v.dim(2)) {
            return v;
        }
        if (idx < offset) {
            return Mlx.concatenate(2, positions(v, 0, keep), positions(v, idx, v.dim(2)), positions(v, keep, idx));
        }
        return positions(v, 0, idx);
    }

    /**
     * {@code make_mask(N, window_size)}: for several tokens, "causal" while the window cannot
     * cut in, else {@code create_causal_mask(N, min(max_size - 1, offset), window)}; for one
     * token, no mask (the rolled mask mlx-lm builds when the window is smaller than the cache
     * belongs to layouts no supported family uses, and is refused).
     *
     * @param windowSize the layer's sliding window, or null (then {@code maxSize})
     */
    AttentionMask makeMask(int n, Integer windowSize) {
        if (n > 1) {
            int window = windowSize != null ? windowSize : maxSize;
            int off = Math.min(maxSize - 1, offset);
            if (off + n > window) {
                return AttentionMask.ofArray(AttentionMask.createCausalMask(n, off, window));
            }
            return AttentionMask.CAUSAL;
        }
        if (windowSize == null) {
            return AttentionMask.NONE;
        }
        if (offset >= windowSize && maxSize > windowSize) {
            throw new UnsupportedOperationException("a sliding window (" + windowSize
                    + ") smaller than its rotating cache (" + maxSize + ") is not supported");
        }
        return AttentionMask.NONE;
    }

    @Override
    public void close() {
        closeBuffers();
        offset = 0;
        idx = 0;
    }
}
