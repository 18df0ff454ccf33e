package dev.mlxring.exec.model;

import dev.mlxring.exec.nn.Linear;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.exec.nn.SwitchLinear;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * mlx-lm qwen3_next.py's {@code Qwen3NextSparseMoeBlock} (also qwen3_5's mixture of experts): the
 * routed experts as qwen3_moe routes them ({@link Qwen3MoeSparseBlock}: precise softmax, top-k by
 * argpartition, optional renormalization, SwitchGLU) plus a dense shared expert whose output is
 * scaled by {@code sigmoid(shared_expert_gate(x))}. Immutable.
 */
record Qwen3NextSparseBlock(Qwen3MoeSparseBlock routed, Mlp sharedExpert, Linear sharedExpertGate)
        implements DecoderModel.FeedForward {
    /** The block's parameters under {@code path} ({@code gate}, {@code switch_mlp}, {@code shared_expert}, {@code shared_expert_gate}). */
    static Qwen3NextSparseBlock load(
            ModelConfig config,
            Parameters params,
            String path,
            int hidden,
            int moeIntermediate,
            int sharedIntermediate,
            int topK,
            boolean normTopkProb) {
        String sw = path + ".switch_mlp";
        Qwen3MoeSparseBlock routed = new Qwen3MoeSparseBlock(
                Linear.load(config, params, path + ".gate", hidden),
                new SwitchGlu(
                        SwitchLinear.load(config, params, sw + ".gate_proj", hidden),
                        SwitchLinear.load(config, params, sw + ".up_proj", hidden),
                        SwitchLinear.load(config, params, sw + ".down_proj", moeIntermediate),
                        SwitchGlu.SWIGLU),
                topK,
                normTopkProb,
                null);
        return new Qwen3NextSparseBlock(
                routed,
                Mlp.load(config, params, path + ".shared_expert", hidden, sharedIntermediate),
                Linear.load(config, params, path + ".shared_expert_gate", hidden));
    }

    @Override
    public MlxArray forward(MlxArray x) {
        MlxArray y = routed.forward(x);
        MlxArray shared = Mlx.multiply(Mlx.sigmoid(sharedExpertGate.forward(x)), sharedExpert.forward(x));
        return Mlx.add(y, shared);
    }
}
