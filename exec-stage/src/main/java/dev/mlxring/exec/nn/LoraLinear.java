package dev.mlxring.exec.nn;

import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * mlx-lm's {@code LoRALinear} (tuner/lora.py) in eval mode, op for op:
 * {@code y = linear(x); z = (x @ lora_a) @ lora_b; y + (scale * z).astype(x.dtype)} (dropout is
 * the identity once the model is in eval mode, as {@code load} leaves it).
 *
 * @param base the adapted layer (dense or quantized, with its bias)
 * @param loraA {@code [input_dims, rank]}
 * @param loraB {@code [rank, output_dims]}
 * @param scale {@code lora_parameters.scale}, a Python float: a scalar of z's dtype
 */
public record LoraLinear(Linear base, MlxArray loraA, MlxArray loraB, double scale) implements Linear {
    @Override
    public MlxArray forward(MlxArray x) {
        return addDelta(x, base.forward(x));
    }

    /** The layer's output given {@code y}, the base layer's output for {@code x}: {@code y + (scale * z).astype(x.dtype)}. */
    MlxArray addDelta(MlxArray x, MlxArray y) {
        MlxArray z = Mlx.matmul(Mlx.matmul(x, loraA), loraB);
        return Mlx.add(y, Mlx.astype(Mlx.multiply(Mlx.scalar(scale, z.dtype()), z), x.dtype()));
    }
}
