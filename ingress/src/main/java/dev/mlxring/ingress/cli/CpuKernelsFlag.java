package dev.mlxring.ingress.cli;

import dev.mlxring.mlx.CpuKernels;

/**
 * {@code --cpu-kernels mlx|native} of {@code serve} and {@code generate}: which CPU kernels the
 * model's quantized matmuls use, resolved once at start-up (both give the same bytes; see
 * docs/architecture.md, "CPU kernels").
 */
final class CpuKernelsFlag {
    static final String NAME = "--cpu-kernels";
    static final Flag FLAG = Flag.valued(
            NAME,
            "native|mlx",
            CpuKernels.DEFAULT.cliName(),
            "quantized matmuls on the shim's exact native kernels or on MLX's own; both give the same bytes");

    private CpuKernelsFlag() {}

    /**
     * The flag's choice as it applies on MLX's default device: on a GPU (a {@code --backend cuda}
     * set-up) the native CPU kernels cannot run, so {@code native} becomes {@code mlx}, said once
     * on stderr.
     */
    static CpuKernels parse(CliArgs a) {
        CpuKernels asked;
        if (!a.has(NAME)) {
            asked = CpuKernels.DEFAULT;
        } else {
            try {
                asked = CpuKernels.parse(NAME, a.get(NAME));
            } catch (IllegalArgumentException e) {
                throw new UsageException(e.getMessage());
            }
        }
        CpuKernels used = asked.onDefaultDevice();
        if (used != asked) {
            System.err.println("mlx-ring: MLX's default device is the GPU: quantized matmuls use MLX's GPU kernels ("
                    + NAME + " " + asked.cliName() + " applies to the CPU backend only)");
        }
        return used;
    }
}
