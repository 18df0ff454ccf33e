package dev.mlxring.ingress.cli;

import dev.mlxring.mlx.CpuKernels;

/**
 * {@code --cpu-kernels mlx|native} of {@code serve} and {@code generate}: which CPU kernels the
 * model's quantized matmuls use, resolved once at start-up (both give the same bytes; see
 * docs/architecture.md, "CPU kernels").
 */
final class CpuKernelsFlag {
    static final String NAME = "--cpu-kernels";

    private CpuKernelsFlag() {}

    static CpuKernels parse(CliArgs a) {
        if (!a.has(NAME)) {
            return CpuKernels.DEFAULT;
        }
        try {
            return CpuKernels.parse(NAME, a.get(NAME));
        } catch (IllegalArgumentException e) {
            throw new UsageException(e.getMessage());
        }
    }
}
