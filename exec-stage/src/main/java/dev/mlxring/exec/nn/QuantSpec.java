package dev.mlxring.exec.nn;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mlxring.exec.model.ModelConfig;
import dev.mlxring.exec.model.ModelLoadException;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.DequantizedWeights;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.mlx.Numerics;

/**
 * How one module's weight is packed: MLX affine quantization with {@code groupSize} and
 * {@code bits}. Resolved as mlx-lm's {@code load_model} does: a per-path entry in the config's
 * {@code quantization} wins, otherwise group size and bits are inferred from the packed shapes.
 * {@code kernels} and {@code numerics} are the model's choice of CPU kernels and numeric tier for
 * {@link #matmul}.
 */
public record QuantSpec(int groupSize, int bits, CpuKernels kernels, Numerics numerics) {

    /** {@code quantized_matmul(x, w, scales, biases, transpose=True)} with this spec's kernels and tier. */
    public MlxArray matmul(MlxArray x, MlxArray w, MlxArray scales, MlxArray biases) {
        return numerics.quantizedMatmul(kernels, x, w, scales, biases, groupSize, bits);
    }

    /**
     * {@link #matmul} through {@code layout}, the weight's {@link #dequantizedLayout} (null: as
     * {@link #matmul}). Same bytes either way.
     */
    public MlxArray matmul(MlxArray x, MlxArray w, MlxArray scales, MlxArray biases, MlxArray layout) {
        return layout == null
                ? matmul(x, w, scales, biases)
                : DequantizedWeights.quantizedMatmul(x, w, scales, biases, layout, groupSize, bits);
    }

    /**
     * With {@code --dequantized-weights} on the exact tier and the native kernels, where
     * {@link DequantizedWeights#covers} the group parameters: the weight's dequantized layout,
     * lazy (made by the first forward pass whose activations are of its dtype, never made
     * otherwise) and owned by {@code params}. Null where none applies.
     */
    public MlxArray dequantizedLayout(Parameters params, MlxArray w, MlxArray scales, MlxArray biases) {
        if (!params.dequantizedWeights()
                || kernels != CpuKernels.NATIVE
                || numerics != Numerics.EXACT
                || !DequantizedWeights.covers(scales, biases, bits, groupSize)) {
            return null;
        }
        try (ArrayScope scope = ArrayScope.open()) {
            return params.own(DequantizedWeights.layout(w, scales, biases, groupSize, bits)
                    .detach());
        }
    }

    /** The spec for module {@code path}, or null when its weight is not quantized. */
    public static QuantSpec resolve(ModelConfig config, Parameters params, String path, int inDims) {
        if (!params.has(path + ".scales")) {
            return null;
        }
        JsonNode quant = config.object("quantization").orElse(null);
        JsonNode entry = quant != null && quant.has(path) ? quant.get(path) : null;
        if (entry != null && entry.isBoolean() && !entry.booleanValue()) {
            throw new ModelLoadException(
                    config.file() + ": quantization disables '" + path + "' but the weights carry " + path + ".scales");
        }
        MlxArray scales = params.get(path + ".scales");
        MlxArray weight = params.get(path + ".weight");
        if (scales.dtype() == Dtype.UINT8) {
            throw new ModelLoadException(path + ": only MLX affine quantization is supported (uint8 scales found)");
        }
        // mlx-lm quantizes every layer that has scales with its own config entry or else the
        // global bits and group size (nn.quantize), then loads strictly: a shape that disagrees
        // with config.json is an error there, and here.
        JsonNode declared = entry != null && entry.isObject()
                ? entry
                : quant != null && quant.has("bits") && quant.has("group_size") ? quant : null;
        int groupSize;
        int bits;
        if (declared != null) {
            requireAffine(config, declared, path);
            groupSize = declared.path("group_size").asInt();
            bits = declared.path("bits").asInt();
        } else {
            groupSize = inDims / Math.max(1, scales.dim(-1));
            bits = weight.dim(-1) * 32 / Math.max(1, inDims);
        }
        if (groupSize < 1 || bits < 1 || inDims % groupSize != 0 || inDims * bits % 32 != 0) {
            throw new ModelLoadException(path + ": " + inDims + " inputs (config.json) do not split into " + bits
                    + "-bit groups of " + groupSize);
        }
        params.get(path + ".weight", inDims * bits / 32, bits + "-bit weights over " + inDims + " inputs");
        params.get(path + ".scales", inDims / groupSize, "groups of " + groupSize + " over " + inDims + " inputs");
        return new QuantSpec(groupSize, bits, params.kernels(), params.numerics());
    }

    private static void requireAffine(ModelConfig config, JsonNode entry, String path) {
        String mode = entry.path("mode").asText("affine");
        if (!mode.equals("affine")) {
            throw new ModelLoadException(config.file() + ": quantization mode '" + mode + "' of '" + path
                    + "' is not supported (supported: affine)");
        }
    }
}
