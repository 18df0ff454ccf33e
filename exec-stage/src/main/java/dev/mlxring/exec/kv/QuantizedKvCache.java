package dev.mlxring.exec.kv;

import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.pipeline.KvQuantization;

/**
 * mlx-lm's {@code QuantizedKVCache}: keys and values each held as the {@code (weight, scales,
 * biases)} triple of {@code mx.quantize} (affine, {@link #groupSize()}, {@link #bits()}), buffers
 * of shape {@code [B, kvHeads, capacity, ·]} that grow in steps of {@link #STEP} positions exactly
 * as mlx-lm's do (zeros concatenated on axis 2 after trimming to the offset when it is not a
 * multiple of the step); new positions are quantized and written with slice updates.
 *
 * <p>Ownership: the cache owns its six arrays (detached from any scope) and frees the superseded
 * ones as it replaces them; {@link #close()} frees the rest. Views it returns from
 * {@link #updateAndFetch} belong to the caller's scope. Single-threaded (the exec thread).
 */
public final class QuantizedKvCache implements KvCache {
    public static final int STEP = 256;

    private final int groupSize;
    private final int bits;
    /** {weight, scales, biases} of the keys and of the values; null while empty. */
    private MlxArray[] keys;

    private MlxArray[] values;
    private int offset;

    /** Takes ownership of {@code keys} and {@code values} (both null for an empty cache). */
    QuantizedKvCache(int groupSize, int bits, int offset, MlxArray[] keys, MlxArray[] values) {
        this.groupSize = groupSize;
        this.bits = bits;
        this.offset = offset;
        if (keys != null) {
            this.keys = detachAll(keys);
            this.values = detachAll(values);
        }
    }

    /** An empty cache ({@code QuantizedKVCache(group_size, bits)}). */
    public QuantizedKvCache(int groupSize, int bits) {
        this(groupSize, bits, 0, null, null);
    }

    /**
     * A cache restored from a prefix-cache snapshot: the keys' and the values' (weight, scales,
     * biases) whole buffers and the positions to keep (fewer than filled = mlx-lm's {@code trim}).
     * Takes ownership of the six arrays.
     */
    public static QuantizedKvCache restored(int groupSize, int bits, int offset, MlxArray[] keys, MlxArray[] values) {
        if (keys.length != 3 || values.length != 3) {
            throw new IllegalArgumentException("a quantized cache needs three key and three value arrays");
        }
        if (offset < 0 || offset > keys[0].dim(2)) {
            throw new IllegalArgumentException(
                    "offset " + offset + " outside the buffer's " + keys[0].dim(2) + " positions");
        }
        return new QuantizedKvCache(groupSize, bits, offset, keys, values);
    }

    public int groupSize() {
        return groupSize;
    }

