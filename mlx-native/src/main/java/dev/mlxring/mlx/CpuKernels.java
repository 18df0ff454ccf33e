package dev.mlxring.mlx;

import java.util.Arrays;
import java.util.Locale;

/**
 * Which CPU kernels evaluate {@code quantized_matmul(x, W, scales, biases, transpose=True)}, the
 * dense {@code x @ W.T} of unquantized {@code Linear} layers and tied heads, and
 * MLX's {@code fast::} ops ({@code rms_norm}, {@code rope}, {@code scaled_dot_product_attention},
 * which have no CPU kernel in MLX and evaluate their fallback graphs there): {@link #MLX} is
 * MLX's own op; {@link #NATIVE} is the shim's exact x86 kernel or primitive, whose output bytes
 * equal MLX's (cases it does not cover still take MLX's op). Chosen once when a model is loaded
 * ({@code --cpu-kernels}); immutable and thread-safe.
 */
public enum CpuKernels {
    MLX,
    NATIVE;

    /** The default: the native kernels (exact, and the faster choice on x86). */
    public static final CpuKernels DEFAULT = NATIVE;

    public MlxArray quantizedMatmul(
            MlxArray x, MlxArray w, MlxArray scales, MlxArray biases, boolean transpose, int groupSize, int bits) {
        return this == NATIVE
                ? Mlx.nativeQuantizedMatmul(x, w, scales, biases, transpose, groupSize, bits)
                : Mlx.quantizedMatmul(x, w, scales, biases, transpose, groupSize, bits);
    }

    /**
     * {@code x @ W.T}, an unquantized {@code nn.Linear} without a bias (and an unquantized tied
     * head): {@link #NATIVE} is the shim's exact dense kernel where it covers the case.
     */
    public MlxArray linear(MlxArray x, MlxArray w) {
        return this == NATIVE ? Mlx.nativeLinear(x, w) : Mlx.matmul(x, Mlx.transposeAll(w));
    }

    /**
     * The choice that applies on MLX's default device: {@link #NATIVE} is a CPU kernel (its
     * primitive has no GPU evaluation, and the shim only builds it on a CPU stream), so on a GPU
     * every choice is {@link #MLX}, MLX's own GPU kernels, whose bytes are mlx-lm's on that GPU.
     */
    public CpuKernels onDefaultDevice() {
        return this == NATIVE && Mlx.defaultDeviceIsGpu() ? MLX : this;
    }

    /** The lower-case name the CLI takes ({@code mlx}, {@code native}). */
    public String cliName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Parses a CLI value; an unknown one throws naming {@code field} and the accepted values. */
    public static CpuKernels parse(String field, String value) {
        for (CpuKernels k : values()) {
            if (k.cliName().equals(value)) {
                return k;
            }
        }
        throw new IllegalArgumentException(field + " must be one of "
                + Arrays.stream(values()).map(CpuKernels::cliName).toList() + ", got '" + value + "'");
    }
}
