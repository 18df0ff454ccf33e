package dev.mlxring.exec.model;

import dev.mlxring.exec.nn.Linear;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * mlx-lm's {@code models/qwen3_next.py} (Qwen3-Next): the hybrid decoder {@link Qwen35} builds
 * (gated delta nets between gated attention layers), with its own ModelArgs (every field
 * required but {@code norm_topk_prob}, {@code tie_word_embeddings}, {@code attention_bias},
 * {@code rope_scaling} and {@code full_attention_interval}), the delta net's input projections
 * packed per key head ({@link PackedProjections}), and on every {@code decoder_sparse_step}-th
 * layer not in {@code mlp_only_layers} a {@link Qwen3NextSparseBlock}, a dense {@link Mlp}
 * elsewhere. Weights are named as the checkpoint names them ({@code model.}, {@code lm_head}).
 */
final class Qwen3Next {
    private Qwen3Next() {}

    /**
     * {@code fix_query_key_value_ordering}: {@code in_proj_qkvz} gives, per key head, its q and k
     * ({@code dn} each) then the v and z of its {@code nv / nk} value heads; {@code in_proj_ba}
     * per key head the b then the a of those value heads.
     */
    record PackedProjections(Linear qkvz, Linear ba, int nk, int dn, int nv, int dv)
            implements GatedDeltaNet.Projections {
        @Override
        public GatedDeltaNet.Projected project(MlxArray x) {
            int b = x.dim(0);
            int s = x.dim(1);
            int r = nv / nk;
            MlxArray mixedQkvz = Mlx.reshape(qkvz.forward(x), b, s, nk, -1);
            MlxArray mixedBa = Mlx.reshape(ba.forward(x), b, s, nk, -1);
            MlxArray q = lastAxis(mixedQkvz, 0, dn);
            MlxArray k = lastAxis(mixedQkvz, dn, 2 * dn);
            MlxArray v = lastAxis(mixedQkvz, 2 * dn, 2 * dn + r * dv);
            MlxArray z = lastAxis(mixedQkvz, 2 * dn + r * dv, mixedQkvz.dim(3));
            MlxArray bOut = Mlx.reshape(lastAxis(mixedBa, 0, r), b, s, nv);
            MlxArray aOut = Mlx.reshape(lastAxis(mixedBa, r, mixedBa.dim(3)), b, s, nv);
            MlxArray qkv = Mlx.concatenate(
                    -1,
                    Mlx.reshape(q, b, s, -1),
                    Mlx.reshape(k, b, s, -1),
                    Mlx.reshape(Mlx.reshape(v, b, s, -1, dv), b, s, -1));
            return new GatedDeltaNet.Projected(qkv, Mlx.reshape(z, b, s, -1, dv), bOut, aOut);
        }

        private static MlxArray lastAxis(MlxArray x, int from, int to) {
            int n = x.ndim();
            int[] start = new int[n];
            int[] stop = x.shape();
            int[] strides = new int[n];
            java.util.Arrays.fill(strides, 1);
            start[n - 1] = from;
            stop[n - 1] = to;
            return Mlx.slice(x, start, stop, strides);
        }
    }

    /** Builds the model from {@code params} (which it then owns), as load_model + sanitize. */
    static LanguageModel build(ModelConfig c, Parameters params) {
        int hidden = c.intField("hidden_size");
        int layers = c.intField("num_hidden_layers");
        int numExperts = c.intField("num_experts");
        int topK = c.intField("num_experts_per_tok");
        int sparseStep = c.intField("decoder_sparse_step");
        int sharedIntermediate = c.intField("shared_expert_intermediate_size");
        Set<Integer> mlpOnly = Qwen3Moe.intSet(c, "mlp_only_layers");
        int moeIntermediate = c.intField("moe_intermediate_size");
        int intermediate = c.intField("intermediate_size");
        int headDim = c.intField("head_dim");
        boolean tie = c.boolField("tie_word_embeddings", false);
        boolean normTopkProb = c.boolField("norm_topk_prob", false);
        if (numExperts > 0 && sparseStep <= 0) {
            throw new ModelLoadException(
                    c.file() + ": field 'decoder_sparse_step' must be positive, got " + sparseStep);
        }
        if (numExperts > 0 && (topK <= 0 || topK > numExperts)) {
            throw new ModelLoadException(c.file() + ": field 'num_experts_per_tok' must be in [1, num_experts="
                    + numExperts + "], got " + topK);
        }
        GatedDeltaArgs g = new GatedDeltaArgs(
                hidden,
                c.intField("linear_num_key_heads"),
                c.intField("linear_num_value_heads"),
                c.intField("linear_key_head_dim"),
                c.intField("linear_value_head_dim"),
                c.intField("linear_conv_kernel_dim"),
                c.doubleField("rms_norm_eps"));
        Map<String, Object> ropeScaling = c.ropeScaling().orElse(null);
        Qwen35.HybridArgs a = new Qwen35.HybridArgs(
                "",
                hidden,
                layers,
                c.intField("num_attention_heads"),
                c.intField("num_key_value_heads"),
                headDim,
                c.doubleField("rms_norm_eps"),
                c.intField("full_attention_interval", 4),
                tie,
                c.intField("max_position_embeddings"),
                c.intField("vocab_size"),
                (int) (headDim * c.doubleField("partial_rotary_factor")),
                c.doubleField("rope_theta"),
                ropeScaling,
                g);
        sanitize(params, layers, numExperts, tie);
        return Qwen35.assemble(
                c,
                params,
                a,
                path -> new PackedProjections(
                        Linear.load(c, params, path + ".in_proj_qkvz", hidden),
                        Linear.load(c, params, path + ".in_proj_ba", hidden),
                        g.numKHeads(),
                        g.headKDim(),
                        g.numVHeads(),
                        g.headVDim()),
                (layer, path) -> !mlpOnly.contains(layer) && numExperts > 0 && (layer + 1) % sparseStep == 0
                        ? Qwen3NextSparseBlock.load(
                                c, params, path, hidden, moeIntermediate, sharedIntermediate, topK, normTopkProb)
                        : Mlp.load(c, params, path, hidden, intermediate));
    }

    /**
     * {@code Model.sanitize}: only a checkpoint with per-expert weights (the Hugging Face layout)
     * is touched: {@code mtp.} weights dropped, {@code lm_head} dropped when tied, the experts
     * stacked, conv1d weights moved to {@code [C, K, 1]} and 1 added to the norms.
     */
    private static void sanitize(Parameters params, int layers, int numExperts, boolean tie) {
        boolean perExpert = false;
        for (int l = 0; l < layers && !perExpert; l++) {
            perExpert = params.has("model.layers." + l + ".mlp.experts.0.up_proj.weight");
        }
        if (!perExpert) {
            return;
        }
        for (String name : List.copyOf(params.names())) {
            if (name.contains("mtp.")) {
                params.discard(name);
            }
        }
        if (tie && params.has("lm_head.weight")) {
            params.discard("lm_head.weight");
        }
        Qwen3Moe.stackExperts(params, layers, numExperts);
        Qwen35.fixHuggingFaceLayout(params, true);
    }
}
