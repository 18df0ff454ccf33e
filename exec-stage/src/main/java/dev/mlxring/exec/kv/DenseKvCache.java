package dev.mlxring.exec.kv;

import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * mlx-lm's {@code KVCache} (full precision): key/value buffers of shape {@code [B, kvHeads, capacity, headDim]}
 * that grow in steps of {@link #STEP} positions, written with slice updates; {@link #offset} is
 * the number of filled positions. Same growth and slicing as mlx-lm, so attention sees the same
 * arrays.
 *
 * <p>Ownership: the cache owns its two buffers (detached from any scope) and frees the
 * superseded ones as it replaces them; {@link #close()} frees the rest. Views it returns from
 * {@link #updateAndFetch} belong to the caller's scope. Single-threaded (the exec thread).
 */
public final class DenseKvCache extends KvBuffers implements KvCache {
    public static final int STEP = 256;

    private int offset;

    /** An empty cache ({@code KVCache()}). */
    public DenseKvCache() {}

    /**
     * A cache restored from a prefix-cache snapshot: {@code keys} and {@code values} are whole
     * buffers (capacity included) and {@code offset} the positions to keep, at most the capacity
     * (fewer = mlx-lm's {@code trim}). Takes ownership of both arrays.
     */
    public static DenseKvCache restored(MlxArray keys, MlxArray values, int offset) {
        if (offset < 0 || offset > keys.dim(2)) {
            throw new IllegalArgumentException(
                    "offset " + offset + " outside the buffer's " + keys.dim(2) + " positions");
        }
        DenseKvCache c = new DenseKvCache();
        c.keys = keys.detach();
        c.values = values.detach();
        c.offset = offset;
        return c;
    }

    /**
     * A cache holding exactly {@code keys}/{@code values} ({@code [1, H, L, D]}, all filled), as
     * {@code BatchKVCache.extract} builds one; takes ownership of both.
     */
    DenseKvCache(MlxArray keys, MlxArray values) {
        this.keys = keys.detach();
        this.values = values.detach();
        this.offset = keys.dim(2);
    }

    @Override
    public int offset() {
        return offset;
    }

    @Override
    public boolean isTrimmable() {
        return true;
    }

    @Override
    public int trim(int n) {
        int trimmed = KvCache.trimCount(offset, n);
        offset -= trimmed;
        return trimmed;
    }

    /** Appends {@code [B, H, L, D]} keys and values; returns views over all filled positions. */
    public MlxArray[] updateAndFetch(MlxArray newKeys, MlxArray newValues) {
        int prev = offset;
        int length = newKeys.dim(2);
        reserve(newKeys.dim(0), newKeys.dim(1), newKeys.dim(3), newValues.dim(3), newKeys.dtype(), length);
        offset += length;
        int[] start = {0, 0, prev, 0};
        int[] stop = {keys.dim(0), keys.dim(1), offset, keys.dim(3)};
        int[] vStop = {values.dim(0), values.dim(1), offset, values.dim(3)};
        int[] strides = {1, 1, 1, 1};
        replace(
                Mlx.sliceUpdate(keys, newKeys, start, stop, strides),
                Mlx.sliceUpdate(values, newValues, start, vStop, strides));
        return keysAndValues();
    }

    /**
     * The buffers, grown as {@link #updateAndFetch} grows them for {@code length} new positions of
     * that batch, heads, head dims and dtype, for a caller that writes the positions itself (the
     * fast tier's fused block); {@link #written} then hands over the buffers it wrote.
     */
    public MlxArray[] reserve(int batch, int heads, int keyDim, int valueDim, Dtype dtype, int length) {
        if (keys == null || offset + length > keys.dim(2)) {
            int nSteps = (STEP + length - 1) / STEP;
            grow(batch, heads, keyDim, valueDim, dtype, nSteps * STEP, offset % STEP != 0 ? offset : -1);
        }
        return new MlxArray[] {keys, values};
    }

    /**
     * Takes ownership of {@code k} and {@code v}: the {@link #reserve reserved} buffers with
     * {@code length} more positions written after the old offset (the slice updates of
     * {@link #updateAndFetch}, done by the caller's primitive).
     */
    public void written(MlxArray k, MlxArray v, int length) {
        if (k.dim(2) != keys.dim(2) || offset + length > k.dim(2)) {
            throw new IllegalArgumentException("written buffers of " + k.dim(2) + " positions for offset " + offset
                    + " + " + length + " in a buffer of " + keys.dim(2));
        }
        replace(k, v);
        offset += length;
    }

    /** Views of the filled positions ({@code keys[..., :offset, :]}), or the buffers when full. */
    public MlxArray[] keysAndValues() {
        if (offset < keys.dim(2)) {
            return new MlxArray[] {positions(keys, 0, offset), positions(values, 0, offset)};
        }
        return new MlxArray[] {keys, values};
    }

    /**
     * mlx-lm's {@code KVCache.to_quantized(group_size, bits)}: {@code mx.quantize} of the whole
     * key buffer, then of the value buffer (all {@code capacity} positions, filled or not), with
     * this cache's offset. The new cache owns the quantized arrays; this one keeps its buffers
     * until it is closed (the caller closes it: mlx-lm drops the replaced cache).
     *
     * @throws IllegalArgumentException when {@code groupSize} does not divide the head dimension
     *     (mx.quantize refuses it too; this names the flag)
     */
    public QuantizedKvCache toQuantized(int groupSize, int bits) {
        if (keys == null) {
            return new QuantizedKvCache(groupSize, bits, offset, null, null);
        }
        for (MlxArray a : new MlxArray[] {keys, values}) {
            if (a.dim(3) % groupSize != 0) {
                throw new IllegalArgumentException("--kv-group-size " + groupSize
                        + " does not divide the model's attention head dimension " + a.dim(3));
            }
        }
        MlxArray[] k = Mlx.quantize(keys, groupSize, bits);
        MlxArray[] v = Mlx.quantize(values, groupSize, bits);
        return new QuantizedKvCache(groupSize, bits, offset, k, v);
    }

    @Override
    public void close() {
        closeBuffers();
        offset = 0;
    }
}