    public int bits() {
        return bits;
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

    /**
     * Appends {@code [B, H, L, D]} keys and values (quantized here); returns the six arrays
     * {@code kw, ks, kb, vw, vs, vb} over all filled positions ({@code keys_and_values()}).
     */
    public MlxArray[] updateAndFetch(MlxArray newKeys, MlxArray newValues) {
        int b = newKeys.dim(0);
        int heads = newKeys.dim(1);
        int numSteps = newKeys.dim(2);
        int kHeadDim = newKeys.dim(3);
        int vHeadDim = newValues.dim(-1);
        int prev = offset;

        if (keys == null || prev + numSteps > keys[0].dim(-2)) {
            int elPerInt = 8 * Dtype.UINT32.sizeInBytes / bits;
            int newSteps = (STEP + numSteps - 1) / STEP * STEP;
            if (keys != null) {
                MlxArray[] k = keys;
                MlxArray[] v = values;
                if (prev % STEP != 0) {
                    k = prefixAll(k, prev);
                    v = prefixAll(v, prev);
                }
                replace(expandAll(k, b, heads, newSteps), expandAll(v, b, heads, newSteps));
            } else {
                replace(
                        initQuant(b, heads, newSteps, kHeadDim, elPerInt, newKeys.dtype()),
                        initQuant(b, heads, newSteps, vHeadDim, elPerInt, newKeys.dtype()));
            }
        }
        offset += numSteps;

        MlxArray[] qk = Mlx.quantize(newKeys, groupSize, bits);
        MlxArray[] qv = Mlx.quantize(newValues, groupSize, bits);
        MlxArray[] nk = new MlxArray[3];
        MlxArray[] nv = new MlxArray[3];
        int[] strides = {1, 1, 1, 1};
        for (int i = 0; i < 3; i++) {
            MlxArray k = keys[i];
            MlxArray v = values[i];
            nk[i] = Mlx.sliceUpdate(
                    k, qk[i], new int[] {0, 0, prev, 0}, new int[] {k.dim(0), k.dim(1), offset, k.dim(3)}, strides);
            nv[i] = Mlx.sliceUpdate(
                    v, qv[i], new int[] {0, 0, prev, 0}, new int[] {v.dim(0), v.dim(1), offset, v.dim(3)}, strides);
        }
        replace(nk, nv);
        return keysAndValues();
    }

    /** The six arrays over the filled positions ({@code [..., :offset, :]}), or the buffers when full. */
    public MlxArray[] keysAndValues() {
        if (offset == keys[0].dim(2)) {
            return new MlxArray[] {keys[0], keys[1], keys[2], values[0], values[1], values[2]};
        }
        MlxArray[] out = new MlxArray[6];
        for (int i = 0; i < 3; i++) {
            out[i] = prefix(keys[i], offset);
        }
        for (int i = 0; i < 3; i++) {
            out[3 + i] = prefix(values[i], offset);
        }
        return out;
    }

    /** The six buffers (keys' triple then values'), for evaluating the cache state. */
    @Override
    public MlxArray[] state() {
        return new MlxArray[] {keys[0], keys[1], keys[2], values[0], values[1], values[2]};
    }

    @Override
    public boolean isEmpty() {
        return keys == null;
    }

    /** {@code init_quant(dim)}: packed uint32 words, then scales and biases in the keys' dtype. */
    private MlxArray[] initQuant(int b, int heads, int steps, int dim, int elPerInt, Dtype dtype) {
        return new MlxArray[] {
            Mlx.zeros(new int[] {b, heads, steps, dim / elPerInt}, Dtype.UINT32),
            Mlx.zeros(new int[] {b, heads, steps, dim / groupSize}, dtype),
            Mlx.zeros(new int[] {b, heads, steps, dim / groupSize}, dtype)
        };
    }

    /** {@code expand_quant} of each array: concatenate zeros of {@code steps} positions on axis -2. */
    private static MlxArray[] expandAll(MlxArray[] xs, int b, int heads, int steps) {
        MlxArray[] out = new MlxArray[3];
        for (int i = 0; i < 3; i++) {
            MlxArray x = xs[i];
            MlxArray zeros = Mlx.zeros(new int[] {b, heads, steps, x.dim(-1)}, x.dtype());
            out[i] = Mlx.concatenate(-2, x, zeros);
        }
        return out;
    }

    private static MlxArray[] prefixAll(MlxArray[] xs, int length) {
        MlxArray[] out = new MlxArray[3];
        for (int i = 0; i < 3; i++) {
            out[i] = prefix(xs[i], length);
        }
        return out;
    }

    private static MlxArray prefix(MlxArray a, int length) {
        return Mlx.slice(
                a, new int[] {0, 0, 0, 0}, new int[] {a.dim(0), a.dim(1), length, a.dim(3)}, new int[] {1, 1, 1, 1});
    }

    private static MlxArray[] detachAll(MlxArray[] xs) {
        for (MlxArray x : xs) {
            x.detach();
        }
        return xs;
    }

    /** Installs the new six arrays (detaching them) and frees those they supersede. */
    private void replace(MlxArray[] k, MlxArray[] v) {
        MlxArray[] oldK = keys;
        MlxArray[] oldV = values;
        keys = detachAll(k);
        values = detachAll(v);
        // MLX's graph holds its own references, so dropping ours after building on them is safe.
        if (oldK != null) {
            for (int i = 0; i < 3; i++) {
                if (oldK[i] != keys[i]) {
                    oldK[i].close();
                }
                if (oldV[i] != values[i]) {
                    oldV[i].close();
                }
            }
        }
    }

    @Override
    public void close() {
        if (keys != null) {
            for (int i = 0; i < 3; i++) {
                keys[i].close();
                values[i].close();
            }
            keys = null;
            values = null;
        }
        offset = 0;
    }
    /**
     * mlx-lm's {@code maybe_quantize_kv_cache}: every full-precision layer cache whose offset is at
     * least {@code q.quantizedKvStart()} is replaced in {@code cache} by its {@code
     * to_quantized(group_size, bits)} copy and freed, as Python drops it.
     */
    public static void maybeQuantize(KvQuantization q, KvCache[] cache) {
        for (int i = 0; i < cache.length; i++) {
            if (cache[i] instanceof DenseKvCache dense && dense.offset() >= q.quantizedKvStart()) {
                cache[i] = dense.toQuantized(q.groupSize(), q.bits());
                dense.close();
            }
        }
    }
}
