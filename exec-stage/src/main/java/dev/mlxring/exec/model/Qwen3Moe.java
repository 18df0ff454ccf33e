package dev.mlxring.exec.model;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mlxring.exec.nn.Linear;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.exec.nn.SwitchLinear;
import dev.mlxring.exec.nn.TensorShard;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.HashSet;
import java.util.Set;

/**
 * mlx-lm's {@code models/qwen3_moe.py} (Qwen3-30B-A3B, Qwen3-235B-A22B, ...): qwen3's decoder
 * (q/k norms, explicit head_dim, non-traditional rope with {@code rope_theta}; qwen3_moe's
 * Attention ignores {@code rope_scaling}) whose MLP is, on every {@code decoder_sparse_step}-th
 * layer not listed in {@code mlp_only_layers}, a {@link Qwen3MoeSparseBlock} of
 * {@code num_experts} SwitchGLU experts with top-{@code num_experts_per_tok} routing, and a dense
 * {@link Mlp} elsewhere. Per-expert checkpoints are stacked as {@code sanitize} does. Every ModelArgs field is required, as in mlx-lm. The Model has no
 * {@code make_cache}, so {@code max_kv_size} gives it rotating caches.
 */
final class Qwen3Moe {
    private Qwen3Moe() {}

    /**
     * Builds the model from {@code params} (which it then owns); with a {@code shard}, this rank's
     * part as mlx-lm's {@code shard()}: qwen3's attention sharding, dense MLPs as llama's, and in
     * each mixture-of-experts block the experts' gate and up projections split by output rows, down
     * by input columns, in place ({@code shard_inplace}), the router whole, and the block's output
     * summed over the group.
     */
    static LanguageModel build(ModelConfig c, Parameters params, TensorShard shard) {
        int hidden = c.intField("hidden_size");
        DecoderArgs a = new DecoderArgs(
                hidden,
                c.intField("num_hidden_layers"),
                c.intField("intermediate_size"),
                c.intField("num_attention_heads"),
                c.intField("num_key_value_heads"),
                c.intField("head_dim"),
                c.doubleField("rms_norm_eps"),
                c.intField("vocab_size"),
                c.doubleField("rope_theta"),
                false,
                null,
                requiredBool(c, "tie_word_embeddings"),
                true,
                false,
                c.intField("max_position_embeddings"));
        int numExperts = c.intField("num_experts");
        int topK = c.intField("num_experts_per_tok");
        int sparseStep = c.intField("decoder_sparse_step");
        int moeIntermediate = c.intField("moe_intermediate_size");
        boolean normTopkProb = requiredBool(c, "norm_topk_prob");
        Set<Integer> mlpOnly = intSet(c, "mlp_only_layers");
        if (numExperts > 0 && sparseStep <= 0) {
            throw new ModelLoadException(
                    c.file() + ": field 'decoder_sparse_step' must be positive, got " + sparseStep);
        }
        if (numExperts > 0 && (topK <= 0 || topK > numExperts)) {
            throw new ModelLoadException(c.file() + ": field 'num_experts_per_tok' must be in [1, num_experts="
                    + numExperts + "], got " + topK);
        }
        stackExperts(params, a.numHiddenLayers(), numExperts);
        return DecoderModel.build(c, params, a, new DecoderModel.LayerLoader() {
            @Override
            public DecoderModel.Attention attention(String path) {
                return new SelfAttention(c, params, path, a, shard);
            }

            @Override
            public DecoderModel.FeedForward mlp(int layer, String path) {
                if (mlpOnly.contains(layer) || numExperts <= 0 || (layer + 1) % sparseStep != 0) {
                    return Mlp.load(c, params, path, hidden, a.intermediateSize(), shard);
                }
                String sw = path + ".switch_mlp";
                int downInDims = moeIntermediate;
                if (shard != null) {
                    shard.splitOutputs(params, sw + ".gate_proj");
                    shard.splitInputs(params, sw + ".down_proj");
                    shard.splitOutputs(params, sw + ".up_proj");
                    downInDims = shard.divide(sw + ".down_proj input features", moeIntermediate);
                }
                return new Qwen3MoeSparseBlock(
                        Linear.load(c, params, path + ".gate", hidden),
                        new SwitchGlu(
                                SwitchLinear.load(c, params, sw + ".gate_proj", hidden),
                                SwitchLinear.load(c, params, sw + ".up_proj", hidden),
                                SwitchLinear.load(c, params, sw + ".down_proj", downInDims),
                                SwitchGlu.SWIGLU),
                        topK,
                        normTopkProb,
                        shard == null ? null : shard.group());
            }
        });
    }

    /**
     * Model.sanitize: a checkpoint in the Hugging Face layout holds one weight per expert
     * ({@code mlp.experts.E.up_proj.weight}); they are stacked, in expert order, into
     * {@code mlp.switch_mlp.up_proj.weight} {@code [experts, out, in]} (likewise down and gate).
     */
    static void stackExperts(Parameters params, int layers, int numExperts) {
        for (int l = 0; l < layers; l++) {
            String prefix = "model.layers." + l + ".mlp";
            if (!params.has(prefix + ".experts.0.up_proj.weight")) {
                continue;
            }
            for (String n : new String[] {"up_proj", "down_proj", "gate_proj"}) {
                MlxArray[] parts = new MlxArray[numExperts];
                try (ArrayScope scope = ArrayScope.open()) {
                    MlxArray[] expanded = new MlxArray[numExperts];
                    for (int e = 0; e < numExperts; e++) {
                        String name = prefix + ".experts." + e + "." + n + ".weight";
                        parts[e] = params.remove(name);
                        if (parts[e] == null) {
                            throw new ModelLoadException("weights are missing parameter '" + name + "'");
                        }
                        expanded[e] = Mlx.expandDims(parts[e], 0);
                    }
                    // mx.stack(to_join): each expanded on a new leading axis, concatenated.
                    MlxArray stacked = Mlx.concatenate(0, expanded);
                    Mlx.eval(stacked);
                    params.put(prefix + ".switch_mlp." + n + ".weight", stacked.detach());
                } finally {
                    for (MlxArray p : parts) {
                        if (p != null) {
                            p.close();
                        }
                    }
                }
            }
        }
    }

    static boolean requiredBool(ModelConfig c, String field) {
        if (!c.has(field)) {
            throw new ModelLoadException(c.file() + ": required field '" + field + "' is missing");
        }
        return c.boolField(field, false);
    }

    static Set<Integer> intSet(ModelConfig c, String field) {
        JsonNode n = c.json().get(field);
        if (n == null || n.isNull()) {
            throw new ModelLoadException(c.file() + ": required field '" + field + "' is missing");
        }
        if (!n.isArray()) {
            throw new ModelLoadException(c.file() + ": field '" + field + "' must be a list of integers, got " + n);
        }
        Set<Integer> s = new HashSet<>();
        for (JsonNode e : n) {
            if (!e.isIntegralNumber() || !e.canConvertToInt()) {
                throw new ModelLoadException(c.file() + ": field '" + field + "' must be a list of integers, got " + n);
            }
            s.add(e.intValue());
        }
        return s;
    }
}
