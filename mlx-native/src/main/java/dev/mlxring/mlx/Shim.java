package dev.mlxring.mlx;

import static dev.mlxring.mlx.NativeLibrary.ADDR;
import static dev.mlxring.mlx.NativeLibrary.BOOL;
import static dev.mlxring.mlx.NativeLibrary.DOUBLE;
import static dev.mlxring.mlx.NativeLibrary.FLOAT;
import static dev.mlxring.mlx.NativeLibrary.INT;
import static dev.mlxring.mlx.NativeLibrary.LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * Raw downcalls into {@code mlxr_shim.cpp}, one per C function, same names in camelCase. Handles
 * are static finals so the JIT can inline {@code invokeExact}. Callers check results: a NULL
 * array or a non-zero int means "read {@link #lastError()}". Only {@link Mlx} and the
 * array/weights classes call this.
 */
final class Shim {
    private Shim() {}

    /** A downcall's throwable as the exception to throw (errors pass through). Also {@link DistributedShim}'s. */
    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new MlxException("native call failed: " + t);
    }

    static String lastError() {
        return lastErrorRaw().reinterpret(1 << 16).getString(0);
    }

    static void check(int rc) {
        if (rc != 0) {
            throw new MlxException(lastError());
        }
    }

    private static final MethodHandle LAST_ERROR = NativeLibrary.handle("mlxr_last_error", FunctionDescriptor.of(ADDR));
    private static final MethodHandle VERSION = NativeLibrary.handle("mlxr_version", FunctionDescriptor.of(ADDR));
    private static final MethodHandle ARRAY_FREE =
            NativeLibrary.handle("mlxr_array_free", FunctionDescriptor.ofVoid(ADDR));
    private static final MethodHandle ARRAY_FROM_BYTES =
            NativeLibrary.handle("mlxr_array_from_bytes", FunctionDescriptor.of(ADDR, ADDR, LONG, ADDR, INT, INT));
    private static final MethodHandle SCALAR =
            NativeLibrary.handle("mlxr_scalar", FunctionDescriptor.of(ADDR, DOUBLE, INT));
    private static final MethodHandle ARRAY_NDIM =
            NativeLibrary.handle("mlxr_array_ndim", FunctionDescriptor.of(INT, ADDR));
    private static final MethodHandle ARRAY_DIM =
            NativeLibrary.handle("mlxr_array_dim", FunctionDescriptor.of(INT, ADDR, INT));
    private static final MethodHandle ARRAY_DTYPE =
            NativeLibrary.handle("mlxr_array_dtype", FunctionDescriptor.of(INT, ADDR));
    private static final MethodHandle ARRAY_SIZE =
            NativeLibrary.handle("mlxr_array_size", FunctionDescriptor.of(LONG, ADDR));
    private static final MethodHandle ARRAY_NBYTES =
            NativeLibrary.handle("mlxr_array_nbytes", FunctionDescriptor.of(LONG, ADDR));
    private static final MethodHandle ARRAY_TO_BYTES =
            NativeLibrary.handle("mlxr_array_to_bytes", FunctionDescriptor.of(INT, ADDR, ADDR, LONG));
    private static final MethodHandle EVAL = NativeLibrary.handle("mlxr_eval", FunctionDescriptor.of(INT, ADDR, INT));
    private static final MethodHandle ASYNC_EVAL =
            NativeLibrary.handle("mlxr_async_eval", FunctionDescriptor.of(INT, ADDR, INT));
    private static final MethodHandle USE_NEW_DEFAULT_STREAM =
            NativeLibrary.handle("mlxr_use_new_default_stream", FunctionDescriptor.of(INT));
    private static final MethodHandle SYNCHRONIZE =
            NativeLibrary.handle("mlxr_synchronize", FunctionDescriptor.of(INT));
    private static final MethodHandle ACTIVE_MEMORY =
            NativeLibrary.handle("mlxr_active_memory", FunctionDescriptor.of(LONG));
    private static final MethodHandle PEAK_MEMORY =
            NativeLibrary.handle("mlxr_peak_memory", FunctionDescriptor.of(LONG));
    private static final MethodHandle CACHE_MEMORY =
            NativeLibrary.handle("mlxr_cache_memory", FunctionDescriptor.of(LONG));
    private static final MethodHandle RESET_PEAK_MEMORY =
            NativeLibrary.handle("mlxr_reset_peak_memory", FunctionDescriptor.ofVoid());
    private static final MethodHandle CLEAR_CACHE =
            NativeLibrary.handle("mlxr_clear_cache", FunctionDescriptor.ofVoid());
    private static final MethodHandle SET_CACHE_LIMIT =
            NativeLibrary.handle("mlxr_set_cache_limit", FunctionDescriptor.of(LONG, LONG));
    private static final MethodHandle SET_MEMORY_LIMIT =
            NativeLibrary.handle("mlxr_set_memory_limit", FunctionDescriptor.of(LONG, LONG));
    private static final MethodHandle ZEROS =
            NativeLibrary.handle("mlxr_zeros", FunctionDescriptor.of(ADDR, ADDR, INT, INT));
    private static final MethodHandle ARANGE =
            NativeLibrary.handle("mlxr_arange", FunctionDescriptor.of(ADDR, DOUBLE, DOUBLE, DOUBLE, INT));
    private static final MethodHandle ADD = NativeLibrary.handle("mlxr_add", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle SUBTRACT =
            NativeLibrary.handle("mlxr_subtract", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle MULTIPLY =
            NativeLibrary.handle("mlxr_multiply", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle DIVIDE =
            NativeLibrary.handle("mlxr_divide", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle POWER =
            NativeLibrary.handle("mlxr_power", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle MAXIMUM =
            NativeLibrary.handle("mlxr_maximum", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle MINIMUM =
            NativeLibrary.handle("mlxr_minimum", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle GREATER =
            NativeLibrary.handle("mlxr_greater", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle GREATER_EQUAL =
            NativeLibrary.handle("mlxr_greater_equal", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle LESS = NativeLibrary.handle("mlxr_less", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle EQUAL =
            NativeLibrary.handle("mlxr_equal", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle LOGICAL_AND =
            NativeLibrary.handle("mlxr_logical_and", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle FLOOR_DIVIDE =
            NativeLibrary.handle("mlxr_floor_divide", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle SUM =
            NativeLibrary.handle("mlxr_sum", FunctionDescriptor.of(ADDR, ADDR, ADDR, INT, BOOL));
    private static final MethodHandle ARGSORT =
            NativeLibrary.handle("mlxr_argsort", FunctionDescriptor.of(ADDR, ADDR, INT));
    private static final MethodHandle GATHER_MM =
            NativeLibrary.handle("mlxr_gather_mm", FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR, ADDR, BOOL));
    private static final MethodHandle GATHER_QMM = NativeLibrary.handle(
            "mlxr_gather_qmm",
            FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR, ADDR, ADDR, ADDR, BOOL, INT, INT, ADDR, BOOL));
    private static final MethodHandle MATMUL =
            NativeLibrary.handle("mlxr_matmul", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle SIGMOID = NativeLibrary.handle("mlxr_sigmoid", FunctionDescriptor.of(ADDR, ADDR));
    private static final MethodHandle TANH = NativeLibrary.handle("mlxr_tanh", FunctionDescriptor.of(ADDR, ADDR));
    private static final MethodHandle EXP = NativeLibrary.handle("mlxr_exp", FunctionDescriptor.of(ADDR, ADDR));
    private static final MethodHandle LOG = NativeLibrary.handle("mlxr_log", FunctionDescriptor.of(ADDR, ADDR));
    private static final MethodHandle NEGATIVE =
            NativeLibrary.handle("mlxr_negative", FunctionDescriptor.of(ADDR, ADDR));
    private static final MethodHandle SQRT = NativeLibrary.handle("mlxr_sqrt", FunctionDescriptor.of(ADDR, ADDR));
    private static final MethodHandle RSQRT = NativeLibrary.handle("mlxr_rsqrt", FunctionDescriptor.of(ADDR, ADDR));
    private static final MethodHandle CONTIGUOUS =
            NativeLibrary.handle("mlxr_contiguous", FunctionDescriptor.of(ADDR, ADDR));
    private static final MethodHandle WHERE =
            NativeLibrary.handle("mlxr_where", FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR));
    private static final MethodHandle ASTYPE =
            NativeLibrary.handle("mlxr_astype", FunctionDescriptor.of(ADDR, ADDR, INT));
    private static final MethodHandle ADDMM =
            NativeLibrary.handle("mlxr_addmm", FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR, FLOAT, FLOAT));
    private static final MethodHandle RESHAPE =
            NativeLibrary.handle("mlxr_reshape", FunctionDescriptor.of(ADDR, ADDR, ADDR, INT));
    private static final MethodHandle TRANSPOSE =
            NativeLibrary.handle("mlxr_transpose", FunctionDescriptor.of(ADDR, ADDR, ADDR, INT));
    private static final MethodHandle EXPAND_DIMS =
            NativeLibrary.handle("mlxr_expand_dims", FunctionDescriptor.of(ADDR, ADDR, INT));
    private static final MethodHandle SQUEEZE =
            NativeLibrary.handle("mlxr_squeeze", FunctionDescriptor.of(ADDR, ADDR, INT));
    private static final MethodHandle SLICE =
            NativeLibrary.handle("mlxr_slice", FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR, ADDR, INT));
    private static final MethodHandle SLICE_UPDATE =
            NativeLibrary.handle("mlxr_slice_update", FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR, ADDR, ADDR, INT));
    private static final MethodHandle SLICE_UPDATE_PROD = NativeLibrary.handle(
            "mlxr_slice_update_prod", FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR, ADDR, ADDR, INT));
    private static final MethodHandle CONCATENATE =
            NativeLibrary.handle("mlxr_concatenate", FunctionDescriptor.of(ADDR, ADDR, INT, INT));
    private static final MethodHandle TAKE =
            NativeLibrary.handle("mlxr_take", FunctionDescriptor.of(ADDR, ADDR, ADDR, INT));
    private static final MethodHandle ARGMAX =
            NativeLibrary.handle("mlxr_argmax", FunctionDescriptor.of(ADDR, ADDR, INT, BOOL));
    private static final MethodHandle NATIVE_ARGMAX =
            NativeLibrary.handle("mlxr_native_argmax", FunctionDescriptor.of(ADDR, ADDR, INT, BOOL));
    private static final MethodHandle LOGSUMEXP =
            NativeLibrary.handle("mlxr_logsumexp", FunctionDescriptor.of(ADDR, ADDR, ADDR, INT, BOOL));
    private static final MethodHandle NATIVE_LOGSUMEXP =
            NativeLibrary.handle("mlxr_native_logsumexp", FunctionDescriptor.of(ADDR, ADDR, ADDR, INT, BOOL));
    private static final MethodHandle SOFTMAX =
            NativeLibrary.handle("mlxr_softmax", FunctionDescriptor.of(ADDR, ADDR, ADDR, INT, BOOL));
    private static final MethodHandle QUANTIZED_MATMUL = NativeLibrary.handle(
            "mlxr_quantized_matmul", FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR, ADDR, BOOL, INT, INT, ADDR));
    private static final MethodHandle NATIVE_QUANTIZED_MATMUL = NativeLibrary.handle(
            "mlxr_native_quantized_matmul",
            FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR, ADDR, BOOL, INT, INT, ADDR, INT));
    private static final MethodHandle IS_NATIVE_QUANTIZED_MATMUL =
            NativeLibrary.handle("mlxr_is_native_quantized_matmul", FunctionDescriptor.of(INT, ADDR));
    private static final MethodHandle NATIVE_LINEAR =
            NativeLibrary.handle("mlxr_native_linear", FunctionDescriptor.of(ADDR, ADDR, ADDR, INT));
    private static final MethodHandle IS_NATIVE_LINEAR =
            NativeLibrary.handle("mlxr_is_native_linear", FunctionDescriptor.of(INT, ADDR));
    private static final MethodHandle NATIVE_KERNELS_AVAILABLE =
            NativeLibrary.handle("mlxr_native_kernels_available", FunctionDescriptor.of(INT));
    private static final MethodHandle NATIVE_KERNELS_CPU_HAS =
            NativeLibrary.handle("mlxr_native_kernels_cpu_has", FunctionDescriptor.of(INT, INT));
    private static final MethodHandle NATIVE_KERNELS_ISA =
            NativeLibrary.handle("mlxr_native_kernels_isa", FunctionDescriptor.of(INT));
    private static final MethodHandle DEFAULT_DEVICE_IS_GPU =
            NativeLibrary.handle("mlxr_default_device_is_gpu", FunctionDescriptor.of(INT));
    private static final MethodHandle NATIVE_KERNELS_THREADS =
            NativeLibrary.handle("mlxr_native_kernels_threads", FunctionDescriptor.of(INT));
    private static final MethodHandle DEQUANTIZE =
            NativeLibrary.handle("mlxr_dequantize", FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR, INT, INT, ADDR));
    private static final MethodHandle QUANTIZE =
            NativeLibrary.handle("mlxr_quantize", FunctionDescriptor.of(INT, ADDR, INT, INT, ADDR, ADDR));
    private static final MethodHandle RMS_NORM =
            NativeLibrary.handle("mlxr_rms_norm", FunctionDescriptor.of(ADDR, ADDR, ADDR, FLOAT));
    private static final MethodHandle NATIVE_RMS_NORM =
            NativeLibrary.handle("mlxr_native_rms_norm", FunctionDescriptor.of(ADDR, ADDR, ADDR, FLOAT));
    private static final MethodHandle IS_NATIVE_FAST_OP =
            NativeLibrary.handle("mlxr_is_native_fast_op", FunctionDescriptor.of(INT, ADDR));
    private static final MethodHandle LAYER_NORM =
            NativeLibrary.handle("mlxr_layer_norm", FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR, FLOAT));
    private static final MethodHandle TAKE_ALONG_AXIS =
            NativeLibrary.handle("mlxr_take_along_axis", FunctionDescriptor.of(ADDR, ADDR, ADDR, INT));
    private static final MethodHandle ROLL_ROWS_RIGHT =
            NativeLibrary.handle("mlxr_roll_rows_right", FunctionDescriptor.of(ADDR, ADDR, ADDR, INT));
    private static final MethodHandle PLACE_ROWS =
            NativeLibrary.handle("mlxr_place_rows", FunctionDescriptor.of(ADDR, ADDR, INT, ADDR, ADDR, INT));
    private static final MethodHandle ROPE_OFFSETS = NativeLibrary.handle(
            "mlxr_rope_offsets", FunctionDescriptor.of(ADDR, ADDR, INT, BOOL, BOOL, FLOAT, FLOAT, ADDR, ADDR));
    private static final MethodHandle NATIVE_ROPE_OFFSETS = NativeLibrary.handle(
            "mlxr_native_rope_offsets", FunctionDescriptor.of(ADDR, ADDR, INT, BOOL, BOOL, FLOAT, FLOAT, ADDR, ADDR));
    private static final MethodHandle ROPE = NativeLibrary.handle(
            "mlxr_rope", FunctionDescriptor.of(ADDR, ADDR, INT, BOOL, BOOL, FLOAT, FLOAT, INT, ADDR));
    private static final MethodHandle NATIVE_ROPE = NativeLibrary.handle(
            "mlxr_native_rope", FunctionDescriptor.of(ADDR, ADDR, INT, BOOL, BOOL, FLOAT, FLOAT, INT, ADDR));
    private static final MethodHandle SDPA =
            NativeLibrary.handle("mlxr_sdpa", FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR, FLOAT, ADDR, ADDR, ADDR));
    private static final MethodHandle NATIVE_SDPA = NativeLibrary.handle(
            "mlxr_native_sdpa", FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR, FLOAT, ADDR, ADDR, ADDR));
    private static final MethodHandle NATIVE_SDPA_MERGED = NativeLibrary.handle(
            "mlxr_native_sdpa_merged", FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR, FLOAT, ADDR, ADDR, ADDR));
    private static final MethodHandle NATIVE_ROPE_HEADS = NativeLibrary.handle(
            "mlxr_native_rope_heads",
            FunctionDescriptor.of(ADDR, ADDR, INT, INT, BOOL, BOOL, FLOAT, FLOAT, INT, ADDR, ADDR));
    private static final MethodHandle SWIGLU =
            NativeLibrary.handle("mlxr_swiglu", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle NATIVE_SWIGLU =
            NativeLibrary.handle("mlxr_native_swiglu", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle SWIGLU_OAI =
            NativeLibrary.handle("mlxr_swiglu_oai", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle GELU_APPROX =
            NativeLibrary.handle("mlxr_gelu_approx", FunctionDescriptor.of(ADDR, ADDR));
    private static final MethodHandle CLIP_RESIDUAL =
            NativeLibrary.handle("mlxr_clip_residual", FunctionDescriptor.of(ADDR, ADDR, ADDR));
    private static final MethodHandle CONV1D =
            NativeLibrary.handle("mlxr_conv1d", FunctionDescriptor.of(ADDR, ADDR, ADDR, INT, INT, INT, INT));
    private static final MethodHandle SILU = NativeLibrary.handle("mlxr_silu", FunctionDescriptor.of(ADDR, ADDR));
    private static final MethodHandle PRECISE_SWIGLU =
            NativeLibrary.handle("mlxr_precise_swiglu", FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR));
    private static final MethodHandle GDN_COMPUTE_G =
            NativeLibrary.handle("mlxr_gdn_compute_g", FunctionDescriptor.of(ADDR, ADDR, ADDR, ADDR));
    private static final MethodHandle GDN_STEP = NativeLibrary.handle(
            "mlxr_gdn_step", FunctionDescriptor.of(INT, ADDR, ADDR, ADDR, ADDR, ADDR, ADDR, ADDR, ADDR));
    private static final MethodHandle WEIGHTS_FREE =
            NativeLibrary.handle("mlxr_weights_free", FunctionDescriptor.ofVoid(ADDR));
    private static final MethodHandle LOAD_SAFETENSORS =
            NativeLibrary.handle("mlxr_load_safetensors", FunctionDescriptor.of(ADDR, ADDR));
    private static final MethodHandle LOAD_GGUF =
            NativeLibrary.handle("mlxr_load_gguf", FunctionDescriptor.of(ADDR, ADDR));
    private static final MethodHandle WEIGHTS_COUNT =
            NativeLibrary.handle("mlxr_weights_count", FunctionDescriptor.of(INT, ADDR));
    private static final MethodHandle WEIGHTS_NAME =
            NativeLibrary.handle("mlxr_weights_name", FunctionDescriptor.of(ADDR, ADDR, INT));
    private static final MethodHandle WEIGHTS_ARRAY =
            NativeLibrary.handle("mlxr_weights_array", FunctionDescriptor.of(ADDR, ADDR, INT));
    private static final MethodHandle WEIGHTS_META_COUNT =
            NativeLibrary.handle("mlxr_weights_meta_count", FunctionDescriptor.of(INT, ADDR));
    private static final MethodHandle WEIGHTS_META_KEY =
            NativeLibrary.handle("mlxr_weights_meta_key", FunctionDescriptor.of(ADDR, ADDR, INT));
    private static final MethodHandle WEIGHTS_META_VALUE =
            NativeLibrary.handle("mlxr_weights_meta_value", FunctionDescriptor.of(ADDR, ADDR, INT));
    private static final MethodHandle SAVE_SAFETENSORS = NativeLibrary.handle(
            "mlxr_save_safetensors", FunctionDescriptor.of(INT, ADDR, ADDR, ADDR, INT, ADDR, ADDR, INT));

    // ---- mlxr_sampling.cpp ----
    private static final MethodHandle RANDOM_KEY =
            NativeLibrary.handle("mlxr_random_key", FunctionDescriptor.of(ADDR, LONG));
    private static final MethodHandle RANDOM_SPLIT =
            NativeLibrary.handle("mlxr_random_split", FunctionDescriptor.of(INT, ADDR, ADDR));
    private static final MethodHandle GATHER =
            NativeLibrary.handle("mlxr_gather", FunctionDescriptor.of(ADDR, ADDR, ADDR, INT, ADDR, ADDR, INT));
    private static final MethodHandle SCATTER =
            NativeLibrary.handle("mlxr_scatter", FunctionDescriptor.of(ADDR, ADDR, ADDR, INT, ADDR, ADDR));
    private static final MethodHandle SCATTER_ADD =
            NativeLibrary.handle("mlxr_scatter_add", FunctionDescriptor.of(ADDR, ADDR, ADDR, INT, ADDR, ADDR));
    private static final MethodHandle BROADCAST_TO =
            NativeLibrary.handle("mlxr_broadcast_to", FunctionDescriptor.of(ADDR, ADDR, ADDR, INT));
    private static final MethodHandle ARGPARTITION =
            NativeLibrary.handle("mlxr_argpartition", FunctionDescriptor.of(ADDR, ADDR, INT, INT));
    private static final MethodHandle APPLY_TOP_K =
            NativeLibrary.handle("mlxr_apply_top_k", FunctionDescriptor.of(INT, ADDR, INT, ADDR, ADDR));
    private static final MethodHandle APPLY_MIN_P =
            NativeLibrary.handle("mlxr_apply_min_p", FunctionDescriptor.of(INT, ADDR, DOUBLE, INT, ADDR, ADDR));
    private static final MethodHandle APPLY_TOP_P =
            NativeLibrary.handle("mlxr_apply_top_p", FunctionDescriptor.of(INT, ADDR, DOUBLE, ADDR, ADDR));
    private static final MethodHandle APPLY_XTC = NativeLibrary.handle(
            "mlxr_apply_xtc", FunctionDescriptor.of(INT, ADDR, DOUBLE, DOUBLE, ADDR, INT, ADDR, ADDR));
    private static final MethodHandle CATEGORICAL_SAMPLING =
            NativeLibrary.handle("mlxr_categorical_sampling", FunctionDescriptor.of(INT, ADDR, DOUBLE, ADDR, ADDR));

    static MemorySegment lastErrorRaw() {
        try {
            return (MemorySegment) LAST_ERROR.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment version() {
        try {
            return (MemorySegment) VERSION.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void free(MemorySegment a) {
        try {
            ARRAY_FREE.invokeExact(a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment arrayFromBytes(
            MemorySegment data, long lengthInBytes, MemorySegment shape, int ndim, int dtype) {
        try {
            return (MemorySegment) ARRAY_FROM_BYTES.invokeExact(data, lengthInBytes, shape, ndim, dtype);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment scalar(double value, int dtype) {
        try {
            return (MemorySegment) SCALAR.invokeExact(value, dtype);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int ndim(MemorySegment a) {
        try {
            return (int) ARRAY_NDIM.invokeExact(a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int dim(MemorySegment a, int axis) {
        try {
            return (int) ARRAY_DIM.invokeExact(a, axis);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int dtype(MemorySegment a) {
        try {
            return (int) ARRAY_DTYPE.invokeExact(a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long size(MemorySegment a) {
        try {
            return (long) ARRAY_SIZE.invokeExact(a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long nbytes(MemorySegment a) {
        try {
            return (long) ARRAY_NBYTES.invokeExact(a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int toBytes(MemorySegment a, MemorySegment dst, long capacity) {
        try {
            return (int) ARRAY_TO_BYTES.invokeExact(a, dst, capacity);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int eval(MemorySegment arrays, int n) {
        try {
            return (int) EVAL.invokeExact(arrays, n);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Bound on first use: profiling only, so a shim built before it existed still loads. */
    private static final class ProfileEval {
        static final MethodHandle HANDLE =
                NativeLibrary.handle("mlxr_profile_eval", FunctionDescriptor.of(LONG, ADDR, INT, ADDR, LONG));
    }

    static long profileEval(MemorySegment arrays, int n, MemorySegment out, long cap) {
        try {
            return (long) ProfileEval.HANDLE.invokeExact(arrays, n, out, cap);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int asyncEval(MemorySegment arrays, int n) {
        try {
            return (int) ASYNC_EVAL.invokeExact(arrays, n);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int useNewDefaultStream() {
        try {
            return (int) USE_NEW_DEFAULT_STREAM.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int synchronize() {
        try {
            return (int) SYNCHRONIZE.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long activeMemory() {
        try {
            return (long) ACTIVE_MEMORY.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long peakMemory() {
        try {
            return (long) PEAK_MEMORY.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long cacheMemory() {
        try {
            return (long) CACHE_MEMORY.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void resetPeakMemory() {
        try {
            RESET_PEAK_MEMORY.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void clearCache() {
        try {
            CLEAR_CACHE.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long setCacheLimit(long limit) {
        try {
            return (long) SET_CACHE_LIMIT.invokeExact(limit);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long setMemoryLimit(long limit) {
        try {
            return (long) SET_MEMORY_LIMIT.invokeExact(limit);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment zeros(MemorySegment shape, int ndim, int dtype) {
        try {
            return (MemorySegment) ZEROS.invokeExact(shape, ndim, dtype);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment arange(double start, double stop, double step, int dtype) {
        try {
            return (MemorySegment) ARANGE.invokeExact(start, stop, step, dtype);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment add(MemorySegment a, MemorySegment b) {
        try {
            return (MemorySegment) ADD.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment subtract(MemorySegment a, MemorySegment b) {
        try {
            return (MemorySegment) SUBTRACT.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment multiply(MemorySegment a, MemorySegment b) {
        try {
            return (MemorySegment) MULTIPLY.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment divide(MemorySegment a, MemorySegment b) {
        try {
            return (MemorySegment) DIVIDE.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment power(MemorySegment a, MemorySegment b) {
        try {
            return (MemorySegment) POWER.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment maximum(MemorySegment a, MemorySegment b) {
        try {
            return (MemorySegment) MAXIMUM.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment minimum(MemorySegment a, MemorySegment b) {
        try {
            return (MemorySegment) MINIMUM.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment greater(MemorySegment a, MemorySegment b) {
        try {
            return (MemorySegment) GREATER.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment greaterEqual(MemorySegment a, MemorySegment b) {
        try {
            return (MemorySegment) GREATER_EQUAL.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment less(MemorySegment a, MemorySegment b) {
        try {
            return (MemorySegment) LESS.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment equal(MemorySegment a, MemorySegment b) {
        try {
            return (MemorySegment) EQUAL.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment logicalAnd(MemorySegment a, MemorySegment b) {
        try {
            return (MemorySegment) LOGICAL_AND.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment matmul(MemorySegment a, MemorySegment b) {
        try {
            return (MemorySegment) MATMUL.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment sigmoid(MemorySegment a) {
        try {
            return (MemorySegment) SIGMOID.invokeExact(a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment tanh(MemorySegment a) {
        try {
            return (MemorySegment) TANH.invokeExact(a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment exp(MemorySegment a) {
        try {
            return (MemorySegment) EXP.invokeExact(a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment log(MemorySegment a) {
        try {
            return (MemorySegment) LOG.invokeExact(a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment negative(MemorySegment a) {
        try {
            return (MemorySegment) NEGATIVE.invokeExact(a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment sqrt(MemorySegment a) {
        try {
            return (MemorySegment) SQRT.invokeExact(a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment rsqrt(MemorySegment a) {
        try {
            return (MemorySegment) RSQRT.invokeExact(a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment contiguous(MemorySegment a) {
        try {
            return (MemorySegment) CONTIGUOUS.invokeExact(a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment where(MemorySegment cond, MemorySegment x, MemorySegment y) {
        try {
            return (MemorySegment) WHERE.invokeExact(cond, x, y);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment astype(MemorySegment a, int dtype) {
        try {
            return (MemorySegment) ASTYPE.invokeExact(a, dtype);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment addmm(MemorySegment c, MemorySegment a, MemorySegment b, float alpha, float beta) {
        try {
            return (MemorySegment) ADDMM.invokeExact(c, a, b, alpha, beta);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment reshape(MemorySegment a, MemorySegment shape, int ndim) {
        try {
            return (MemorySegment) RESHAPE.invokeExact(a, shape, ndim);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment transpose(MemorySegment a, MemorySegment axes, int n) {
        try {
            return (MemorySegment) TRANSPOSE.invokeExact(a, axes, n);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment expandDims(MemorySegment a, int axis) {
        try {
            return (MemorySegment) EXPAND_DIMS.invokeExact(a, axis);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment squeeze(MemorySegment a, int axis) {
        try {
            return (MemorySegment) SQUEEZE.invokeExact(a, axis);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment slice(
            MemorySegment a, MemorySegment start, MemorySegment stop, MemorySegment strides, int ndim) {
        try {
            return (MemorySegment) SLICE.invokeExact(a, start, stop, strides, ndim);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment sliceUpdate(
            MemorySegment src,
            MemorySegment update,
            MemorySegment start,
            MemorySegment stop,
            MemorySegment strides,
            int ndim) {
        try {
            return (MemorySegment) SLICE_UPDATE.invokeExact(src, update, start, stop, strides, ndim);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment sliceUpdateProd(
            MemorySegment src,
            MemorySegment update,
            MemorySegment start,
            MemorySegment stop,
            MemorySegment strides,
            int ndim) {
        try {
            return (MemorySegment) SLICE_UPDATE_PROD.invokeExact(src, update, start, stop, strides, ndim);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment concatenate(MemorySegment arrays, int n, int axis) {
        try {
            return (MemorySegment) CONCATENATE.invokeExact(arrays, n, axis);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment take(MemorySegment a, MemorySegment indices, int axis) {
        try {
            return (MemorySegment) TAKE.invokeExact(a, indices, axis);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment takeAlongAxis(MemorySegment a, MemorySegment indices, int axis) {
        try {
            return (MemorySegment) TAKE_ALONG_AXIS.invokeExact(a, indices, axis);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment rollRowsRight(MemorySegment a, MemorySegment shifts, int rows) {
        try {
            return (MemorySegment) ROLL_ROWS_RIGHT.invokeExact(a, shifts, rows);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment placeRows(MemorySegment sources, int n, MemorySegment left, MemorySegment length, int size) {
        try {
            return (MemorySegment) PLACE_ROWS.invokeExact(sources, n, left, length, size);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment ropeOffsets(
            boolean nativeKernels,
            MemorySegment x,
            int dims,
            boolean traditional,
            boolean hasBase,
            float base,
            float scale,
            MemorySegment offsets,
            MemorySegment freqs) {
        try {
            return (MemorySegment) (nativeKernels ? NATIVE_ROPE_OFFSETS : ROPE_OFFSETS)
                    .invokeExact(x, dims, traditional, hasBase, base, scale, offsets, freqs);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment argmax(boolean nativeKernels, MemorySegment a, int axis, boolean keepdims) {
        try {
            return (MemorySegment) (nativeKernels ? NATIVE_ARGMAX : ARGMAX).invokeExact(a, axis, keepdims);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment logsumexp(
            boolean nativeKernels, MemorySegment a, MemorySegment axes, int n, boolean keepdims) {
        try {
            return (MemorySegment) (nativeKernels ? NATIVE_LOGSUMEXP : LOGSUMEXP).invokeExact(a, axes, n, keepdims);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment floorDivide(MemorySegment a, MemorySegment b) {
        try {
            return (MemorySegment) FLOOR_DIVIDE.invokeExact(a, b);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment sum(MemorySegment a, MemorySegment axes, int n, boolean keepdims) {
        try {
            return (MemorySegment) SUM.invokeExact(a, axes, n, keepdims);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment argsort(MemorySegment a, int axis) {
        try {
            return (MemorySegment) ARGSORT.invokeExact(a, axis);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment gatherMm(
            MemorySegment a,
            MemorySegment b,
            MemorySegment lhsIndices,
            MemorySegment rhsIndices,
            boolean sortedIndices) {
        try {
            return (MemorySegment) GATHER_MM.invokeExact(a, b, lhsIndices, rhsIndices, sortedIndices);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment gatherQmm(
            MemorySegment x,
            MemorySegment w,
            MemorySegment scales,
            MemorySegment biases,
            MemorySegment lhsIndices,
            MemorySegment rhsIndices,
            boolean transpose,
            int groupSize,
            int bits,
            MemorySegment mode,
            boolean sortedIndices) {
        try {
            return (MemorySegment) GATHER_QMM.invokeExact(
                    x, w, scales, biases, lhsIndices, rhsIndices, transpose, groupSize, bits, mode, sortedIndices);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment softmax(MemorySegment a, MemorySegment axes, int n, boolean precise) {
        try {
            return (MemorySegment) SOFTMAX.invokeExact(a, axes, n, precise);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment quantizedMatmul(
            MemorySegment x,
            MemorySegment w,
            MemorySegment scales,
            MemorySegment biases,
            boolean transpose,
            int groupSize,
            int bits,
            MemorySegment mode) {
        try {
            return (MemorySegment) QUANTIZED_MATMUL.invokeExact(x, w, scales, biases, transpose, groupSize, bits, mode);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment nativeQuantizedMatmul(
            MemorySegment x,
            MemorySegment w,
            MemorySegment scales,
            MemorySegment biases,
            boolean transpose,
            int groupSize,
            int bits,
            MemorySegment mode,
            int isa) {
        try {
            return (MemorySegment)
                    NATIVE_QUANTIZED_MATMUL.invokeExact(x, w, scales, biases, transpose, groupSize, bits, mode, isa);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static boolean isNativeFastOp(MemorySegment a) {
        try {
            return (int) IS_NATIVE_FAST_OP.invokeExact(a) != 0;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static boolean isNativeQuantizedMatmul(MemorySegment a) {
        try {
            return (int) IS_NATIVE_QUANTIZED_MATMUL.invokeExact(a) != 0;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment nativeLinear(MemorySegment x, MemorySegment w, int isa) {
        try {
            return (MemorySegment) NATIVE_LINEAR.invokeExact(x, w, isa);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static boolean isNativeLinear(MemorySegment a) {
        try {
            return (int) IS_NATIVE_LINEAR.invokeExact(a) != 0;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static boolean nativeKernelsAvailable() {
        try {
            return (int) NATIVE_KERNELS_AVAILABLE.invokeExact() != 0;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static boolean nativeKernelsCpuHas(int isa) {
        try {
            return (int) NATIVE_KERNELS_CPU_HAS.invokeExact(isa) != 0;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int nativeKernelsIsa() {
        try {
            return (int) NATIVE_KERNELS_ISA.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static boolean defaultDeviceIsGpu() {
        try {
            return (int) DEFAULT_DEVICE_IS_GPU.invokeExact() != 0;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int nativeKernelsThreads() {
        try {
            return (int) NATIVE_KERNELS_THREADS.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment dequantize(
            MemorySegment w, MemorySegment scales, MemorySegment biases, int groupSize, int bits, MemorySegment mode) {
        try {
            return (MemorySegment) DEQUANTIZE.invokeExact(w, scales, biases, groupSize, bits, mode);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int quantize(MemorySegment w, int groupSize, int bits, MemorySegment mode, MemorySegment out) {
        try {
            return (int) QUANTIZE.invokeExact(w, groupSize, bits, mode, out);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment rmsNorm(boolean nativeKernels, MemorySegment x, MemorySegment weight, float eps) {
        try {
            return (MemorySegment) (nativeKernels ? NATIVE_RMS_NORM : RMS_NORM).invokeExact(x, weight, eps);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment layerNorm(MemorySegment x, MemorySegment weight, MemorySegment bias, float eps) {
        try {
            return (MemorySegment) LAYER_NORM.invokeExact(x, weight, bias, eps);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment rope(
            boolean nativeKernels,
            MemorySegment x,
            int dims,
            boolean traditional,
            boolean hasBase,
            float base,
            float scale,
            int offset,
            MemorySegment freqs) {
        try {
            return (MemorySegment) (nativeKernels ? NATIVE_ROPE : ROPE)
                    .invokeExact(x, dims, traditional, hasBase, base, scale, offset, freqs);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment sdpa(
            boolean nativeKernels,
            MemorySegment q,
            MemorySegment k,
            MemorySegment v,
            float scale,
            MemorySegment maskMode,
            MemorySegment mask,
            MemorySegment sinks) {
        try {
            return (MemorySegment)
                    (nativeKernels ? NATIVE_SDPA : SDPA).invokeExact(q, k, v, scale, maskMode, mask, sinks);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment nativeSdpaMerged(
            MemorySegment q,
            MemorySegment k,
            MemorySegment v,
            float scale,
            MemorySegment maskMode,
            MemorySegment mask,
            MemorySegment sinks) {
        try {
            return (MemorySegment) NATIVE_SDPA_MERGED.invokeExact(q, k, v, scale, maskMode, mask, sinks);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment nativeRopeHeads(
            MemorySegment x,
            int heads,
            int dims,
            boolean traditional,
            boolean hasBase,
            float base,
            float scale,
            int offset,
            MemorySegment offsets,
            MemorySegment freqs) {
        try {
            return (MemorySegment) NATIVE_ROPE_HEADS.invokeExact(
                    x, heads, dims, traditional, hasBase, base, scale, offset, offsets, freqs);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment swiglu(boolean nativeKernels, MemorySegment gate, MemorySegment x) {
        try {
            return (MemorySegment) (nativeKernels ? NATIVE_SWIGLU : SWIGLU).invokeExact(gate, x);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment swigluOai(MemorySegment gate, MemorySegment x) {
        try {
            return (MemorySegment) SWIGLU_OAI.invokeExact(gate, x);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment geluApprox(MemorySegment x) {
        try {
            return (MemorySegment) GELU_APPROX.invokeExact(x);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment clipResidual(MemorySegment x, MemorySegment y) {
        try {
            return (MemorySegment) CLIP_RESIDUAL.invokeExact(x, y);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment conv1d(MemorySegment x, MemorySegment w, int stride, int padding, int dilation, int groups) {
        try {
            return (MemorySegment) CONV1D.invokeExact(x, w, stride, padding, dilation, groups);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment silu(MemorySegment x) {
        try {
            return (MemorySegment) SILU.invokeExact(x);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment preciseSwiglu(MemorySegment h, MemorySegment gate, MemorySegment x) {
        try {
            return (MemorySegment) PRECISE_SWIGLU.invokeExact(h, gate, x);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment gdnComputeG(MemorySegment aLog, MemorySegment a, MemorySegment dtBias) {
        try {
            return (MemorySegment) GDN_COMPUTE_G.invokeExact(aLog, a, dtBias);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int gdnStep(
            MemorySegment q,
            MemorySegment k,
            MemorySegment v,
            MemorySegment g,
            MemorySegment beta,
            MemorySegment state,
            MemorySegment mask,
            MemorySegment out) {
        try {
            return (int) GDN_STEP.invokeExact(q, k, v, g, beta, state, mask, out);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void weightsFree(MemorySegment m) {
        try {
            WEIGHTS_FREE.invokeExact(m);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment loadSafetensors(MemorySegment path) {
        try {
            return (MemorySegment) LOAD_SAFETENSORS.invokeExact(path);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment loadGguf(MemorySegment path) {
        try {
            return (MemorySegment) LOAD_GGUF.invokeExact(path);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int weightsCount(MemorySegment m) {
        try {
            return (int) WEIGHTS_COUNT.invokeExact(m);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment weightsName(MemorySegment m, int i) {
        try {
            return (MemorySegment) WEIGHTS_NAME.invokeExact(m, i);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment weightsArray(MemorySegment m, int i) {
        try {
            return (MemorySegment) WEIGHTS_ARRAY.invokeExact(m, i);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int weightsMetaCount(MemorySegment m) {
        try {
            return (int) WEIGHTS_META_COUNT.invokeExact(m);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment weightsMetaKey(MemorySegment m, int i) {
        try {
            return (MemorySegment) WEIGHTS_META_KEY.invokeExact(m, i);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment weightsMetaValue(MemorySegment m, int i) {
        try {
            return (MemorySegment) WEIGHTS_META_VALUE.invokeExact(m, i);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int saveSafetensors(
            MemorySegment path,
            MemorySegment names,
            MemorySegment arrays,
            int n,
            MemorySegment metaKeys,
            MemorySegment metaValues,
            int m) {
        try {
            return (int) SAVE_SAFETENSORS.invokeExact(path, names, arrays, n, metaKeys, metaValues, m);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment randomKey(long seed) {
        try {
            return (MemorySegment) RANDOM_KEY.invokeExact(seed);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int randomSplit(MemorySegment key, MemorySegment out) {
        try {
            return (int) RANDOM_SPLIT.invokeExact(key, out);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment gather(
            MemorySegment a, MemorySegment indices, int n, MemorySegment axes, MemorySegment sliceSizes, int nslice) {
        try {
            return (MemorySegment) GATHER.invokeExact(a, indices, n, axes, sliceSizes, nslice);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment scatter(
            MemorySegment a, MemorySegment indices, int n, MemorySegment updates, MemorySegment axes) {
        try {
            return (MemorySegment) SCATTER.invokeExact(a, indices, n, updates, axes);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment scatterAdd(
            MemorySegment a, MemorySegment indices, int n, MemorySegment updates, MemorySegment axes) {
        try {
            return (MemorySegment) SCATTER_ADD.invokeExact(a, indices, n, updates, axes);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment broadcastTo(MemorySegment a, MemorySegment shape, int ndim) {
        try {
            return (MemorySegment) BROADCAST_TO.invokeExact(a, shape, ndim);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment argpartition(MemorySegment a, int kth, int axis) {
        try {
            return (MemorySegment) ARGPARTITION.invokeExact(a, kth, axis);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int applyTopK(MemorySegment logprobs, int topK, MemorySegment key, MemorySegment out) {
        try {
            return (int) APPLY_TOP_K.invokeExact(logprobs, topK, key, out);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int applyMinP(
            MemorySegment logprobs, double minP, int minTokensToKeep, MemorySegment key, MemorySegment out) {
        try {
            return (int) APPLY_MIN_P.invokeExact(logprobs, minP, minTokensToKeep, key, out);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int applyTopP(MemorySegment logprobs, double topP, MemorySegment key, MemorySegment out) {
        try {
            return (int) APPLY_TOP_P.invokeExact(logprobs, topP, key, out);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int applyXtc(
            MemorySegment logits,
            double probability,
            double threshold,
            MemorySegment specialTokens,
            int nSpecial,
            MemorySegment key,
            MemorySegment out) {
        try {
            return (int) APPLY_XTC.invokeExact(logits, probability, threshold, specialTokens, nSpecial, key, out);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int categoricalSampling(MemorySegment logits, double temp, MemorySegment key, MemorySegment out) {
        try {
            return (int) CATEGORICAL_SAMPLING.invokeExact(logits, temp, key, out);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
