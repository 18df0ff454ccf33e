package dev.mlxring.exec.model;

import dev.mlxring.exec.kv.AttentionMask;
import dev.mlxring.exec.kv.BatchKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.nn.Linear;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.exec.nn.RmsNorm;
import dev.mlxring.exec.nn.Rope;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.Map;

/**
 * mlx-lm's {@code Qwen3NextAttention} (qwen3_next.py, which qwen3_5.py imports): q_proj gives
 * each head its queries and an output gate side by side; q/k RMS norms per head; rope over the
 * first {@code head_dim * partial_rotary_factor} dimensions; attention over the KV cache; the
 * output multiplied by {@code sigmoid(gate)} before o_proj.
 */
final class GatedAttention implements AutoCloseable {
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

    GatedAttention(
            ModelConfig config,
            Parameters params,
            String path,
            int hidden,
            int nHeads,
            int nKvHeads,
            int headDim,
            double eps,
            int ropeDims,
            double ropeTheta,
            Map<String, Object> ropeScaling,
            int maxPositionEmbeddings) {
        this.nHeads = nHeads;
        this.nKvHeads = nKvHeads;
        this.scale = (float) Math.pow(headDim, -0.5);
        this.qProj = Linear.load(config, params, path + ".q_proj", hidden);
        this.kProj = Linear.load(config, params, path + ".k_proj", hidden);
        this.vProj = Linear.load(config, params, path + ".v_proj", hidden);
        this.oProj = Linear.load(config, params, path + ".o_proj", nHeads * headDim);
        this.qNorm = RmsNorm.load(params, path + ".q_norm", eps);
        this.kNorm = RmsNorm.load(params, path + ".k_norm", eps);
        this.rope = Rope.initialize(ropeDims, ropeTheta, false, ropeScaling, maxPositionEmbeddings, params.kernels());
        this.kernels = params.kernels();
    }

    MlxArray forward(MlxArray x, AttentionMask mask, KvCache cache) {
        int b = x.dim(0);
        int l = x.dim(1);
        // queries, gate = mx.split(q_proj(x).reshape(B, L, H, -1), 2, axis=-1)
        MlxArray qg = Mlx.reshape(qProj.forward(x), b, l, nHeads, -1);
        int half = qg.dim(3) / 2;
        MlxArray queries = Mlx.slice(qg, new int[] {0, 0, 0, 0}, new int[] {b, l, nHeads, half}, ones());
        MlxArray gate = Mlx.slice(qg, new int[] {0, 0, 0, half}, new int[] {b, l, nHeads, 2 * half}, ones());
        gate = Mlx.reshape(gate, b, l, -1);
        MlxArray keys = kProj.forward(x);
        MlxArray values = vProj.forward(x);
        queries = Mlx.transpose(qNorm.forward(queries), 0, 2, 1, 3);
        keys = Mlx.transpose(kNorm.forward(Mlx.reshape(keys, b, l, nKvHeads, -1)), 0, 2, 1, 3);
        values = Mlx.transpose(Mlx.reshape(values, b, l, nKvHeads, -1), 0, 2, 1, 3);
        MlxArray output;
        if (cache instanceof BatchKvCache bk) {
            queries = rope.forward(queries, mask.offsets());
            keys = rope.forward(keys, mask.offsets());
            MlxArray[] kv = bk.updateAndFetch(keys, values);
            output = Mlx.sdpaMergedHeads(kernels, queries, kv[0], kv[1], scale, false, mask.array(), null);
        } else {
            int offset = cache == null ? 0 : cache.offset();
            queries = rope.forward(queries, offset);
            keys = rope.forward(keys, offset);
            output = SelfAttention.attend(kernels, queries, keys, values, cache, scale, mask);
        }
        return oProj.forward(Mlx.multiply(output, Mlx.sigmoid(gate)));
    }

    private static int[] ones() {
        return new int[] {1, 1, 1, 1};
    }

    boolean batchable() {
        return rope.batchable();
    }

    @Override
    public void close() {
        rope.close();
    }
}
