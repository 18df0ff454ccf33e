package dev.mlxring.exec.model;

import dev.mlxring.exec.nn.Linear;
import dev.mlxring.mlx.Group;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * mlx-lm qwen3_moe.py's {@code Qwen3MoeSparseMoeBlock}: a linear router ({@code gate}), a
 * precise softmax over the experts, the top {@code k} by {@code argpartition}, their
 * probabilities (renormalized to sum to 1 with {@code norm_topk_prob}), the selected experts'
 * {@link SwitchGlu} outputs and their probability-weighted sum. Immutable.
 *
 * @param shardingGroup mlx-lm's {@code sharding_group}: with the experts sharded, the block's
 *     output is {@code all_sum}med over it (each rank holds part of every expert); null otherwise
 */
record Qwen3MoeSparseBlock(Linear gate, SwitchGlu switchMlp, int topK, boolean normTopkProb, Group shardingGroup)
        implements DecoderModel.FeedForward {
    @Override
    public MlxArray forward(MlxArray x) {
        MlxArray gates = Mlx.softmax(gate.forward(x), -1, true);
        MlxArray inds = TopK.indices(gates, topK);
        MlxArray scores = Mlx.takeAlongAxis(gates, inds, -1);
        if (normTopkProb) {
            scores = Mlx.divide(scores, Mlx.sum(scores, -1, true));
        }
        MlxArray y = switchMlp.forward(x, inds);
        // (y * scores[..., None]).sum(axis=-2).astype(y.dtype)
        MlxArray weighted = Mlx.sum(Mlx.multiply(y, Mlx.expandDims(scores, -1)), -2, false);
        MlxArray out = Mlx.astype(weighted, y.dtype());
        return shardingGroup == null ? out : shardingGroup.allSum(out);
    }
}
