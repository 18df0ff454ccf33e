package dev.mlxring.exec.nn;

import dev.mlxring.exec.model.ModelConfig;
import dev.mlxring.exec.model.ModelLoadException;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * mlx-lm's {@code switch_layers.SwitchLinear} / {@code QuantizedSwitchLinear}: one linear layer
 * per expert, stacked into a {@code [experts, out, in]} weight, applied to each input row with the
 * expert its index names ({@code gather_mm} / {@code gather_qmm}). Quantized when the weights carry
 * scales, as mlx-lm's {@code nn.quantize} replaces a SwitchLinear whose path has them.
 * Immutable; the arrays belong to the model's {@link Parameters}.
 */
public interface SwitchLinear {
    /**
     * @param indices the expert of each row (broadcast against {@code x}'s leading axes)
     * @param sortedIndices {@code indices} are sorted (mlx-lm's sorted path for larger batches)
     */
    MlxArray forward(MlxArray x, MlxArray indices, boolean sortedIndices);

    static SwitchLinear load(ModelConfig config, Parameters params, String path, int inDims) {
        QuantSpec q = QuantSpec.resolve(config, params, path, inDims);
        MlxArray bias = params.optional(path + ".bias");
        // SwitchLinear draws its weight (uniform) in __init__; nn.quantize's to_quantized builds a
        // QuantizedSwitchLinear (bias=False), which draws once more. The zero bias draws nothing.
        params.countInitRandomDraws(1 + (q != null ? 1 : 0));
        if (q == null) {
            MlxArray weight = params.get(path + ".weight", inDims, "the experts' inputs");
            if (weight.dtype() != Dtype.FLOAT32) {
                throw new ModelLoadException(path + ".weight: unquantized experts in " + weight.dtype().mlxName
                        + " are not supported: MLX's CPU gather_mm runs float32 only (mlx-lm fails the same way, "
                        + "'[GatherMM::eval] Currently only supports float32.'); use a quantized conversion "
                        + "(mlx_lm.convert -q) or a float32 one");
            }
            return new Dense(weight, bias);
        }
        return new Quantized(
                params.get(path + ".weight"), params.get(path + ".scales"), params.optional(path + ".biases"), bias, q);
    }

    /** {@code x + expand_dims(bias[indices], -2)}, SwitchLinear's bias term. */
    private static MlxArray addBias(MlxArray x, MlxArray bias, MlxArray indices) {
        return bias == null ? x : Mlx.add(x, Mlx.expandDims(Mlx.take(bias, indices, 0), -2));
    }

    /** {@code gather_mm(x, weight.swapaxes(-1, -2), rhs_indices=indices, sorted_indices=...)}. */
    record Dense(MlxArray weight, MlxArray bias) implements SwitchLinear {
        @Override
        public MlxArray forward(MlxArray x, MlxArray indices, boolean sortedIndices) {
            MlxArray wt = Mlx.transpose(weight, 0, 2, 1);
            return addBias(Mlx.gatherMm(x, wt, null, indices, sortedIndices), bias, indices);
        }
    }

    /** {@code gather_qmm(x, weight, scales, biases, rhs_indices=indices, transpose=True, ...)}. */
    record Quantized(MlxArray weight, MlxArray scales, MlxArray biases, MlxArray bias, QuantSpec spec)
            implements SwitchLinear {
        @Override
        public MlxArray forward(MlxArray x, MlxArray indices, boolean sortedIndices) {
            MlxArray y = Mlx.gatherQmm(
                    x, weight, scales, biases, null, indices, true, spec.groupSize(), spec.bits(), sortedIndices);
            return addBias(y, bias, indices);
        }
    }
}
