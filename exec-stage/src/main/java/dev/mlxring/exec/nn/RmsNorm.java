package dev.mlxring.exec.nn;

import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/** {@code nn.RMSNorm}: {@code mx.fast.rms_norm(x, weight, eps)}. */
public record RmsNorm(MlxArray weight, float eps) {
    public static RmsNorm load(Parameters params, String path, double eps) {
        return new RmsNorm(params.get(path + ".weight"), (float) eps);
    }

    public MlxArray forward(MlxArray x) {
        return Mlx.rmsNorm(x, weight, eps);
    }
}
