package dev.mlxring.exec.nn;

import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * mlx-lm's {@code DoRALinear} (tuner/dora.py) in eval mode, op for op:
 * {@code y = x @ w.T} over the dequantized weight, {@code out = y + (scale * ((x @ lora_a) @
 * lora_b)).astype(x.dtype)}, {@code out = (m / norm(w + (scale * lora_b.T) @ lora_a.T,
 * axis=1)).astype(x.dtype) * out}, then {@code + bias}. The weight, the dequantized weight and
 * {@code m / norm(...)} do not change between calls, so they are made once at load
 * ({@code magnitudeRatio}); the bytes are those mlx-lm makes on every call.
 *
 * @param weight the base weight, dequantized where it is quantized ({@code [out, in]})
 * @param bias the base layer's bias, or null
 * @param magnitudeRatio {@code m / norm(adapted, axis=1)} ({@code [out]})
 */
public record DoraLinear(
        MlxArray weight, MlxArray bias, MlxArray loraA, MlxArray loraB, double scale, MlxArray magnitudeRatio)
        implements Linear {

    /** {@code m / norm(w + (scale * lora_b.T) @ lora_a.T, axis=1)}: the norm as MLX's, {@code sqrt(sum(a * a))}. */
    public static MlxArray magnitudeRatio(MlxArray weight, MlxArray loraA, MlxArray loraB, double scale, MlxArray m) {
        MlxArray lb = Mlx.transposeAll(loraB);
        MlxArray adapted =
                Mlx.add(weight, Mlx.matmul(Mlx.multiply(Mlx.scalar(scale, lb.dtype()), lb), Mlx.transposeAll(loraA)));
        MlxArray denom = Mlx.sqrt(Mlx.sum(Mlx.multiply(adapted, adapted), 1, false));
        return Mlx.divide(m, denom);
    }

    @Override
    public MlxArray forward(MlxArray x) {
        MlxArray y = Mlx.matmul(x, Mlx.transposeAll(weight));
        MlxArray z = Mlx.matmul(Mlx.matmul(x, loraA), loraB);
        MlxArray out = Mlx.add(y, Mlx.astype(Mlx.multiply(Mlx.scalar(scale, z.dtype()), z), x.dtype()));
        out = Mlx.multiply(Mlx.astype(magnitudeRatio, x.dtype()), out);
        return bias == null ? out : Mlx.add(out, bias);
    }
}
