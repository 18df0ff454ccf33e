package dev.mlxring.exec.nn;

import dev.mlxring.mlx.Group;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * mlx.nn's {@code ShardedToAllLinear} / {@code QuantizedShardedToAllLinear} forward:
 * {@code x @ W.T} (or {@code quantized_matmul}) over this rank's input columns, then
 * {@code all_sum} over the group, then {@code + bias} once on the summed result.
 *
 * @param partial the rank's columns of the weight, without bias
 * @param bias the whole bias, or null
 */
record ShardedToAllLinear(Linear partial, MlxArray bias, Group group) implements Linear {
    @Override
    public MlxArray forward(MlxArray x) {
        MlxArray y = group.allSum(partial.forward(x));
        return bias == null ? y : Mlx.add(y, bias);
    }
}
