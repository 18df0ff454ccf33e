package dev.mlxring.exec.nn;

import dev.mlxring.exec.model.ModelConfig;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * {@code nn.Linear} / {@code nn.QuantizedLinear}: picked by whether the weights carry scales; with
 * an adapter attached to the parameters, the LoRA or DoRA layer over it where the adapter converts
 * it ({@link LoraAdapter#adapt}).
 */
public interface Linear {
    MlxArray forward(MlxArray x);

    static Linear load(ModelConfig config, Parameters params, String path, int inDims) {
        QuantSpec q = QuantSpec.resolve(config, params, path, inDims);
        MlxArray bias = params.optional(path + ".bias");
        params.countInitRandomDraws(1 + (bias != null ? 1 : 0) + (q != null ? 1 : 0));
        if (q == null) {
            return params.adapt(
                    path,
                    new Dense(params.get(path + ".weight", inDims, "the layer's inputs"), bias, params.kernels()),
                    inDims);
        }
        MlxArray weight = params.get(path + ".weight");
        MlxArray scales = params.get(path + ".scales");
        MlxArray biases = params.optional(path + ".biases");
        return params.adapt(
                path,
                new Quantized(weight, scales, biases, bias, q, q.dequantizedLayout(params, weight, scales, biases)),
                inDims);
    }

    /**
     * {@code addmm(bias, x, W.T)} with a bias, {@code x @ W.T} without: mlx.nn.Linear's graph. The
     * latter through {@code kernels} (the native dense kernel or MLX's matmul, same bytes); addmm
     * is always MLX's.
     */
    record Dense(MlxArray weight, MlxArray bias, CpuKernels kernels) implements Linear {
        @Override
        public MlxArray forward(MlxArray x) {
            if (bias != null) {
                return Mlx.addmm(bias, x, Mlx.transposeAll(weight), 1f, 1f);
            }
            return kernels.linear(x, weight);
        }
    }

    /**
     * {@code quantized_matmul(x, W, scales, biases, transpose=True)} then {@code + bias}; through the
     * weight's dequantized {@code layout} where there is one ({@link QuantSpec#dequantizedLayout}).
     */
    record Quantized(MlxArray weight, MlxArray scales, MlxArray biases, MlxArray bias, QuantSpec spec, MlxArray layout)
            implements Linear {
        @Override
        public MlxArray forward(MlxArray x) {
            MlxArray y = spec.matmul(x, weight, scales, biases, layout);
            return bias == null ? y : Mlx.add(y, bias);
        }
    }
}
