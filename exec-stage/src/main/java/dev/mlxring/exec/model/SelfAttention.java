package dev.mlxring.exec.model;

import dev.mlxring.exec.kv.AttentionMask;
import dev.mlxring.exec.kv.BatchKvCache;
import dev.mlxring.exec.kv.BatchQuantizedKvCache;
import dev.mlxring.exec.kv.BatchRotatingKvCache;
import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.kv.QuantizedKvCache;
import dev.mlxring.exec.kv.RotatingKvCache;
import dev.mlxring.exec.nn.Linear;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.exec.nn.RmsNorm;
import dev.mlxring.exec.nn.Rope;
import dev.mlxring.exec.nn.TensorShard;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * {@code Attention} of mlx-lm's llama.py, qwen2.py and qwen3.py (they differ only in biases,
 * which come with the weights, and qwen3's q_norm/k_norm, applied here when present).
 */
final class SelfAttention implements DecoderModel.Attention {
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
    private final CpuKernels kernels;

    SelfAttention(ModelConfig config, Parameters params, String path, DecoderArgs a) {
        this(config, params, path, a, null);
    }

    /**
     * @param shard this rank's part of a tensor-parallel group, or null for the whole layer. As
     *     mlx-lm's {@code shard}: q/k/v all-to-sharded, o sharded-to-all, and the head counts
     *     divided by the group size.
     */
    SelfAttention(ModelConfig config, Parameters params, String path, DecoderArgs a, TensorShard shard) {
        int dim = a.hiddenSize();
        this.nHeads =
                shard == null ? a.numAttentionHeads() : shard.divide("num_attention_heads", a.numAttentionHeads());
        this.nKvHeads =
                shard == null ? a.numKeyValueHeads() : shard.divide("num_key_value_heads", a.numKeyValueHeads());
        this.scale = (float) Math.pow(a.headDim(), -0.5);
        if (a.qkvBias()) {
            for (String proj : new String[] {".q_proj", ".k_proj", ".v_proj"}) {
                params.get(path + proj + ".bias");
            }
        }
        int oInDims = a.numAttentionHeads() * a.headDim();
        if (shard == null) {
            this.qProj = Linear.load(config, params, path + ".q_proj", dim);
            this.kProj = Linear.load(config, params, path + ".k_proj", dim);
            this.vProj = Linear.load(config, params, path + ".v_proj", dim);
            this.oProj = Linear.load(config, params, path + ".o_proj", oInDims);
        } else {
            this.qProj = shard.allToSharded(config, params, path + ".q_proj", dim);
            this.kProj = shard.allToSharded(config, params, path + ".k_proj", dim);
            this.vProj = shard.allToSharded(config, params, path + ".v_proj", dim);
            this.oProj = shard.shardedToAll(config, params, path + ".o_proj", oInDims);
        }
        this.qNorm = a.qkNorm() ? RmsNorm.load(params, path + ".q_norm", a.rmsNormEps()) : null;
        this.kNorm = a.qkNorm() ? RmsNorm.load(params, path + ".k_norm", a.rmsNormEps()) : null;
        this.rope = Rope.initialize(
                a.headDim(),
                a.ropeTheta(),
                a.ropeTraditional(),
                a.ropeScaling(),
                a.maxPositionEmbeddings(),
                params.kernels());
        this.kernels = params.kernels();
    }

