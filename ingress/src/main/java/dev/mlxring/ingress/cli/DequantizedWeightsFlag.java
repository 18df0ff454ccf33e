package dev.mlxring.ingress.cli;

import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Numerics;

/**
 * {@code --dequantized-weights} of {@code serve} and {@code generate}: quantized layers whose
 * activations are float16 or bfloat16 also keep their weights dequantized (2 bytes a weight, made
 * on the first forward pass), which the exact kernels read instead of decoding every weight at
 * every step. Same bytes as without (mlx-lm's); a trade of memory for speed, off by default
 * (docs/architecture.md, "Dequantized weights"). Needs the native kernels and the exact tier; not
 * across tensor-parallel ranks.
 */
final class DequantizedWeightsFlag {
    static final String NAME = "--dequantized-weights";
    static final Flag FLAG = Flag.toggle(
            NAME,
            "also keep quantized weights dequantized (2 bytes a weight): same bytes, faster for float16/bfloat16"
                    + " models; needs --cpu-kernels native and --numerics exact");

    private DequantizedWeightsFlag() {}

    /** Whether the switch is given, checked against the resolved {@code kernels}, {@code numerics} and {@code sharded}. */
    static boolean parse(CliArgs a, CpuKernels kernels, Numerics numerics, boolean sharded) {
        if (!a.has(NAME)) {
            return false;
        }
        if (kernels != CpuKernels.NATIVE) {
            throw new UsageException(NAME + " needs --cpu-kernels native (got --cpu-kernels " + kernels.cliName()
                    + "; on a GPU set-up the CPU kernels do not run)");
        }
        if (numerics != Numerics.EXACT) {
            throw new UsageException(NAME + " applies to --numerics exact (got --numerics " + numerics.cliName() + ")");
        }
        if (sharded) {
            throw new UsageException(NAME + " is not supported across tensor-parallel ranks");
        }
        return true;
    }
}
