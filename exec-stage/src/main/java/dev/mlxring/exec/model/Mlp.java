package dev.mlxring.exec.model;

import dev.mlxring.exec.nn.Linear;
import dev.mlxring.exec.nn.Parameters;
import dev.mlxring.exec.nn.TensorShard;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/** The gated MLP of llama/qwen: {@code down_proj(swiglu(gate_proj(x), up_proj(x)))}. */
record Mlp(Linear gateProj, Linear downProj, Linear upProj, CpuKernels kernels) implements DecoderModel.FeedForward {
    static Mlp load(ModelConfig config, Parameters params, String path, int dim, int hiddenDim) {
        return new Mlp(
                Linear.load(config, params, path + ".gate_proj", dim),
                Linear.load(config, params, path + ".down_proj", hiddenDim),
                Linear.load(config, params, path + ".up_proj", dim),
                params.kernels());
    }

    /** This rank's part, as mlx-lm's {@code shard}: gate and up all-to-sharded, down sharded-to-all. */
    static Mlp load(ModelConfig config, Parameters params, String path, int dim, int hiddenDim, TensorShard shard) {
        if (shard == null) {
            return load(config, params, path, dim, hiddenDim);
        }
        // shard() converts gate, down, up in that order (the order of their random draws).
        Linear gate = shard.allToSharded(config, params, path + ".gate_proj", dim);
        Linear down = shard.shardedToAll(config, params, path + ".down_proj", hiddenDim);
        Linear up = shard.allToSharded(config, params, path + ".up_proj", dim);
        return new Mlp(gate, down, up, params.kernels());
    }

    @Override
    public MlxArray forward(MlxArray x) {
        return downProj.forward(Mlx.swiglu(kernels, gateProj.forward(x), upProj.forward(x)));
    }
}