    /** {@code mask} as {@code create_attention_mask} made it for this call. */
    @Override
    public MlxArray forward(MlxArray x, AttentionMask mask, KvCache cache) {
        int b = x.dim(0);
        int l = x.dim(1);
        MlxArray queries = qProj.forward(x);
        MlxArray keys = kProj.forward(x);
        MlxArray values = Mlx.transpose(Mlx.reshape(vProj.forward(x), b, l, nKvHeads, -1), 0, 2, 1, 3);
        // llama.py: rope(x, offset=cache.offset), the offset array of a batch cache
        boolean batch = cache instanceof BatchKvCache
                || cache instanceof BatchRotatingKvCache
                || cache instanceof BatchQuantizedKvCache;
        int offset = cache == null || batch ? 0 : cache.offset();
        if (qNorm != null) {
            // qwen3: the norms run on [B, L, H, D], before the transpose
            queries = Mlx.transpose(qNorm.forward(Mlx.reshape(queries, b, l, nHeads, -1)), 0, 2, 1, 3);
            keys = Mlx.transpose(kNorm.forward(Mlx.reshape(keys, b, l, nKvHeads, -1)), 0, 2, 1, 3);
            queries = batch ? rope.forward(queries, mask.offsets()) : rope.forward(queries, offset);
            keys = batch ? rope.forward(keys, mask.offsets()) : rope.forward(keys, offset);
        } else {
            // the rope over each projection's [B, H, L, D] view
            queries = batch
                    ? rope.forwardHeads(queries, nHeads, mask.offsets())
                    : rope.forwardHeads(queries, nHeads, offset);
            keys = batch
                    ? rope.forwardHeads(keys, nKvHeads, mask.offsets())
                    : rope.forwardHeads(keys, nKvHeads, offset);
        }
        if (cache instanceof BatchQuantizedKvCache q) {
            // quantized rows: mlx-lm's quantized attention with the batch's array mask
            MlxArray[] kv = q.updateAndFetch(keys, values);
            MlxArray out = quantizedSdpa(queries, kv, scale, mask, q.groupSize(), q.bits());
            return oProj.forward(Mlx.reshape(Mlx.transpose(out, 0, 2, 1, 3), b, l, -1));
        }
        if (batch) {
            // then the array mask
            MlxArray[] kv = cache instanceof BatchKvCache bk
                    ? bk.updateAndFetch(keys, values)
                    : ((BatchRotatingKvCache) cache).updateAndFetch(keys, values);
            return oProj.forward(Mlx.sdpaMergedHeads(kernels, queries, kv[0], kv[1], scale, false, mask.array(), null));
        }
        return oProj.forward(attend(kernels, queries, keys, values, cache, scale, mask));
    }

    /**
     * {@code cache.update_and_fetch(keys, values)} then mlx-lm's
     * {@code scaled_dot_product_attention}: the quantized path for a quantized cache, else
     * {@code mx.fast.scaled_dot_product_attention} with the mask as given; the result with its
     * heads merged, {@code output.transpose(0, 2, 1, 3).reshape(B, L, -1)}, as o_proj takes it.
     */
    static MlxArray attend(
            CpuKernels kernels,
            MlxArray queries,
            MlxArray keys,
            MlxArray values,
            KvCache cache,
            float scale,
            AttentionMask mask) {
        if (cache instanceof QuantizedKvCache q) {
            MlxArray[] kv = q.updateAndFetch(keys, values);
            MlxArray out = quantizedSdpa(queries, kv, scale, mask, q.groupSize(), q.bits());
            return Mlx.reshape(Mlx.transpose(out, 0, 2, 1, 3), queries.dim(0), queries.dim(2), -1);
        }
        MlxArray[] kv = switch (cache) {
            case DenseKvCache d -> d.updateAndFetch(keys, values);
            case RotatingKvCache r -> r.updateAndFetch(keys, values);
            case BatchKvCache bk -> bk.updateAndFetch(keys, values);
            case BatchRotatingKvCache br -> br.updateAndFetch(keys, values);
            case null -> new MlxArray[] {keys, values};
            default -> throw new IllegalStateException("unexpected cache " + cache);
        };
        return Mlx.sdpaMergedHeads(
                kernels, queries, kv[0], kv[1], scale, mask.causal(), mask.causal() ? null : mask.array(), null);
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
    static MlxArray quantizedSdpa(
            MlxArray queries, MlxArray[] kv, float scale, AttentionMask mask, int groupSize, int bits) {
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
        MlxArray m = mask.array();
        if (mask.causal()) {
            int qL = scores.dim(-2);
            int kL = scores.dim(-1);
            MlxArray qIndices = Mlx.arange(kL - qL, kL, 1, Dtype.INT32);
            MlxArray kIndices = Mlx.arange(0, kL, 1, Dtype.INT32);
            m = Mlx.greaterEqual(Mlx.expandDims(qIndices, 1), Mlx.expandDims(kIndices, 0));
        }
        if (m != null && nRepeats > 1 && m.ndim() > 3) {
            // a batch's [B, 1, L, kL] mask gets the repeats axis
            m = Mlx.expandDims(m, -3);
        }
        if (m != null) {
            // The masks are boolean.
            scores = Mlx.where(m, scores, Mlx.scalar(finfoMin(scores.dtype()), scores.dtype()));
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
    @Override
    public boolean batchable() {
        return rope.batchable();
    }

    @Override
    public boolean batchesQuantizedKv() {
        return rope.batchable();
    }

    /**
     * This attention as the fused block reads it: its projections (q, k, v, o), head
     * counts, scale, rope and q/k norms (nulls where absent).
     */
    FusedBlock.AttentionParts fusedParts() {
        return new FusedBlock.AttentionParts(qProj, kProj, vProj, oProj, nHeads, nKvHeads, scale, rope, qNorm, kNorm);
    }

    @Override
    public void close() {
        rope.close();
    }
}
