package dev.mlxring.mlx;

import static dev.mlxring.mlx.NativeLibrary.ADDR;
import static dev.mlxring.mlx.NativeLibrary.INT;
import static dev.mlxring.mlx.NativeLibrary.LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * The fast numerics tier's quantized matmul ({@link Numerics#FAST}; {@code mlxr_fastnum.cpp}):
 * per group, {@code s * sum(x q) + b * sum(x)} in float32 with fused multiply-adds over the
 * decoded 4- or 8-bit weights, vector lanes over K, each decoded weight shared by up to 8 rows
 * of activations. Not MLX's bytes; its oracle is a float64 rendering of the model
 * (FastNumericsOracleTest). The instruction set is chosen as for the exact kernels
 * ({@link KernelIsa}, {@code MLXR_KERNEL_ISA}), but needs FMA as well. Stateless; thread-safe.
 */
public final class FastKernels {
    private FastKernels() {}

    private static final MethodHandle QUANTIZED_MATMUL = NativeLibrary.handle(
            "mlxr_fastnum_quantized_matmul_acts",
            FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR, ADDR, INT, INT, INT, INT));
    private static final MethodHandle IS_FAST =
            NativeLibrary.handle("mlxr_is_fastnum_quantized_matmul", FunctionDescriptor.of(INT, ADDR));
    private static final MethodHandle COVERS =
            NativeLibrary.handle("mlxr_fastnum_covers", FunctionDescriptor.of(INT, INT, INT));
    private static final MethodHandle CPU_HAS =
            NativeLibrary.handle("mlxr_fastnum_cpu_has", FunctionDescriptor.of(INT, INT));
    private static final MethodHandle SELECTED = NativeLibrary.handle("mlxr_fastnum_isa", FunctionDescriptor.of(INT));
    private static final MethodHandle SET_WIDENED =
            NativeLibrary.handle("mlxr_fastq8_set_widened_params", FunctionDescriptor.of(INT, INT));
    private static final MethodHandle AHEAD_BLOCKS =
            NativeLibrary.handle("mlxr_fastq8_ahead_blocks", FunctionDescriptor.of(INT, INT));
    private static final MethodHandle WIDENED_BYTES =
            NativeLibrary.handle("mlxr_fastq8_widened_params_bytes", FunctionDescriptor.of(LONG));
    private static final MethodHandle RELEASE_WIDENED =
            NativeLibrary.handle("mlxr_fastq8_release_widened_params", FunctionDescriptor.of(LONG));

    /** Whether the fast kernels compute affine weights of {@code bits} and {@code groupSize} (4/8; 32/64/128). */
    public static boolean covers(int bits, int groupSize) {
        return call(() -> (int) COVERS.invokeExact(bits, groupSize)) != 0;
    }

    /**
     * {@code quantized_matmul(x, w, scales, biases, transpose=True)} (affine) with MLX's
     * validation, dtype promotion and output shape, evaluated by the fast kernels of the
     * {@linkplain #selected() selected} instruction set where they cover the case ({@link #covers},
     * a 2-D weight, biases, a CPU stream), else MLX's own op.
     */
    public static MlxArray quantizedMatmul(
            MlxArray x, MlxArray w, MlxArray scales, MlxArray biases, int groupSize, int bits) {
        return quantizedMatmul(x, w, scales, biases, groupSize, bits, 0, 0);
    }

    /**
     * As {@link #quantizedMatmul(MlxArray, MlxArray, MlxArray, MlxArray, int, int)} with the
     * activations as {@code tier} has them ({@link Numerics#FAST_Q8}: rounded to 8-bit integers
     * per block of 32, {@code mlxr_fastq8.h}); {@code tier} must be {@linkplain Numerics#fast fast}.
     */
    public static MlxArray quantizedMatmul(
            MlxArray x, MlxArray w, MlxArray scales, MlxArray biases, int groupSize, int bits, Numerics tier) {
        if (!tier.fast()) {
            throw new IllegalArgumentException("the fast kernels do not compute the " + tier.cliName() + " tier");
        }
        return quantizedMatmul(x, w, scales, biases, groupSize, bits, 0, tier.activationsCode());
    }

    /** As {@link #quantizedMatmul(MlxArray, MlxArray, MlxArray, MlxArray, int, int)} by {@code isa}'s kernels. */
    public static MlxArray quantizedMatmul(
            MlxArray x, MlxArray w, MlxArray scales, MlxArray biases, int groupSize, int bits, KernelIsa isa) {
        return quantizedMatmul(x, w, scales, biases, groupSize, bits, isa.code, 0);
    }

    /** As {@link #quantizedMatmul(MlxArray, MlxArray, MlxArray, MlxArray, int, int, Numerics)} by {@code isa}'s kernels. */
    public static MlxArray quantizedMatmul(
            MlxArray x,
            MlxArray w,
            MlxArray scales,
            MlxArray biases,
            int groupSize,
            int bits,
            KernelIsa isa,
            Numerics tier) {
        if (!tier.fast()) {
            throw new IllegalArgumentException("the fast kernels do not compute the " + tier.cliName() + " tier");
        }
        return quantizedMatmul(x, w, scales, biases, groupSize, bits, isa.code, tier.activationsCode());
    }

    private static MlxArray quantizedMatmul(
            MlxArray x, MlxArray w, MlxArray scales, MlxArray biases, int groupSize, int bits, int isa, int acts) {
        try {
            return MlxArray.own((MemorySegment) QUANTIZED_MATMUL.invokeExact(
                    x.handle(),
                    w.handle(),
                    scales.handle(),
                    MlxArray.handleOrNull(biases),
                    groupSize,
                    bits,
                    isa,
                    acts));
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }

    /** Whether {@code a} is (unevaluated) output of the fast kernels. */
    public static boolean isFast(MlxArray a) {
        return call(() -> (int) IS_FAST.invokeExact(a.handle())) != 0;
    }

    /** Whether this CPU runs {@code isa}'s fast kernels (the set and FMA). */
    public static boolean onThisCpu(KernelIsa isa) {
        return call(() -> (int) CPU_HAS.invokeExact(isa.code)) != 0;
    }

    /**
     * The instruction set the fast kernels use: the widest this CPU has with FMA, or the one
     * {@code MLXR_KERNEL_ISA} names; empty when they cannot run here (then {@link Numerics#FAST}
     * is refused). An invalid {@code MLXR_KERNEL_ISA} throws naming it.
     */
    public static Optional<KernelIsa> selected() {
        int code = call(() -> (int) SELECTED.invokeExact());
        if (code < 0) {
            throw new MlxException(Shim.lastError());
        }
        for (KernelIsa isa : KernelIsa.values()) {
            if (isa.code == code) {
                return Optional.of(isa);
            }
        }
        return Optional.empty();
    }

    /**
     * Turns {@link Numerics#FAST_Q8}'s widened group parameters on or off for the calls that follow
     * (on by default, off with {@code MLXR_FASTQ8_WIDE_PARAMS=0}): each weight's scales and centred
     * biases kept as floats in the kernels' column order, made on its first call, instead of
     * widened in every call. The outputs are the same bytes either way; for A/B runs and tests.
     *
     * @return whether they were on before
     */
    public static boolean widenedParams(boolean on) {
        return call(() -> (int) SET_WIDENED.invokeExact(on ? 1 : 0)) != 0;
    }

    /**
     * Sets how many blocks of columns on each block of {@link Numerics#FAST_Q8}'s kernels requests
     * the weights of while it computes (0: none; at most 64); {@code blocks < 0} only reads it.
     * By default the kernel pool's thread count, since the pool hands blocks out in order (the
     * environment's {@code MLXR_FASTQ8_AHEAD_BLOCKS} starts a process elsewhere). The outputs are
     * the same bytes at any setting; for A/B runs. Process-wide.
     *
     * @return the setting before the call
     */
    public static int q8AheadBlocks(int blocks) {
        return call(() -> (int) AHEAD_BLOCKS.invokeExact(blocks));
    }

    /** Bytes of widened group parameters held now, over every loaded fast-q8 model. */
    public static long widenedParamsBytes() {
        try {
            return (long) WIDENED_BYTES.invokeExact();
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }

    /**
     * Frees the widened group parameters of weights whose buffers are gone (a closed model's);
     * a model calls it when it closes.
     *
     * @return the bytes freed
     */
    public static long releaseWidenedParams() {
        try {
            return (long) RELEASE_WIDENED.invokeExact();
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }

    @FunctionalInterface
    private interface IntCall {
        int run() throws Throwable;
    }

    private static int call(IntCall c) {
        try {
            return c.run();
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }
}
