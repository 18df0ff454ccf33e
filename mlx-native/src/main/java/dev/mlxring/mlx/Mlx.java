package dev.mlxring.mlx;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * MLX operations, named as in {@code mlx.core} / {@code mlx.core.fast}. Every result is a new
 * {@link MlxArray} owned by the thread's current {@link ArrayScope}; inputs are borrowed.
 * Signatures mirror the C++ overloads that mlx.core's Python bindings call, so a model written
 * against this class builds the same graph as its mlx-lm counterpart.
 *
 * <p>Thread contract: MLX graph building is meant for one driving thread (the exec thread). The
 * per-thread scratch below makes the marshalling allocation-free and safe on any thread, but
 * arrays must not be shared across threads.
 */
public final class Mlx {
    private Mlx() {}

    private static final MemorySegment AFFINE = Arena.global().allocateFrom("affine");
    private static final MemorySegment CAUSAL = Arena.global().allocateFrom("causal");
    private static final MemorySegment NO_MASK = Arena.global().allocateFrom("");

    /** Reusable native buffers for int vectors and handle vectors, one set per thread. */
    private static final class Scratch {
        static final int SLOTS = 64;
        final MemorySegment ints0;
        final MemorySegment ints1;
        final MemorySegment ints2;
        final MemorySegment ptrs;

        Scratch() {
            Arena arena = Arena.ofAuto();
            ints0 = arena.allocate(ValueLayout.JAVA_INT, SLOTS);
            ints1 = arena.allocate(ValueLayout.JAVA_INT, SLOTS);
            ints2 = arena.allocate(ValueLayout.JAVA_INT, SLOTS);
            ptrs = arena.allocate(ValueLayout.ADDRESS, 1024);
        }
    }

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private static MemorySegment ints(MemorySegment seg, int[] values) {
        if (values.length > Scratch.SLOTS) {
            throw new IllegalArgumentException("too many dimensions: " + values.length);
        }
        MemorySegment.copy(values, 0, seg, ValueLayout.JAVA_INT, 0, values.length);
        return seg;
    }

    private static MemorySegment handles(MlxArray... arrays) {
        MemorySegment seg = SCRATCH.get().ptrs;
        if (arrays.length > 1024) {
            throw new IllegalArgumentException("too many arrays: " + arrays.length);
        }
        for (int i = 0; i < arrays.length; i++) {
            seg.setAtIndex(ValueLayout.ADDRESS, i, arrays[i].handle());
        }
        return seg;
    }

    private static MlxArray own(MemorySegment h) {
        return MlxArray.own(h);
    }

    // ---- runtime ---------------------------------------------------------------

    public static String version() {
        return Shim.version().reinterpret(256).getString(0);
    }

    public static void eval(MlxArray... arrays) {
        Shim.check(Shim.eval(handles(arrays), arrays.length));
    }

