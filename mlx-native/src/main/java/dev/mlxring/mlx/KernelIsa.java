package dev.mlxring.mlx;

import java.util.Optional;

/**
 * The x86 instruction set that runs the native quantized-matmul kernels ({@link CpuKernels#NATIVE}).
 * Both give the same output bytes (MLX's); the wider one is faster. By default the widest the CPU
 * has is used; the environment variable {@code MLXR_KERNEL_ISA=avx2} (read once, at the first
 * native call) forces the AVX2 kernels on an AVX-512 CPU. Immutable and thread-safe.
 */
public enum KernelIsa {
    /** AVX2 + F16C: eight float lanes. */
    AVX2(1),
    /** AVX-512 F/BW/VL (+ F16C): sixteen float lanes. */
    AVX512(2);

    /** The shim's number for it ({@code mlxr_native_quantized_matmul}'s {@code isa}). */
    final int code;

    KernelIsa(int code) {
        this.code = code;
    }

    /** Whether this CPU has the instruction set. */
    public boolean onThisCpu() {
        return Shim.nativeKernelsCpuHas(code);
    }

    /**
     * The instruction set native calls use: empty when the kernels do not run here (not x86, or
     * no AVX2/F16C). Throws {@link MlxException} naming {@code MLXR_KERNEL_ISA} when that variable
     * is invalid or names a set this CPU lacks.
     */
    public static Optional<KernelIsa> selected() {
        int code = Shim.nativeKernelsIsa();
        if (code < 0) {
            throw new MlxException(Shim.lastError());
        }
        for (KernelIsa isa : values()) {
            if (isa.code == code) {
                return Optional.of(isa);
            }
        }
        return Optional.empty();
    }
}
