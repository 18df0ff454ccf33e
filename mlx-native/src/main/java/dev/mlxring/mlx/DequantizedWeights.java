package dev.mlxring.mlx;

import static dev.mlxring.mlx.NativeLibrary.ADDR;
import static dev.mlxring.mlx.NativeLibrary.INT;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The exact quantized matmul over weights kept dequantized ({@code --dequantized-weights};
 * {@code mlxr_dequantized.cpp}): an opt-in trade of memory for speed that keeps mlx-lm's bytes.
 * MLX's quantized matmul computes every weight as {@code T(T(scale * q) + bias)} at every call
 * before {@code t = T(x * w)} and {@code sum = T(sum + t)}; a {@linkplain #layout layout} holds
 * the first result, in the activations' half type (2 bytes a weight: four times 4-bit weights),
 * and the kernels over it run only the rest, the same arithmetic in the same order. It applies
 * where the activations are float16 or bfloat16 and of the group parameters' dtype (most
 * mlx-community checkpoints); everything else takes the packed kernels ({@link CpuKernels#NATIVE})
 * as before. Stateless; thread-safe.
 */
public final class DequantizedWeights {
    private DequantizedWeights() {}

    private static final MethodHandle LAYOUT =
            NativeLibrary.handle("mlxr_dequantized_layout", FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR, INT, INT));
    private static final MethodHandle QUANTIZED_MATMUL = NativeLibrary.handle(
            "mlxr_dequantized_quantized_matmul",
            FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR, ADDR, ADDR, INT, INT, INT));
    private static final MethodHandle COMPUTES =
            NativeLibrary.handle("mlxr_is_dequantized_quantized_matmul", FunctionDescriptor.of(INT, ADDR));
    private static final MethodHandle EXACT_COVERS =
            NativeLibrary.handle("mlxr_native_kernels_cover", FunctionDescriptor.of(INT, INT, INT));

    /**
     * Whether a layout can be made for these group parameters here: biases present, scales and
     * biases both float16 or both bfloat16, a width and group size the exact kernels cover, MLX's
     * default device a CPU that runs them.
     */
    public static boolean covers(MlxArray scales, MlxArray biases, int bits, int groupSize) {
        if (biases == null
                || scales.dtype() != biases.dtype()
                || (scales.dtype() != Dtype.FLOAT16 && scales.dtype() != Dtype.BFLOAT16)) {
            return false;
        }
        try {
            return (int) EXACT_COVERS.invokeExact(bits, groupSize) != 0
                    && Mlx.nativeKernelsAvailable()
                    && !Mlx.defaultDeviceIsGpu();
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }

    /**
     * The dequantized layout of an affine-quantized weight ({@link #covers covered} parameters),
     * of the scales' dtype and shape {@code [ceil(N / 32), K, 32]}. Lazy: it is computed by the
     * first graph evaluated with it (and then holds {@code 2 * N * K} bytes until closed), so a
     * model whose activations never match its dtype never spends the memory.
     */
    public static MlxArray layout(MlxArray w, MlxArray scales, MlxArray biases, int groupSize, int bits) {
        try {
            return MlxArray.own(
                    (MemorySegment) LAYOUT.invokeExact(w.handle(), scales.handle(), biases.handle(), groupSize, bits));
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }

    /**
     * {@code quantized_matmul(x, w, scales, biases, transpose=True)} (affine) with MLX's
     * validation, promotion and output: by the kernels over {@code layout} (made by
     * {@link #layout} from these {@code w}, {@code scales}, {@code biases}) where {@code x} is of
     * its dtype, else as {@link Mlx#nativeQuantizedMatmul}.
     */
    public static MlxArray quantizedMatmul(
            MlxArray x, MlxArray w, MlxArray scales, MlxArray biases, MlxArray layout, int groupSize, int bits) {
        return quantizedMatmul(x, w, scales, biases, layout, groupSize, bits, 0);
    }

    /** As {@link #quantizedMatmul(MlxArray, MlxArray, MlxArray, MlxArray, MlxArray, int, int)} by {@code isa}'s kernels. */
    public static MlxArray quantizedMatmul(
            MlxArray x,
            MlxArray w,
            MlxArray scales,
            MlxArray biases,
            MlxArray layout,
            int groupSize,
            int bits,
            KernelIsa isa) {
        return quantizedMatmul(x, w, scales, biases, layout, groupSize, bits, isa.code);
    }

    private static MlxArray quantizedMatmul(
            MlxArray x,
            MlxArray w,
            MlxArray scales,
            MlxArray biases,
            MlxArray layout,
            int groupSize,
            int bits,
            int isa) {
        try {
            return MlxArray.own((MemorySegment) QUANTIZED_MATMUL.invokeExact(
                    x.handle(),
                    w.handle(),
                    scales.handle(),
                    MlxArray.handleOrNull(biases),
                    layout.handle(),
                    groupSize,
                    bits,
                    isa));
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }

    /** Whether {@code a} is (unevaluated) output of the kernels over a layout. */
    public static boolean computes(MlxArray a) {
        try {
            return (int) COMPUTES.invokeExact(a.handle()) != 0;
        } catch (Throwable t) {
            throw Shim.rethrow(t);
        }
    }
}