    /**
     * Profiling only: evaluates the graph behind {@code arrays} one primitive at a time in dependency
     * order, each with its own eval, and returns one line per primitive: name, output shape, input
     * shapes and wall ns, tab-separated. Serializes what {@link #eval} pipelines and adds one eval's
     * dispatch per primitive; the engine never calls it.
     */
    public static String profileEval(MlxArray... arrays) {
        MemorySegment ptrs = handles(arrays);
        long cap = 8 << 20;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(cap);
            long need = Shim.profileEval(ptrs, arrays.length, out, cap);
            if (need < 0) {
                Shim.check(-1);
            }
            if (need >= cap) {
                throw new IllegalStateException("profile report of " + need + " bytes exceeds " + cap);
            }
            return out.getString(0);
        }
    }

    public static void asyncEval(MlxArray... arrays) {
        Shim.check(Shim.asyncEval(handles(arrays), arrays.length));
    }

    /** Gives the calling thread its own default stream, as mlx-lm's {@code generation_stream}. */
    public static void useNewDefaultStream() {
        Shim.check(Shim.useNewDefaultStream());
    }

    public static void synchronize() {
        Shim.check(Shim.synchronize());
    }

    public static MemoryStats memory() {
        return new MemoryStats(Shim.activeMemory(), Shim.peakMemory(), Shim.cacheMemory());
    }

    public static void resetPeakMemory() {
        Shim.resetPeakMemory();
    }

    public static void clearCache() {
        Shim.clearCache();
    }

    /**
     * MLX's {@code set_cache_limit}: freed buffers MLX keeps for reuse are held to {@code
     * limitInBytes}. Process-wide; returns the previous limit.
     */
    public static long setCacheLimit(long limitInBytes) {
        return Shim.setCacheLimit(requireNonNegative(limitInBytes));
    }

    /**
     * MLX's {@code set_memory_limit}: the bytes MLX aims to stay under while evaluating graphs
     * (a guideline its allocator enforces by freeing its cache and waiting on scheduled work;
     * backends differ). Process-wide; returns the previous limit.
     */
    public static long setMemoryLimit(long limitInBytes) {
        return Shim.setMemoryLimit(requireNonNegative(limitInBytes));
    }

    private static long requireNonNegative(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("a memory limit is a byte count >= 0, got " + bytes);
        }
        return bytes;
    }

    // ---- creation --------------------------------------------------------------

    /** Copies {@code data} (row-major, little-endian, {@code dtype} elements) into a new array. */
    public static MlxArray fromBytes(MemorySegment data, int[] shape, Dtype dtype) {
        return own(
                Shim.arrayFromBytes(data, data.byteSize(), ints(SCRATCH.get().ints0, shape), shape.length, dtype.code));
    }

    public static MlxArray fromInts(int[] values, int... shape) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(ValueLayout.JAVA_INT, Math.max(values.length, 1));
            MemorySegment.copy(values, 0, seg, ValueLayout.JAVA_INT, 0, values.length);
            return fromBytes(seg.asSlice(0, (long) values.length * 4), shape, Dtype.INT32);
        }
    }

    public static MlxArray fromFloats(float[] values, int... shape) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(ValueLayout.JAVA_FLOAT, Math.max(values.length, 1));
            MemorySegment.copy(values, 0, seg, ValueLayout.JAVA_FLOAT, 0, values.length);
            return fromBytes(seg.asSlice(0, (long) values.length * 4), shape, Dtype.FLOAT32);
        }
    }

    /** A 0-d array, as {@code mx.array(value, dtype)}. */
    public static MlxArray scalar(double value, Dtype dtype) {
        return own(Shim.scalar(value, dtype.code));
    }

    public static MlxArray zeros(int[] shape, Dtype dtype) {
        return own(Shim.zeros(ints(SCRATCH.get().ints0, shape), shape.length, dtype.code));
    }

    public static MlxArray arange(double start, double stop, double step, Dtype dtype) {
        return own(Shim.arange(start, stop, step, dtype.code));
    }

    // ---- element-wise ----------------------------------------------------------

    public static MlxArray add(MlxArray a, MlxArray b) {
        return own(Shim.add(a.handle(), b.handle()));
    }

    public static MlxArray subtract(MlxArray a, MlxArray b) {
        return own(Shim.subtract(a.handle(), b.handle()));
    }

    public static MlxArray multiply(MlxArray a, MlxArray b) {
        return own(Shim.multiply(a.handle(), b.handle()));
    }

    public static MlxArray divide(MlxArray a, MlxArray b) {
        return own(Shim.divide(a.handle(), b.handle()));
    }

    public static MlxArray power(MlxArray a, MlxArray b) {
        return own(Shim.power(a.handle(), b.handle()));
    }

    public static MlxArray maximum(MlxArray a, MlxArray b) {
        return own(Shim.maximum(a.handle(), b.handle()));
    }

    public static MlxArray minimum(MlxArray a, MlxArray b) {
        return own(Shim.minimum(a.handle(), b.handle()));
    }

    /** {@code a // b} ({@code mx.floor_divide}). */
    public static MlxArray floorDivide(MlxArray a, MlxArray b) {
        return own(Shim.floorDivide(a.handle(), b.handle()));
    }

    public static MlxArray greater(MlxArray a, MlxArray b) {
        return own(Shim.greater(a.handle(), b.handle()));
    }

    public static MlxArray greaterEqual(MlxArray a, MlxArray b) {
        return own(Shim.greaterEqual(a.handle(), b.handle()));
    }

    public static MlxArray less(MlxArray a, MlxArray b) {
        return own(Shim.less(a.handle(), b.handle()));
    }

    public static MlxArray equal(MlxArray a, MlxArray b) {
        return own(Shim.equal(a.handle(), b.handle()));
    }

    public static MlxArray logicalAnd(MlxArray a, MlxArray b) {
        return own(Shim.logicalAnd(a.handle(), b.handle()));
    }

    public static MlxArray where(MlxArray cond, MlxArray x, MlxArray y) {
        return own(Shim.where(cond.handle(), x.handle(), y.handle()));
    }

    public static MlxArray sigmoid(MlxArray a) {
        return own(Shim.sigmoid(a.handle()));
    }

    /** {@code mx.tanh}, elementwise. */
    public static MlxArray tanh(MlxArray a) {
        return own(Shim.tanh(a.handle()));
    }

    public static MlxArray exp(MlxArray a) {
        return own(Shim.exp(a.handle()));
    }

    public static MlxArray log(MlxArray a) {
        return own(Shim.log(a.handle()));
    }

    public static MlxArray negative(MlxArray a) {
        return own(Shim.negative(a.handle()));
    }

    public static MlxArray sqrt(MlxArray a) {
        return own(Shim.sqrt(a.handle()));
    }

    public static MlxArray rsqrt(MlxArray a) {
        return own(Shim.rsqrt(a.handle()));
    }

    public static MlxArray contiguous(MlxArray a) {
        return own(Shim.contiguous(a.handle()));
    }

    public static MlxArray astype(MlxArray a, Dtype dtype) {
        return own(Shim.astype(a.handle(), dtype.code));
    }

    // ---- linear algebra ----------------------------------------------------------

    /** {@code a @ b}. */
    public static MlxArray matmul(MlxArray a, MlxArray b) {
        return own(Shim.matmul(a.handle(), b.handle()));
    }

    /** {@code beta * c + alpha * (a @ b)}, as {@code mx.addmm}. */
    public static MlxArray addmm(MlxArray c, MlxArray a, MlxArray b, float alpha, float beta) {
        return own(Shim.addmm(c.handle(), a.handle(), b.handle(), alpha, beta));
    }

    public static MlxArray quantizedMatmul(
            MlxArray x, MlxArray w, MlxArray scales, MlxArray biases, boolean transpose, int groupSize, int bits) {
        return own(Shim.quantizedMatmul(
                x.handle(),
                w.handle(),
                scales.handle(),
                MlxArray.handleOrNull(biases),
                transpose,
                groupSize,
                bits,
                AFFINE));
    }

    /**
     * {@link #quantizedMatmul} evaluated by the shim's exact x86 kernel (AVX-512 or AVX2/F16C, worker pool)
     * when it covers the case — affine, {@code transpose=true}, 2 to 6 or 8 bits, group size 32/64/128,
     * float32/float16/bfloat16, a 2-D weight, a CPU stream, a CPU with AVX2 and F16C — and by
     * MLX's own op otherwise. Same validation, dtype promotion, output and output bytes as MLX.
     */
    public static MlxArray nativeQuantizedMatmul(
            MlxArray x, MlxArray w, MlxArray scales, MlxArray biases, boolean transpose, int groupSize, int bits) {
        return own(Shim.nativeQuantizedMatmul(
                x.handle(),
                w.handle(),
                scales.handle(),
                MlxArray.handleOrNull(biases),
                transpose,
                groupSize,
                bits,
                AFFINE,
                0));
    }

    /**
     * {@link #nativeQuantizedMatmul} by the kernels of instruction set {@code isa} rather than the
     * {@linkplain KernelIsa#selected() selected} one (tests compare each with MLX); an {@code isa}
     * this CPU lacks is an error.
     */
    public static MlxArray nativeQuantizedMatmul(
            MlxArray x,
            MlxArray w,
            MlxArray scales,
            MlxArray biases,
            boolean transpose,
            int groupSize,
            int bits,
            KernelIsa isa) {
        return own(Shim.nativeQuantizedMatmul(
                x.handle(),
                w.handle(),
                scales.handle(),
                MlxArray.handleOrNull(biases),
                transpose,
                groupSize,
                bits,
                AFFINE,
                isa.code));
    }

    /**
     * Whether {@code a} is (unevaluated) output of one of the native primitives that replace
     * the CPU fallbacks of MLX's {@code fast::} ops (rms_norm, rope, attention).
     */
    public static boolean isNativeFastOp(MlxArray a) {
        return Shim.isNativeFastOp(a.handle());
    }

    /** Whether {@code a} is (unevaluated) output of the native quantized-matmul kernel. */
    public static boolean isNativeQuantizedMatmul(MlxArray a) {
        return Shim.isNativeQuantizedMatmul(a.handle());
    }

    /**
     * {@code x @ W.T} ({@code matmul(x, transposeAll(w))}, mlx.nn.Linear without a bias) evaluated
     * by the shim's exact x86 dense kernel when it covers the case — x of rank &ge; 2 and a 2-D
     * {@code w} of one dtype (float32, float16 or bfloat16), {@code w} evaluated and row-contiguous,
     * a CPU stream, a CPU with AVX2 and F16C — and by MLX's own op otherwise. Same validation,
     * output and output bytes as MLX.
     */
    public static MlxArray nativeLinear(MlxArray x, MlxArray w) {
        return own(Shim.nativeLinear(x.handle(), w.handle(), 0));
    }

    /**
     * {@link #nativeLinear} by the kernels of instruction set {@code isa} rather than the
     * {@linkplain KernelIsa#selected() selected} one (tests compare each with MLX); an {@code isa}
     * this CPU lacks is an error.
     */
    public static MlxArray nativeLinear(MlxArray x, MlxArray w, KernelIsa isa) {
        return own(Shim.nativeLinear(x.handle(), w.handle(), isa.code));
    }

    /** Whether {@code a} is (unevaluated) output of the native dense-matmul kernel. */
    public static boolean isNativeLinear(MlxArray a) {
        return Shim.isNativeLinear(a.handle());
    }

    /** Whether this CPU runs the native kernels (x86-64 with AVX2 and F16C). */
    public static boolean nativeKernelsAvailable() {
        return Shim.nativeKernelsAvailable();
    }

    /**
     * Whether MLX's default device is a GPU (a venv set up with {@code --backend cuda} on a machine
     * with an NVIDIA GPU): every op then runs on it, and the native CPU kernels never apply.
     */
    public static boolean defaultDeviceIsGpu() {
        return Shim.defaultDeviceIsGpu();
    }

    /** Threads the native kernels split one call over (MLX's stream thread included). */
    public static int nativeKernelsThreads() {
        return Shim.nativeKernelsThreads();
    }

    public static MlxArray dequantize(MlxArray w, MlxArray scales, MlxArray biases, int groupSize, int bits) {
        return own(
                Shim.dequantize(w.handle(), scales.handle(), MlxArray.handleOrNull(biases), groupSize, bits, AFFINE));
    }

    /** Affine quantization along the last axis: {weight, scales, biases}. */
    public static MlxArray[] quantize(MlxArray w, int groupSize, int bits) {
        MemorySegment out = SCRATCH.get().ptrs;
        Shim.check(Shim.quantize(w.handle(), groupSize, bits, AFFINE, out));
        MlxArray[] r = new MlxArray[3];
        for (int i = 0; i < 3; i++) {
            r[i] = own(out.getAtIndex(ValueLayout.ADDRESS, i));
        }
        return r;
    }

    /**
     * {@code mx.gather_mm(a, b, lhs_indices, rhs_indices, sorted_indices)}: matmuls of {@code a}'s
     * and {@code b}'s matrices picked by the indices (null = None). MLX's CPU kernel runs float32 only.
     */
    public static MlxArray gatherMm(
            MlxArray a, MlxArray b, MlxArray lhsIndices, MlxArray rhsIndices, boolean sortedIndices) {
        return own(Shim.gatherMm(
                a.handle(),
                b.handle(),
                MlxArray.handleOrNull(lhsIndices),
                MlxArray.handleOrNull(rhsIndices),
                sortedIndices));
    }

    /**
     * {@code mx.gather_qmm(x, w, scales, biases, lhs_indices, rhs_indices, transpose, group_size,
     * bits, mode="affine", sorted_indices)}: {@link #gatherMm} over affine-quantized matrices.
     */
    public static MlxArray gatherQmm(
            MlxArray x,
            MlxArray w,
            MlxArray scales,
            MlxArray biases,
            MlxArray lhsIndices,
            MlxArray rhsIndices,
            boolean transpose,
            int groupSize,
            int bits,
            boolean sortedIndices) {
        return own(Shim.gatherQmm(
                x.handle(),
                w.handle(),
                scales.handle(),
                MlxArray.handleOrNull(biases),
                MlxArray.handleOrNull(lhsIndices),
                MlxArray.handleOrNull(rhsIndices),
                transpose,
                groupSize,
                bits,
                AFFINE,
                sortedIndices));
    }

    // ---- shape -------------------------------------------------------------------

    public static MlxArray reshape(MlxArray a, int... shape) {
        return own(Shim.reshape(a.handle(), ints(SCRATCH.get().ints0, shape), shape.length));
    }

    public static MlxArray transpose(MlxArray a, int... axes) {
        return own(Shim.transpose(a.handle(), ints(SCRATCH.get().ints0, axes), axes.length));
    }

    /** Reverses all axes ({@code a.T}). */
    public static MlxArray transposeAll(MlxArray a) {
        return own(Shim.transpose(a.handle(), MemorySegment.NULL, -1));
    }

    public static MlxArray expandDims(MlxArray a, int axis) {
        return own(Shim.expandDims(a.handle(), axis));
    }

    public static MlxArray squeeze(MlxArray a, int axis) {
        return own(Shim.squeeze(a.handle(), axis));
    }

    public static MlxArray slice(MlxArray a, int[] start, int[] stop, int[] strides) {
        Scratch s = SCRATCH.get();
        return own(Shim.slice(
                a.handle(), ints(s.ints0, start), ints(s.ints1, stop), ints(s.ints2, strides), start.length));
    }

    public static MlxArray sliceUpdate(MlxArray src, MlxArray update, int[] start, int[] stop, int[] strides) {
        Scratch s = SCRATCH.get();
        return own(Shim.sliceUpdate(
                src.handle(),
                update.handle(),
                ints(s.ints0, start),
                ints(s.ints1, stop),
                ints(s.ints2, strides),
                start.length));
    }

    /**
     * {@code src.at[slices].multiply(update)} as mlx's Python binding lowers basic slices:
     * {@code slice_update_prod} ({@code update} is cast to src's dtype and broadcast; a slice that
     * covers all of src becomes a plain multiply).
     */
    public static MlxArray sliceUpdateProd(MlxArray src, MlxArray update, int[] start, int[] stop, int[] strides) {
        Scratch s = SCRATCH.get();
        return own(Shim.sliceUpdateProd(
                src.handle(),
                update.handle(),
                ints(s.ints0, start),
                ints(s.ints1, stop),
                ints(s.ints2, strides),
                start.length));
    }

    public static MlxArray concatenate(int axis, MlxArray... arrays) {
        return own(Shim.concatenate(handles(arrays), arrays.length, axis));
    }

    public static MlxArray take(MlxArray a, MlxArray indices, int axis) {
        return own(Shim.take(a.handle(), indices.handle(), axis));
    }

    /** {@code mx.take_along_axis}. */
    public static MlxArray takeAlongAxis(MlxArray a, MlxArray indices, int axis) {
        return own(Shim.takeAlongAxis(a.handle(), indices.handle(), axis));
    }

    /**
     * {@code [B, H, n, D]} with row {@code r}'s positions rolled right by {@code shifts[r]},
     * wrapping: mlx-lm's {@code dynamic_roll}, {@code take_along_axis(a, (arange(n) - shift) % n, 2)},
     * the same bytes. On the CPU one primitive that moves only the rows that shift, in place when
     * nothing else holds {@code a}'s buffer ({@code mlxr_roll_rows.cpp}); elsewhere the gather.
     *
     * @throws MlxException when {@code a} is not 4-D with one row per shift
     */
    public static MlxArray rollRowsRight(MlxArray a, int[] shifts) {
        if (shifts.length <= Scratch.SLOTS) {
            return own(Shim.rollRowsRight(a.handle(), ints(SCRATCH.get().ints0, shifts), shifts.length));
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(ValueLayout.JAVA_INT, shifts.length);
            MemorySegment.copy(shifts, 0, seg, ValueLayout.JAVA_INT, 0, shifts.length);
            return own(Shim.rollRowsRight(a.handle(), seg, shifts.length));
        }
    }

    /**
     * {@code [rows, H, size, D]}: each source's rows in turn ({@code [r, H, n, D]}, one dtype, H
     * and D), every (row, head) slab zeros before {@code left[s]}, then the source's first {@code
     * length[s]} positions, then zeros to {@code size}: {@code concatenate} over the sources of
     * {@code pad(x[..., :length, :], left, size - left - length)} on axis 2, the same bytes. On the
     * CPU one primitive that writes each slab once ({@code mlxr_place_rows.cpp}); elsewhere zeros
     * and slice updates.
     *
     * @throws MlxException when a source is not 4-D, differs from the first in dtype, H or D, or
     *     its placement does not fit ({@code length > n}, {@code left + length > size}, a negative)
     */
    public static MlxArray placeRows(MlxArray[] sources, int[] left, int[] length, int size) {
        if (sources.length != left.length || sources.length != length.length) {
            throw new IllegalArgumentException("placeRows: " + sources.length + " sources, " + left.length
                    + " left paddings, " + length.length + " lengths");
        }
        if (sources.length > Scratch.SLOTS) {
            throw new IllegalArgumentException("placeRows: " + sources.length + " sources, at most " + Scratch.SLOTS);
        }
        Scratch s = SCRATCH.get();
        return own(Shim.placeRows(handles(sources), sources.length, ints(s.ints0, left), ints(s.ints1, length), size));
    }

    // ---- reductions ------------------------------------------------------------

    public static MlxArray argmax(MlxArray a, int axis, boolean keepdims) {
        return argmax(CpuKernels.MLX, a, axis, keepdims);
    }

    /**
     * {@code mx.argmax(a, axis, keepdims)}, evaluated by {@code kernels}: with {@link
     * CpuKernels#NATIVE} a last-axis argmax of a float32 array runs eight lanes at a time and
     * answers MLX's {@code ArgReduce}'s indices (the first of the largest values, NaN never
     * taken, 0 when the row starts with NaN; {@code ArgMaxExactnessTest}).
     */
    public static MlxArray argmax(CpuKernels kernels, MlxArray a, int axis, boolean keepdims) {
        return own(Shim.argmax(kernels == CpuKernels.NATIVE, a.handle(), axis, keepdims));
    }

    /** Log-sum-exp over every axis ({@code axis=None}). */
    public static MlxArray logsumexp(MlxArray a, boolean keepdims) {
        return logsumexp(CpuKernels.MLX, a, keepdims);
    }

    /**
     * Log-sum-exp over every axis, evaluated by {@code kernels}: with {@link CpuKernels#NATIVE} a
     * last-axis reduction kept as MLX's {@code LogSumExp} computes it, eight exponentials at a time
     * (same bytes; {@code LogSumExpExactnessTest}).
     */
    public static MlxArray logsumexp(CpuKernels kernels, MlxArray a, boolean keepdims) {
        return own(Shim.logsumexp(kernels == CpuKernels.NATIVE, a.handle(), MemorySegment.NULL, 0, keepdims));
    }

    public static MlxArray logsumexp(MlxArray a, int axis, boolean keepdims) {
        return logsumexp(CpuKernels.MLX, a, axis, keepdims);
    }

    /** Log-sum-exp over {@code axis}, evaluated by {@code kernels} (see the all-axes overload). */
    public static MlxArray logsumexp(CpuKernels kernels, MlxArray a, int axis, boolean keepdims) {
        return own(Shim.logsumexp(
                kernels == CpuKernels.NATIVE, a.handle(), ints(SCRATCH.get().ints0, new int[] {axis}), 1, keepdims));
    }

    /** {@code mx.sum(a, axis, keepdims)}. */
    public static MlxArray sum(MlxArray a, int axis, boolean keepdims) {
        return own(Shim.sum(a.handle(), ints(SCRATCH.get().ints0, new int[] {axis}), 1, keepdims));
    }

    /** {@code mx.argsort(a, axis)} (uint32 indices of a stable ascending sort). */
    public static MlxArray argsort(MlxArray a, int axis) {
        return own(Shim.argsort(a.handle(), axis));
    }

    public static MlxArray softmax(MlxArray a, int axis, boolean precise) {
        return own(Shim.softmax(a.handle(), ints(SCRATCH.get().ints0, new int[] {axis}), 1, precise));
    }

    // ---- fast ------------------------------------------------------------------

    public static MlxArray rmsNorm(MlxArray x, MlxArray weight, float eps) {
        return rmsNorm(CpuKernels.MLX, x, weight, eps);
    }

    /** {@code mx.fast.rms_norm} evaluated by {@code kernels} (see {@link CpuKernels#NATIVE}). */
    public static MlxArray rmsNorm(CpuKernels kernels, MlxArray x, MlxArray weight, float eps) {
        return own(Shim.rmsNorm(kernels == CpuKernels.NATIVE, x.handle(), MlxArray.handleOrNull(weight), eps));
    }

    public static MlxArray layerNorm(MlxArray x, MlxArray weight, MlxArray bias, float eps) {
        return own(Shim.layerNorm(x.handle(), MlxArray.handleOrNull(weight), MlxArray.handleOrNull(bias), eps));
    }

    /** {@code mx.fast.rope} with a base (freqs=None). */
    public static MlxArray rope(MlxArray x, int dims, boolean traditional, float base, float scale, int offset) {
        return rope(CpuKernels.MLX, x, dims, traditional, base, scale, offset);
    }

    /** {@code mx.fast.rope} with a base (freqs=None), evaluated by {@code kernels}. */
    public static MlxArray rope(
            CpuKernels kernels, MlxArray x, int dims, boolean traditional, float base, float scale, int offset) {
        return own(Shim.rope(
                kernels == CpuKernels.NATIVE,
                x.handle(),
                dims,
                traditional,
                true,
                base,
                scale,
                offset,
                MemorySegment.NULL));
    }

    /** {@code mx.fast.rope} with explicit frequencies (base=None). */
    public static MlxArray rope(MlxArray x, int dims, boolean traditional, float scale, int offset, MlxArray freqs) {
        return rope(CpuKernels.MLX, x, dims, traditional, scale, offset, freqs);
    }

    /** {@code mx.fast.rope} with explicit frequencies (base=None), evaluated by {@code kernels}. */
    public static MlxArray rope(
            CpuKernels kernels, MlxArray x, int dims, boolean traditional, float scale, int offset, MlxArray freqs) {
        return own(Shim.rope(
                kernels == CpuKernels.NATIVE, x.handle(), dims, traditional, false, 0f, scale, offset, freqs.handle()));
    }

    /** {@code mx.fast.rope} with a base and one offset per batch row ({@code offsets}: int32 {@code [B]}). */
    public static MlxArray rope(MlxArray x, int dims, boolean traditional, float base, float scale, MlxArray offsets) {
        return rope(CpuKernels.MLX, x, dims, traditional, base, scale, offsets);
    }

    /** {@code mx.fast.rope} with a base and one offset per batch row, evaluated by {@code kernels}. */
    public static MlxArray rope(
            CpuKernels kernels, MlxArray x, int dims, boolean traditional, float base, float scale, MlxArray offsets) {
        return own(Shim.ropeOffsets(
                kernels == CpuKernels.NATIVE,
                x.handle(),
                dims,
                traditional,
                true,
                base,
                scale,
                offsets.handle(),
                MemorySegment.NULL));
    }

    /** {@code mx.fast.rope} with explicit frequencies and one offset per batch row. */
    public static MlxArray rope(
            MlxArray x, int dims, boolean traditional, float scale, MlxArray offsets, MlxArray freqs) {
        return rope(CpuKernels.MLX, x, dims, traditional, scale, offsets, freqs);
    }

    /** {@code mx.fast.rope} with explicit frequencies and one offset per batch row, evaluated by {@code kernels}. */
    public static MlxArray rope(
            CpuKernels kernels,
            MlxArray x,
            int dims,
            boolean traditional,
            float scale,
            MlxArray offsets,
            MlxArray freqs) {
        return own(Shim.ropeOffsets(
                kernels == CpuKernels.NATIVE,
                x.handle(),
                dims,
                traditional,
                false,
                0f,
                scale,
                offsets.handle(),
                freqs.handle()));
    }

    /** {@code mx.fast.scaled_dot_product_attention} with {@code mask="causal"}. */
    public static MlxArray sdpaCausal(MlxArray q, MlxArray k, MlxArray v, float scale) {
        return sdpaCausal(CpuKernels.MLX, q, k, v, scale, null);
    }

    /** {@code mx.fast.scaled_dot_product_attention} with an array mask, or none when {@code mask} is null. */
    public static MlxArray sdpa(MlxArray q, MlxArray k, MlxArray v, float scale, MlxArray mask) {
        return sdpa(CpuKernels.MLX, q, k, v, scale, mask, null);
    }

    /** {@code mx.fast.scaled_dot_product_attention(..., mask="causal", sinks=sinks)}. */
    public static MlxArray sdpaCausal(MlxArray q, MlxArray k, MlxArray v, float scale, MlxArray sinks) {
        return sdpaCausal(CpuKernels.MLX, q, k, v, scale, sinks);
    }

    /** {@code mx.fast.scaled_dot_product_attention(..., mask=mask, sinks=sinks)}; {@code mask} null for None. */
    public static MlxArray sdpa(MlxArray q, MlxArray k, MlxArray v, float scale, MlxArray mask, MlxArray sinks) {
        return sdpa(CpuKernels.MLX, q, k, v, scale, mask, sinks);
    }

    /**
     * {@code mx.fast.scaled_dot_product_attention(..., mask="causal", sinks=sinks)} evaluated by
     * {@code kernels}; {@code sinks} null for None.
     */
    public static MlxArray sdpaCausal(
            CpuKernels kernels, MlxArray q, MlxArray k, MlxArray v, float scale, MlxArray sinks) {
        return own(Shim.sdpa(
                kernels == CpuKernels.NATIVE,
                q.handle(),
                k.handle(),
                v.handle(),
                scale,
                CAUSAL,
                MemorySegment.NULL,
                MlxArray.handleOrNull(sinks)));
    }

    /**
     * {@code mx.fast.scaled_dot_product_attention(..., mask=mask, sinks=sinks)} evaluated by
     * {@code kernels}; {@code mask} and {@code sinks} null for None.
     */
    public static MlxArray sdpa(
            CpuKernels kernels, MlxArray q, MlxArray k, MlxArray v, float scale, MlxArray mask, MlxArray sinks) {
        return own(Shim.sdpa(
                kernels == CpuKernels.NATIVE,
                q.handle(),
                k.handle(),
                v.handle(),
                scale,
                NO_MASK,
                MlxArray.handleOrNull(mask),
                MlxArray.handleOrNull(sinks)));
    }

    /**
     * {@code sdpa(...).transpose(0, 2, 1, 3).reshape(B, L, -1)}: attention with its heads merged
     * as the attention modules hand it to {@code o_proj}; {@code causal} selects the "causal" mode
     * ({@code mask} then null), {@code mask} and {@code sinks} null for None. With
     * {@link CpuKernels#NATIVE} one primitive writes the merged layout where it covers the case;
     * with {@link CpuKernels#MLX} it is MLX's op and the two view ops, as mlx-lm builds them.
     */
    public static MlxArray sdpaMergedHeads(
            CpuKernels kernels,
            MlxArray q,
            MlxArray k,
            MlxArray v,
            float scale,
            boolean causal,
            MlxArray mask,
            MlxArray sinks) {
        if (kernels == CpuKernels.NATIVE) {
            return own(Shim.nativeSdpaMerged(
                    q.handle(),
                    k.handle(),
                    v.handle(),
                    scale,
                    causal ? CAUSAL : NO_MASK,
                    MlxArray.handleOrNull(mask),
                    MlxArray.handleOrNull(sinks)));
        }
        MlxArray out = causal ? sdpaCausal(kernels, q, k, v, scale, sinks) : sdpa(kernels, q, k, v, scale, mask, sinks);
        return reshape(transpose(out, 0, 2, 1, 3), q.dim(0), q.dim(2), -1);
    }

    /**
     * The native rope of {@code transpose(reshape(x, B, L, heads, -1), 0, 2, 1, 3)} for a
     * projection's output {@code x} {@code [B, L, heads * D]}: one primitive that reads the heads'
     * view in place where it covers the case (else the view's ops and the native rope). A base or
     * {@code freqs} (base null); {@code offsets} (int32 {@code [B]}) or, when null, {@code offset}.
     */
    public static MlxArray nativeRopeHeads(
            MlxArray x,
            int heads,
            int dims,
            boolean traditional,
            Float base,
            float scale,
            int offset,
            MlxArray offsets,
            MlxArray freqs) {
        return own(Shim.nativeRopeHeads(
                x.handle(),
                heads,
                dims,
                traditional,
                base != null,
                base == null ? 0f : base,
                scale,
                offset,
                MlxArray.handleOrNull(offsets),
                MlxArray.handleOrNull(freqs)));
    }

    // ---- compiled (where mlx-lm compiles) ------------------------------------------

    /** mlx-lm's {@code activations.swiglu}: compiled {@code silu(gate) * x}. */
    public static MlxArray swiglu(MlxArray gate, MlxArray x) {
        return swiglu(CpuKernels.MLX, gate, x);
    }

    /**
     * {@link #swiglu(MlxArray, MlxArray)} evaluated by {@code kernels}: with {@link CpuKernels#NATIVE}
     * operands of one shape and one dtype (float32, float16 or bfloat16) take one native primitive
     * with the compiled kernel's bytes ({@code SwigluExactnessTest}).
     */
    public static MlxArray swiglu(CpuKernels kernels, MlxArray gate, MlxArray x) {
        return own(Shim.swiglu(kernels == CpuKernels.NATIVE, gate.handle(), x.handle()));
    }

    /**
     * mlx-lm's {@code activations.swiglu_oai(gate, x)} (GPT-OSS) with SwigluOAI's defaults
     * (alpha 1.702, limit 7.0): compiled {@code (clip(x, -7, 7) + 1) * g * sigmoid(1.702 * g)},
     * {@code g = minimum(gate, 7)}.
     */
    public static MlxArray swigluOai(MlxArray gate, MlxArray x) {
        return own(Shim.swigluOai(gate.handle(), x.handle()));
    }

    /** {@code mlx.nn.gelu_approx}: compiled (shapeless) tanh approximation of GELU. */
    public static MlxArray geluApprox(MlxArray x) {
        return own(Shim.geluApprox(x.handle()));
    }

    /** mlx-lm gemma3_text's {@code clip_residual}: compiled {@code x + y} (float16 adds in float32 and clips). */
    public static MlxArray clipResidual(MlxArray x, MlxArray y) {
        return own(Shim.clipResidual(x.handle(), y.handle()));
    }

    // ---- gated delta net (mlxr_gated_delta.cpp) -------------------------------------

    /** {@code mx.conv1d(x, w, stride, padding, dilation, groups)}: x {@code [B, L, C_in]}, w {@code [C_out, K, C_in / groups]}. */
    public static MlxArray conv1d(MlxArray x, MlxArray w, int stride, int padding, int dilation, int groups) {
        return own(Shim.conv1d(x.handle(), w.handle(), stride, padding, dilation, groups));
    }

    /** {@code mlx.nn.silu}: compiled {@code x * sigmoid(x)}. */
    public static MlxArray silu(MlxArray x) {
        return own(Shim.silu(x.handle()));
    }

    /**
     * mlx-lm's {@code activations.precise_swiglu(h, gate, x)}: compiled
     * {@code (silu(gate.astype(float32)) * x.astype(float32)).astype(h.dtype)}.
     */
    public static MlxArray preciseSwiglu(MlxArray h, MlxArray gate, MlxArray x) {
        return own(Shim.preciseSwiglu(h.handle(), gate.handle(), x.handle()));
    }

    /**
     * mlx-lm's {@code gated_delta.compute_g(A_log, a, dt_bias)}: compiled
     * {@code exp(-exp(A_log.astype(float32)) * softplus(a + dt_bias))}.
     */
    public static MlxArray gdnComputeG(MlxArray aLog, MlxArray a, MlxArray dtBias) {
        return own(Shim.gdnComputeG(aLog.handle(), a.handle(), dtBias.handle()));
    }

    /**
     * mlx-lm's compiled {@code gated_delta._gated_delta_step_ops(q, k, v, g, beta, state, mask)}:
     * one step of the gated delta recurrence, {y [B, H, Dv] of q's dtype, new state [B, H, Dv, Dk]};
     * a null {@code mask} is Python's {@code mask=None}, else rows where {@code mask} [B] is false
     * keep their old state.
     */
    public static MlxArray[] gdnStep(
            MlxArray q, MlxArray k, MlxArray v, MlxArray g, MlxArray beta, MlxArray state, MlxArray mask) {
        return pair(Shim.gdnStep(
                q.handle(),
                k.handle(),
                v.handle(),
                g.handle(),
                beta.handle(),
                state.handle(),
                MlxArray.handleOrNull(mask),
                SCRATCH.get().ptrs));
    }

    // ---- random, indexing and sampling (mlxr_sampling.cpp) ---------------------------

    /** {@code mx.random.key(seed)}: the key {@code mx.random.seed(seed)} installs ({@code seed} read as uint64). */
    public static MlxArray randomKey(long seed) {
        return own(Shim.randomKey(seed));
    }

    /** {@code mx.random.split(key)} as the key sequence uses it: {new state, subkey}. */
    public static MlxArray[] randomSplit(MlxArray key) {
        return pair(Shim.randomSplit(key.handle(), SCRATCH.get().ptrs));
    }

    /** {@code mx.gather(a, indices, axes, slice_sizes)}. */
    public static MlxArray gather(MlxArray a, MlxArray[] indices, int[] axes, int[] sliceSizes) {
        Scratch s = SCRATCH.get();
        if (axes.length != indices.length) {
            throw new IllegalArgumentException("gather: " + indices.length + " index arrays, " + axes.length + " axes");
        }
        return own(Shim.gather(
                a.handle(),
                handles(indices),
                indices.length,
                ints(s.ints0, axes),
                ints(s.ints1, sliceSizes),
                sliceSizes.length));
    }

    /** {@code mx.scatter(a, indices, updates, axes)} (assignment; updates are cast to a's dtype). */
    public static MlxArray scatter(MlxArray a, MlxArray[] indices, MlxArray updates, int[] axes) {
        if (axes.length != indices.length) {
            throw new IllegalArgumentException(
                    "scatter: " + indices.length + " index arrays, " + axes.length + " axes");
        }
        return own(Shim.scatter(
                a.handle(), handles(indices), indices.length, updates.handle(), ints(SCRATCH.get().ints0, axes)));
    }

    /** {@code mx.scatter_add(a, indices, updates, axes)} (updates are cast to a's dtype). */
    public static MlxArray scatterAdd(MlxArray a, MlxArray[] indices, MlxArray updates, int[] axes) {
        if (axes.length != indices.length) {
            throw new IllegalArgumentException(
                    "scatter_add: " + indices.length + " index arrays, " + axes.length + " axes");
        }
        return own(Shim.scatterAdd(
                a.handle(), handles(indices), indices.length, updates.handle(), ints(SCRATCH.get().ints0, axes)));
    }

    public static MlxArray broadcastTo(MlxArray a, int... shape) {
        return own(Shim.broadcastTo(a.handle(), ints(SCRATCH.get().ints0, shape), shape.length));
    }

    public static MlxArray argpartition(MlxArray a, int kth, int axis) {
        return own(Shim.argpartition(a.handle(), kth, axis));
    }

    // mlx-lm's compiled sample_utils helpers. Each takes the random key as an input and returns
    // {result, new key}, as mx.compile(inputs=mx.random.state, outputs=mx.random.state) threads it.

    /** {@code sample_utils.apply_top_k(logprobs, top_k)}: {masked logprobs, key}. */
    public static MlxArray[] applyTopK(MlxArray logprobs, int topK, MlxArray key) {
        return pair(Shim.applyTopK(logprobs.handle(), topK, key.handle(), SCRATCH.get().ptrs));
    }

    /** {@code sample_utils.apply_min_p(logprobs, min_p, min_tokens_to_keep)}: {masked logprobs, key}. */
    public static MlxArray[] applyMinP(MlxArray logprobs, double minP, int minTokensToKeep, MlxArray key) {
        return pair(Shim.applyMinP(logprobs.handle(), minP, minTokensToKeep, key.handle(), SCRATCH.get().ptrs));
    }

    /** {@code sample_utils.apply_top_p(logprobs, top_p)}: {masked logprobs, key}. */
    public static MlxArray[] applyTopP(MlxArray logprobs, double topP, MlxArray key) {
        return pair(Shim.applyTopP(logprobs.handle(), topP, key.handle(), SCRATCH.get().ptrs));
    }

    /** {@code sample_utils.apply_xtc(logits, probability, threshold, special_tokens)}: {logits, new key}. */
    public static MlxArray[] applyXtc(
            MlxArray logits, double probability, double threshold, int[] specialTokens, MlxArray key) {
        if (specialTokens.length <= Scratch.SLOTS) {
            return pair(Shim.applyXtc(
                    logits.handle(),
                    probability,
                    threshold,
                    ints(SCRATCH.get().ints0, specialTokens),
                    specialTokens.length,
                    key.handle(),
                    SCRATCH.get().ptrs));
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment special = arena.allocate(ValueLayout.JAVA_INT, specialTokens.length);
            MemorySegment.copy(specialTokens, 0, special, ValueLayout.JAVA_INT, 0, specialTokens.length);
            return pair(Shim.applyXtc(
                    logits.handle(),
                    probability,
                    threshold,
                    special,
                    specialTokens.length,
                    key.handle(),
                    SCRATCH.get().ptrs));
        }
    }

    /** {@code sample_utils.categorical_sampling(logits, temp)}: {sampled token ids, new key}. */
    public static MlxArray[] categoricalSampling(MlxArray logits, double temp, MlxArray key) {
        return pair(Shim.categoricalSampling(logits.handle(), temp, key.handle(), SCRATCH.get().ptrs));
    }

    /** Takes the two handles a pair-returning shim call wrote into the scratch pointer buffer. */
    private static MlxArray[] pair(int rc) {
        Shim.check(rc);
        MemorySegment out = SCRATCH.get().ptrs;
        MemorySegment first = out.getAtIndex(ValueLayout.ADDRESS, 0);
        MemorySegment second = out.getAtIndex(ValueLayout.ADDRESS, 1);
        return new MlxArray[] {own(first), own(second)};
    }
}
