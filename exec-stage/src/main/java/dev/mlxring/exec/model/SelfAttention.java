package dev.mlxring.exec.model;

import dev.mlxring.exec.kv.BatchKvCache;
import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.kv.QuantizedKvCache;
import dev.mlxring.exec.nn.Linear;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.exec.nn.RmsNorm;
import dev.mlxring.exec.nn.Rope;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * {@code Attention} of mlx-lm's llama.py, qwen2.py and qwen3.py (they differ only in biases,
 * which come with the weights, and qwen3's q_norm/k_norm, applied here when present).
 */
final class SelfAttention implements AutoCloseable {
    /**
     * What {@code create_attention_mask} gives the layers of one forward: for solo caches the
     * "causal" mode or none ({@code causal}); for a {@link BatchKvCache} the boolean
     * {@code [B, 1, L, idx + L]} array and the per-row rope offsets (both in the forward's scope).
     */
    record Mask(boolean causal, MlxArray array, MlxArray offsets) {
        private static final Mask CAUSAL = new Mask(true, null, null);
        private static final Mask NONE = new Mask(false, null, null);

        static Mask solo(boolean causal) {
            return causal ? CAUSAL : NONE;
        }

        static Mask batch(MlxArray array, MlxArray offsets) {
            return new Mask(false, array, offsets);
        }
    }

    private final int nHeads;
    private final int nKvHeads;
    private final float scale;
    private final Linear qProj;
    private final Linear kProj;
    private final Linear vProj;
    private final Linear oProj;
    private final RmsNorm qNorm;
    private final RmsNorm kNorm;
    private final Rope rope;

    SelfAttention(ModelConfig config, Parameters params, String path, DecoderArgs a) {
        int dim = a.hiddenSize();
        this.nHeads = a.numAttentionHeads();
        this.nKvHeads = a.numKeyValueHeads();
        this.scale = (float) Math.pow(a.headDim(), -0.5);
        if (a.qkvBias()) {
            for (String proj : new String[] {".q_proj", ".k_proj", ".v_proj"}) {
                params.get(path + proj + ".bias");
            }
        }
        this.qProj = Linear.load(config, params, path + ".q_proj", dim);
        this.kProj = Linear.load(config, params, path + ".k_proj", dim);
        this.vProj = Linear.load(config, params, path + ".v_proj", dim);
        this.oProj = Linear.load(config, params, path + ".o_proj", nHeads * a.headDim());
        this.qNorm = a.qkNorm() ? RmsNorm.load(params, path + ".q_norm", a.rmsNormEps()) : null;
        this.kNorm = a.qkNorm() ? RmsNorm.load(params, path + ".k_norm", a.rmsNormEps()) : null;
        this.rope = Rope.initialize(a.headDim(), a.ropeTheta(), a.ropeTraditional(), a.ropeScaling(),
                a.maxPositionEmbeddings());
    }

    /** {@code mask}: mlx-lm's "causal" mode, no mask (single-token steps), or a batch's array mask. */
    MlxArray forward(MlxArray x, Mask mask, KvCache cache) {
        boolean causal = mask.causal();
        int b = x.dim(0);
        int l = x.dim(1);
        MlxArray queries = qProj.forward(x);
        MlxArray keys = kProj.forward(x);
        MlxArray values = vProj.forward(x);

        queries = Mlx.reshape(queries, b, l, nHeads, -1);
        keys = Mlx.reshape(keys, b, l, nKvHeads, -1);
        if (qNorm != null) {
            queries = qNorm.forward(queries);
            keys = kNorm.forward(keys);
        }
        queries = Mlx.transpose(queries, 0, 2, 1, 3);
        keys = Mlx.transpose(keys, 0, 2, 1, 3);
        values = Mlx.transpose(Mlx.reshape(values, b, l, nKvHeads, -1), 0, 2, 1, 3);

        MlxArray output;
        if (cache instanceof BatchKvCache batch) {
            // llama.py: rope(x, offset=cache.offset) with the offset array, then the array mask.
            queries = rope.forward(queries, mask.offsets());
            keys = rope.forward(keys, mask.offsets());
            MlxArray[] kv = batch.updateAndFetch(keys, values);
            output = Mlx.sdpa(queries, kv[0], kv[1], scale, mask.array());
            output = Mlx.reshape(Mlx.transpose(output, 0, 2, 1, 3), b, l, -1);
            return oProj.forward(output);
        }
        int offset = cache == null ? 0 : cache.offset();
        queries = rope.forward(queries, offset);
        keys = rope.forward(keys, offset);
        if (cache instanceof QuantizedKvCache q) {
            MlxArray[] kv = q.updateAndFetch(keys, values);
            output = quantizedSdpa(queries, kv, scale, causal, q.groupSize(), q.bits());
        } else {
            if (cache instanceof DenseKvCache d) {
                MlxArray[] kv = d.updateAndFetch(keys, values);
                keys = kv[0];
                values = kv[1];
            }
            output = causal
                    ? Mlx.sdpaCausal(queries, keys, values, scale)
                    : Mlx.sdpa(queries, keys, values, scale, null);
        }
        output = Mlx.reshape(Mlx.transpose(output, 0, 2, 1, 3), b, l, -1);
        return oProj.forward(output);
    }

