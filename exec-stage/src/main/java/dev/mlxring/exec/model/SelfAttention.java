package dev.mlxring.exec.model;

import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.nn.Linear;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.exec.nn.RmsNorm;
import dev.mlxring.exec.nn.Rope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * {@code Attention} of mlx-lm's llama.py, qwen2.py and qwen3.py (they differ only in biases,
 * which come with the weights, and qwen3's q_norm/k_norm, applied here when present).
 */
final class SelfAttention implements AutoCloseable {
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

    /** {@code causal} is mlx-lm's "causal" mask mode; false is no mask (single-token steps). */
    MlxArray forward(MlxArray x, boolean causal, KvCache cache) {
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

        int offset = cache == null ? 0 : cache.offset();
        queries = rope.forward(queries, offset);
        keys = rope.forward(keys, offset);
        if (cache != null) {
            MlxArray[] kv = cache.updateAndFetch(keys, values);
            keys = kv[0];
            values = kv[1];
        }

        MlxArray output = causal
                ? Mlx.sdpaCausal(queries, keys, values, scale)
                : Mlx.sdpa(queries, keys, values, scale, null);
        output = Mlx.reshape(Mlx.transpose(output, 0, 2, 1, 3), b, l, -1);
        return oProj.forward(output);
    }

    @Override
    public void close() {
        rope.close();
    }
}
