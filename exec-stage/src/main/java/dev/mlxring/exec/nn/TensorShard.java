package dev.mlxring.exec.nn;

import dev.mlxring.exec.model.ModelConfig;
import dev.mlxring.exec.model.ModelLoadException;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Group;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * This rank's part of a tensor-parallel model: mlx.nn's {@code shard_linear} over a
 * distributed {@link Group}, as mlx-lm's {@code Model.shard(group)} applies it.
 *
 * <ul>
 *   <li>{@link #allToSharded} ({@code AllToShardedLinear}): the rank keeps its block of output
 *       rows of the weight (and of the quantized scales and biases, axis 0) and of the bias
 *       (axis -1); the forward is the plain linear's, giving this rank's slice of the outputs.</li>
 *   <li>{@link #shardedToAll} ({@code ShardedToAllLinear}): the rank keeps its block of input
 *       columns of the weight, scales and biases (axis -1) and the whole bias; the forward is
 *       {@code x @ W.T} (or {@code quantized_matmul}), then {@code all_sum} over the group, then
 *       {@code + bias}: the bias is added once, after the sum.</li>
 * </ul>
 * Each block is {@code mx.contiguous(mx.split(w, N, axis)[rank])}. The full parameter is
 * replaced in {@link Parameters} by its block (the full array is released), so only the blocks
 * are evaluated and kept. Immutable; the group is shared by every layer of the model.
 */
public final class TensorShard {
    /** Marks mlx's {@code _all_to_sharded} axis rule, {@code max(ndim - 2, 0)}. */
    private static final int OUTPUT_AXIS = Integer.MIN_VALUE;

    private final Group group;

    public TensorShard(Group group) {
        this.group = group;
    }

    public int rank() {
        return group.rank();
    }

    public int size() {
        return group.size();
    }

    public Group group() {
        return group;
    }

    /**
     * {@code n} divided by the group size ({@code n_heads //= N}); refuses a count the group does
     * not divide, naming it (mlx-lm would fail later with a shape error).
     */
    public int divide(String what, int n) {
        if (n % size() != 0) {
            throw new ModelLoadException(
                    what + " (" + n + ") is not divisible by the " + size() + " ranks of the tensor-parallel group");
        }
        return n / size();
    }

    /** {@code shard_linear(module, "all-to-sharded", group)} of the linear at {@code path}. */
    public Linear allToSharded(ModelConfig config, Parameters params, String path, int inDims) {
        boolean quantized = params.has(path + ".scales");
        boolean bias = params.has(path + ".bias");
        splitOutputs(params, path);
        // AllToShardedLinear's constructor draws a uniform weight (and bias); the quantized one
        // draws its weight only (its bias starts as zeros).
        params.countInitRandomDraws(1 + (bias && !quantized ? 1 : 0));
        return Linear.load(config, params, path, inDims);
    }

    /** {@code shard_linear(module, "sharded-to-all", group)} of the linear at {@code path}. */
    public Linear shardedToAll(ModelConfig config, Parameters params, String path, int inDims) {
        boolean quantized = params.has(path + ".scales");
        splitInputs(params, path);
        // The bias stays whole and is added after the sum: load the matmul without it.
        MlxArray bias = params.remove(path + ".bias");
        params.countInitRandomDraws(1 + (bias != null ? 1 : 0) + (bias != null && !quantized ? 1 : 0));
        Linear partial = Linear.load(config, params, path, divide(path + " input features", inDims));
        if (bias == null) {
            return new ShardedToAllLinear(partial, null, group);
        }
        params.put(path + ".bias", bias);
        return new ShardedToAllLinear(partial, params.get(path + ".bias"), group);
    }

    /**
     * {@code shard_inplace(module, "all-to-sharded")} of the module at {@code path}: its weight,
     * quantized scales and biases keep this rank's block of the output axis (axis
     * {@code max(ndim - 2, 0)}: 0 for a linear, 1 for stacked experts {@code [E, out, in]}), its
     * bias the block of axis -1. The module's forward is unchanged.
     */
    public void splitOutputs(Parameters params, String path) {
        for (String p : new String[] {".weight", ".scales", ".biases"}) {
            if (p.equals(".weight") || params.has(path + p)) {
                keepBlock(params, path + p, OUTPUT_AXIS);
            }
        }
        if (params.has(path + ".bias")) {
            keepBlock(params, path + ".bias", -1);
        }
    }

    /**
     * {@code shard_inplace(module, "sharded-to-all")} of the module at {@code path}: weight,
     * scales and biases keep this rank's block of the input axis (-1); the bias stays whole (the
     * module's owner sums the ranks' outputs and must add the bias once).
     */
    public void splitInputs(Parameters params, String path) {
        for (String p : new String[] {".weight", ".scales", ".biases"}) {
            if (p.equals(".weight") || params.has(path + p)) {
                keepBlock(params, path + p, -1);
            }
        }
    }

    /**
     * {@code module.bias /= N} (gpt_oss's experts' down projection): a bias every rank adds before
     * the sum comes out once after it. {@code mx.divide} by the group size as a scalar of the
     * bias's dtype, as Python's {@code /=} with an int makes it.
     */
    public void divideBias(Parameters params, String path) {
        MlxArray bias = params.remove(path + ".bias");
        if (bias == null) {
            return;
        }
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray divided = Mlx.divide(bias, Mlx.scalar(size(), bias.dtype()));
            Mlx.eval(divided);
            params.put(path + ".bias", divided.detach());
        } finally {
            bias.close();
        }
    }

    /**
     * Replaces parameter {@code name} by this rank's block of it along {@code axis}
     * ({@code mx.contiguous(mx.split(p, N, axis)[rank])}; for a 1-d parameter, mlx-lm's
     * {@code p[n * rank : n * (rank + 1)]} with {@code n = len(p) / N}, e.g. gpt_oss's sinks).
     */
    public void keepBlock(Parameters params, String name, int axis) {
        MlxArray full = params.remove(name);
        if (full == null) {
            throw new ModelLoadException("weights are missing parameter '" + name + "'");
        }
        try {
            int ax = axis == OUTPUT_AXIS ? Math.max(full.ndim() - 2, 0) : axis < 0 ? full.ndim() + axis : axis;
            int length = full.dim(ax);
            if (length % size() != 0) {
                throw new ModelLoadException("cannot shard '" + name + "' across " + size() + " ranks: its axis " + ax
                        + " has " + length + " entries"
                        + (name.endsWith(".scales") || name.endsWith(".biases") ? " (quantization groups)" : ""));
            }
            int block = length / size();
            int[] start = new int[full.ndim()];
            int[] stop = new int[full.ndim()];
            int[] strides = new int[full.ndim()];
            for (int d = 0; d < stop.length; d++) {
                stop[d] = full.dim(d);
                strides[d] = 1;
            }
            start[ax] = rank() * block;
            stop[ax] = start[ax] + block;
            try (ArrayScope scope = ArrayScope.open()) {
                params.put(
                        name,
                        Mlx.contiguous(Mlx.slice(full, start, stop, strides)).detach());
            }
        } finally {
            full.close();
        }
    }
}
