package dev.mlxring.mlx;

import java.util.Arrays;
import java.util.Locale;

/**
 * The numeric scheme of a model's quantized matmuls ({@code --numerics}), a fidelity tier of its
 * own (seed §3): {@link #EXACT} reproduces mlx-lm's bytes (MLX's arithmetic, on whichever
 * {@link CpuKernels}); {@link #FAST} changes bits — per group {@code s * sum(x q) + b * sum(x)}
 * with float32 fused multiply-adds ({@link FastKernels}) for affine 4- and 8-bit weights, every
 * other width or group size still exact — and answers to its own oracle, a float64 rendering of
 * the same model (docs/architecture.md, "The fast numerics tier"); {@link #FAST_Q8} is
 * {@link #FAST} with each matmul's activations rounded to 8-bit integers per block of 32 and
 * multiplied by the weights' integers exactly (llama.cpp's q8 activations; {@code
 * mlxr_fastq8.h}), answering to a float64 rendering of that arithmetic. Chosen once when a model
 * is loaded; immutable and thread-safe.
 */
public enum Numerics {
    EXACT,
    FAST,
    FAST_Q8;

    /** The default: mlx-lm's bytes. */
    public static final Numerics DEFAULT = EXACT;

    /** The lower-case name the CLI takes ({@code exact}, {@code fast}, {@code fast-q8}). */
    public String cliName() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /**
     * Whether this tier runs the fast kernels and the fast fused block ({@link #FAST} and {@link
     * #FAST_Q8}), not mlx-lm's bytes.
     */
    public boolean fast() {
        return this != EXACT;
    }

    /** The fast kernels' activations code (0 float32, 1 8-bit; {@code mlxr_fastnum.h}'s Activations). */
    public int activationsCode() {
        return this == FAST_Q8 ? 1 : 0;
    }

    /**
     * {@code quantized_matmul(x, w, scales, biases, transpose=True)} in this scheme: {@link #EXACT}
     * through {@code kernels}; {@link #FAST} and {@link #FAST_Q8} through the fast kernels where they
     * {@linkplain FastKernels#covers cover} the width and group size, else through
     * {@code kernels} (exact).
     */
    public MlxArray quantizedMatmul(
            CpuKernels kernels, MlxArray x, MlxArray w, MlxArray scales, MlxArray biases, int groupSize, int bits) {
        return fast() && FastKernels.covers(bits, groupSize)
                ? FastKernels.quantizedMatmul(x, w, scales, biases, groupSize, bits, this)
                : kernels.quantizedMatmul(x, w, scales, biases, true, groupSize, bits);
    }

    /**
     * Checks that this scheme can run with {@code kernels} on this machine: the {@link #fast} tiers need
     * {@link CpuKernels#NATIVE} and a CPU whose fast kernels run (x86-64 with AVX2, FMA, F16C);
     * otherwise throws naming {@code field} and why.
     */
    public void requireRunnable(String field, CpuKernels kernels) {
        if (!fast()) {
            return;
        }
        if (kernels != CpuKernels.NATIVE) {
            throw new IllegalArgumentException(
                    field + " " + cliName() + " needs --cpu-kernels native (got --cpu-kernels " + kernels.cliName()
                            + "; on a GPU set-up the CPU kernels do not run)");
        }
        if (FastKernels.selected().isEmpty()) {
            throw new IllegalArgumentException(field + " " + cliName()
                    + " needs an x86-64 CPU with AVX2, FMA and F16C; this one has none of its kernels");
        }
    }

    /** Parses a CLI value; an unknown one throws naming {@code field} and the accepted values. */
    public static Numerics parse(String field, String value) {
        for (Numerics n : values()) {
            if (n.cliName().equals(value)) {
                return n;
            }
        }
        throw new IllegalArgumentException(field + " must be one of "
                + Arrays.stream(values()).map(Numerics::cliName).toList() + ", got '" + value + "'");
    }
}
