package dev.mlxring.ingress.cli;

import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Numerics;

/**
 * {@code --numerics exact|fast|fast-q8} of {@code serve} and {@code generate}: the numeric tier of
 * the model's quantized matmuls, resolved once at start-up. {@code exact} (the default) keeps
 * mlx-lm's bytes; {@code fast} changes them (float32 FMA kernels, held to a float64 rendering of
 * the model; docs/architecture.md, "The fast numerics tier"); {@code fast-q8} is {@code fast}
 * with each matmul's activations rounded to 8-bit integers per block of 32 (llama.cpp's q8
 * activations, held to a float64 rendering of that arithmetic). The fast tiers need {@code
 * --cpu-kernels native} and an AVX2/FMA CPU, and are refused otherwise; they are not offered
 * across tensor-parallel ranks.
 */
final class NumericsFlag {
    static final String NAME = "--numerics";
    static final Flag FLAG = Flag.valued(
            NAME,
            "exact|fast|fast-q8",
            Numerics.DEFAULT.cliName(),
            "exact: mlx-lm's bytes; fast: 4/8-bit matmuls by float32 FMA kernels, not mlx-lm's bytes (held to a"
                    + " float64 rendering); fast-q8: fast with 8-bit activations per block of 32 (llama.cpp's"
                    + " q8); the fast tiers need --cpu-kernels native and AVX2/FMA");

    private NumericsFlag() {}

    /** The flag's tier, checked against {@code kernels} (as resolved for the default device) and {@code sharded}. */
    static Numerics parse(CliArgs a, CpuKernels kernels, boolean sharded) {
        if (!a.has(NAME)) {
            return Numerics.DEFAULT;
        }
        try {
            Numerics n = Numerics.parse(NAME, a.get(NAME));
            n.requireRunnable(NAME, kernels);
            if (n.fast() && sharded) {
                throw new IllegalArgumentException(NAME + " " + n.cliName()
                        + " is not supported across tensor-parallel ranks (the ranks run the exact tier)");
            }
            return n;
        } catch (IllegalArgumentException e) {
            throw new UsageException(e.getMessage());
        }
    }

    /** The line a start-up prints when {@code n} is not mlx-lm's bytes; null for the exact tier. */
    static String notice(Numerics n) {
        return switch (n) {
            case EXACT -> null;
            case FAST ->
                "mlx-ring: --numerics fast: quantized matmuls by float32 FMA kernels; outputs are not"
                        + " mlx-lm's bytes (held to a float64 rendering of the model instead)";
            case FAST_Q8 ->
                "mlx-ring: --numerics fast-q8: quantized matmuls over 8-bit activations (llama.cpp's q8"
                        + " blocks of 32); outputs are not mlx-lm's bytes (held to a float64 rendering of that"
                        + " arithmetic instead)";
        };
    }
}
