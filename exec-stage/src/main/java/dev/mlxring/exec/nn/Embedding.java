package dev.mlxring.exec.nn;

import dev.mlxring.exec.model.ModelConfig;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/** {@code nn.Embedding} / {@code nn.QuantizedEmbedding}, including {@code as_linear} for tied heads. */
public interface Embedding {
    MlxArray forward(MlxArray ids);

    MlxArray asLinear(MlxArray x);

    static Embedding load(ModelConfig config, Parameters params, String path, int dims) {
        QuantSpec q = QuantSpec.resolve(config, params, path, dims);
        params.countInitRandomDraws(q != null ? 2 : 1);
        if (q == null) {
            return new Dense(params.get(path + ".weight", dims, "the embedding size"), params.kernels());
        }
        MlxArray weight = params.get(path + ".weight");
        MlxArray scales = params.get(path + ".scales");
        MlxArray biases = params.optional(path + ".biases");
        return new Quantized(weight, scales, biases, q, q.dequantizedLayout(params, weight, scales, biases));
    }

    /** {@code as_linear} ({@code x @ W.T}) through {@code kernels}: the native dense kernel or MLX's matmul. */
    record Dense(MlxArray weight, CpuKernels kernels) implements Embedding {
        @Override
        public MlxArray forward(MlxArray ids) {
            return Mlx.take(weight, ids, 0);
        }

        @Override
        public MlxArray asLinear(MlxArray x) {
            return kernels.linear(x, weight);
        }
    }

    /**
     * The lookup dequantizes the rows it takes; {@code as_linear} goes through the weight's
     * dequantized {@code layout} where there is one ({@link QuantSpec#dequantizedLayout}).
     */
    record Quantized(MlxArray weight, MlxArray scales, MlxArray biases, QuantSpec spec, MlxArray layout)
            implements Embedding {
        @Override
        public MlxArray forward(MlxArray ids) {
            return Mlx.dequantize(
                    Mlx.take(weight, ids, 0),
                    Mlx.take(scales, ids, 0),
                    biases == null ? null : Mlx.take(biases, ids, 0),
                    spec.groupSize(),
                    spec.bits());
        }

        @Override
        public MlxArray asLinear(MlxArray x) {
            return spec.matmul(x, weight, scales, biases, layout);
        }
    }
}
