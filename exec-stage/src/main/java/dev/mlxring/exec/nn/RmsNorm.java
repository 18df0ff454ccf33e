package dev.mlxring.exec.nn;

import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/** {@code nn.RMSNorm}: {@code mx.fast.rms_norm(x, weight, eps)}, evaluated by the model's {@code kernels}. */
public record RmsNorm(MlxArray weight, float eps, CpuKernels kernels) {
    public static RmsNorm load(Parameters params, String path, double eps) {
        return new RmsNorm(params.get(path + ".weight"), (float) eps, params.kernels());
    }

    public MlxArray forward(MlxArray x) {
        return Mlx.rmsNorm(kernels, x, weight, eps);
    }
}
