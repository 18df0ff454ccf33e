package dev.mlxring.exec.kv;

import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * The {@code mask} argument mlx-lm passes to attention: none ({@code None}, single-token steps),
 * the {@code "causal"} mode, or a boolean array ({@code create_causal_mask}, which sliding
 * windows and rotating caches need). Built per forward call by {@link #create}, exactly as
 * {@code create_attention_mask(h, cache, window_size)} and the caches' {@code make_mask} decide.
 *
 * <p>Ownership: the array (when present) belongs to the caller's {@link dev.mlxring.mlx.ArrayScope}.
 *
 * <p>Several rows decoding together ({@link BatchKvCache}, {@link BatchQuantizedKvCache},
 * {@link BatchRotatingKvCache}) get the batch form: the cache's own
 * boolean {@code [B, 1, L, idx + L]} mask (left padding, per-row offsets) and the per-row rope
 * offsets, both read before any layer updates the cache.
 *
 * @param causal the "causal" mode (no array)
 * @param array the boolean mask, {@code [N, offset + N]} (or the batch's); null for the other two forms
 * @param offsets a batch's per-row rope offsets; null for a single row
 */
public record AttentionMask(boolean causal, MlxArray array, MlxArray offsets) {
    public static final AttentionMask NONE = new AttentionMask(false, null, null);
    public static final AttentionMask CAUSAL = new AttentionMask(true, null, null);

    /**
     * {@code create_attention_mask(h, cache, window_size)} for {@code n} new positions: the
     * cache's {@code make_mask}. A full-precision or quantized cache gives None for one token and
     * "causal" otherwise, or, with a window, {@code create_causal_mask(n, offset, window)}.
     *
     * @param windowSize null for none
     */
    public static AttentionMask create(int n, KvCache cache, Integer windowSize) {
        if (cache instanceof BatchKvCache batch) {
            return new AttentionMask(false, batch.makeMask(n), batch.offsets());
        }
        if (cache instanceof BatchQuantizedKvCache batch) {
            return new AttentionMask(false, batch.makeMask(n), batch.offsets());
        }
        if (cache instanceof BatchRotatingKvCache batch) {
            return new AttentionMask(false, batch.makeMask(n, windowSize), batch.offsets());
        }
        if (cache instanceof RotatingKvCache r) {
            return r.makeMask(n, windowSize);
        }
        if (windowSize != null) {
            return ofArray(createCausalMask(n, cache.offset(), windowSize));
        }
        return n == 1 ? NONE : CAUSAL;
    }

    static AttentionMask ofArray(MlxArray mask) {
        return new AttentionMask(false, mask, null);
    }

    /**
     * mlx-lm's {@code create_causal_mask(N, offset, window_size)}: query positions
     * {@code offset..offset+N-1} against key positions {@code 0..offset+N-1}, true where the key
     * is not in the future and (with a window) fewer than {@code windowSize} positions back.
     *
     * @param windowSize null for none
     */
    public static MlxArray createCausalMask(int n, int offset, Integer windowSize) {
        MlxArray rinds = Mlx.arange(0, offset + n, 1, Dtype.INT32);
        MlxArray linds = offset != 0 ? Mlx.arange(offset, offset + n, 1, Dtype.INT32) : rinds;
        linds = Mlx.expandDims(linds, 1);
        rinds = Mlx.expandDims(rinds, 0);
        MlxArray mask = Mlx.greaterEqual(linds, rinds);
        if (windowSize != null) {
            mask = Mlx.logicalAnd(mask, Mlx.less(linds, Mlx.add(rinds, Mlx.scalar(windowSize, Dtype.INT32))));
        }
        return mask;
    }
}