    /**
     * mlx-lm's {@code quantized_scaled_dot_product_attention} (models/base.py), op for op:
     * {@code queries *= scale} (the Python float as a scalar of the queries' dtype); for GQA the
     * queries reshaped to {@code [B, kvHeads, repeats, L, D]} and every key/value array given an
     * axis at -3; {@code quantized_matmul(queries, *q_keys, transpose=True)}; the "causal" mode
     * materialized as {@code arange(kL - qL, kL)[:, None] >= arange(kL)[None]} and applied with
     * {@code where(mask, scores, finfo(dtype).min)} (no mask for single-token steps); precise
     * softmax; {@code quantized_matmul(scores, *q_values, transpose=False)}; reshape back.
     *
     * @param kv {@code kw, ks, kb, vw, vs, vb} as {@link QuantizedKvCache#updateAndFetch} returns them
     */
    static MlxArray quantizedSdpa(MlxArray queries, MlxArray[] kv, float scale, boolean causal, int groupSize,
            int bits) {
        int b = queries.dim(0);
        int nQHeads = queries.dim(1);
        int l = queries.dim(2);
        int d = queries.dim(3);
        int nKvHeads = kv[0].dim(-3);
        int nRepeats = nQHeads / nKvHeads;

        queries = Mlx.multiply(queries, Mlx.scalar(scale, queries.dtype()));

        MlxArray[] q = kv;
        if (nRepeats > 1) {
            queries = Mlx.reshape(queries, b, nKvHeads, nRepeats, l, d);
            q = new MlxArray[6];
            for (int i = 0; i < 6; i++) {
                q[i] = Mlx.expandDims(kv[i], -3);
            }
        }

        MlxArray scores = Mlx.quantizedMatmul(queries, q[0], q[1], q[2], true, groupSize, bits);
        if (causal) {
            int qL = scores.dim(-2);
            int kL = scores.dim(-1);
            MlxArray qIndices = Mlx.arange(kL - qL, kL, 1, Dtype.INT32);
            MlxArray kIndices = Mlx.arange(0, kL, 1, Dtype.INT32);
            MlxArray mask = Mlx.greaterEqual(Mlx.expandDims(qIndices, 1), Mlx.expandDims(kIndices, 0));
            // mask.ndim is 2: no expand_dims for the repeats axis.
            scores = Mlx.where(mask, scores, Mlx.scalar(finfoMin(scores.dtype()), scores.dtype()));
        }
        scores = Mlx.softmax(scores, -1, true);
        MlxArray out = Mlx.quantizedMatmul(scores, q[3], q[4], q[5], false, groupSize, bits);

        if (nRepeats > 1) {
            out = Mlx.reshape(out, b, nQHeads, l, d);
        }
        return out;
    }

    /** {@code mx.finfo(dtype).min} as the float mlx's Python binding makes of it. */
    private static float finfoMin(Dtype dtype) {
        return switch (dtype) {
            case FLOAT32 -> -Float.MAX_VALUE;
            case FLOAT16 -> -65504.0f;
            case BFLOAT16 -> -Float.intBitsToFloat(0x7F7F0000);
            default -> throw new IllegalArgumentException("finfo of " + dtype.mlxName);
        };
    }

    /** Whether this layer runs over a {@link BatchKvCache} (its rope takes per-row offsets). */
    boolean batchable() {
        return rope.batchable();
    }

    @Override
    public void close() {
        rope.close();
    }
}
