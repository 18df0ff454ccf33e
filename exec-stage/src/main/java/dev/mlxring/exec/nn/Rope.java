package dev.mlxring.exec.nn;

import dev.mlxring.exec.model.ModelLoadException;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.pycompat.PyMath;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Rotary embeddings as mlx-lm 0.32.2's {@code rope_utils.initialize_rope} builds them. Every
 * class reproduces its Python counterpart's MLX op graph op for op: Python scalars meeting an
 * array become arrays of that array's dtype ({@code to_arrays}), Python float arithmetic stays in
 * doubles (with libm's {@code log}/{@code pow}, see {@link PyMath}) until MLX rounds it to float.
 * Each evaluates {@code mx.fast.rope} with the model's {@link CpuKernels}.
 */
public interface Rope extends AutoCloseable {
    MlxArray forward(MlxArray x, int offset);

    /**
     * The same rotation with one offset per batch row ({@code offsets}: int32 {@code [B]}), as
     * mlx-lm calls it with a {@code BatchKVCache}'s {@code offset} array.
     *
     * @throws UnsupportedOperationException for a rope type mlx-lm cannot batch either
     */
    default MlxArray forward(MlxArray x, MlxArray offsets) {
        throw new UnsupportedOperationException(
                getClass().getSimpleName() + " rope does not run in a batch (mlx-lm's version needs an int offset)");
    }

    /**
     * {@code forward(x.reshape(B, L, heads, -1).transpose(0, 2, 1, 3), offset)} for a projection's
     * output {@code x} {@code [B, L, heads * D]}, as the attention modules rotate queries and keys.
     * A rope whose kernels are native may read the heads' view in place (same values, two ops fewer).
     */
    default MlxArray forwardHeads(MlxArray x, int heads, int offset) {
        return forward(headsView(x, heads), offset);
    }

    /** {@link #forwardHeads(MlxArray, int, int)} with one offset per batch row. */
    default MlxArray forwardHeads(MlxArray x, int heads, MlxArray offsets) {
        return forward(headsView(x, heads), offsets);
    }

    /** {@code x.reshape(B, L, heads, -1).transpose(0, 2, 1, 3)}. */
    static MlxArray headsView(MlxArray x, int heads) {
        return Mlx.transpose(Mlx.reshape(x, x.dim(0), x.dim(1), heads, -1), 0, 2, 1, 3);
    }

    /** Whether {@link #forward(MlxArray, MlxArray)} exists: every type but dynamic NTK. */
    default boolean batchable() {
        return !(this instanceof DynamicNtk);
    }

    @Override
    default void close() {}

    /** The rope types this engine reproduces; anything else is refused at load. */
    String SUPPORTED =
            "default, linear, dynamic, llama3, yarn (also deepseek_yarn, telechat3-yarn), longrope, proportional";

    /** As {@link #initialize(int, double, boolean, Map, Integer, CpuKernels)} without max_position_embeddings. */
    static Rope initialize(int dims, double base, boolean traditional, Map<String, Object> scaling) {
        return initialize(dims, base, traditional, scaling, null);
    }

    /** As {@link #initialize(int, double, boolean, Map, Integer, CpuKernels)} with the default kernels. */
    static Rope initialize(
            int dims, double base, boolean traditional, Map<String, Object> scaling, Integer maxPositionEmbeddings) {
        return initialize(dims, base, traditional, scaling, maxPositionEmbeddings, CpuKernels.DEFAULT);
    }

    /**
     * {@code initialize_rope(dims, base, traditional, scaling_config, max_position_embeddings)};
     * {@code maxPositionEmbeddings} is null where the model's ModelArgs leaves it None (llama).
     */
    static Rope initialize(
            int dims,
            double base,
            boolean traditional,
            Map<String, Object> scaling,
            Integer maxPositionEmbeddings,
            CpuKernels kernels) {
        String type = "default";
        if (scaling != null) {
            // scaling_config.get("type") or scaling_config.get("rope_type", "default")
            Object t = scaling.get("type");
            if (t == null || t.equals("") || t.equals(Boolean.FALSE)) {
                t = scaling.getOrDefault("rope_type", "default");
            }
            type = String.valueOf(t);
        }
        return switch (type) {
            case "default" -> new Standard(dims, traditional, (float) base, 1.0f, kernels);
            case "linear" ->
                new Standard(dims, traditional, (float) base, (float) (1.0 / number(scaling, "factor")), kernels);
            case "dynamic" ->
                new DynamicNtk(
                        dims,
                        required(maxPositionEmbeddings, type),
                        traditional,
                        base,
                        number(scaling, "factor"),
                        kernels);
            case "llama3" -> Llama3.create(dims, traditional, base, scaling, kernels);
            case "yarn", "deepseek_yarn", "telechat3-yarn" -> Yarn.create(dims, traditional, base, scaling, kernels);
            case "longrope" -> SuScaled.create(dims, base, required(maxPositionEmbeddings, type), scaling, kernels);
            case "proportional" -> Proportional.create(dims, traditional, base, scaling, kernels);
            default ->
                throw new ModelLoadException(
                        "rope_scaling type '" + type + "' is not supported (supported: " + SUPPORTED + ")");
        };
    }

    private static int required(Integer maxPositionEmbeddings, String type) {
        if (maxPositionEmbeddings == null) {
            // mlx-lm passes None and fails (TypeError) when the rope uses it
            throw new ModelLoadException(
                    "rope_scaling type '" + type + "' needs max_position_embeddings in config.json");
        }
        return maxPositionEmbeddings;
    }

    private static double number(Map<String, Object> m, String key) {
        Object v = m.get(key);
        if (!(v instanceof Number n)) {
            throw new ModelLoadException("rope_scaling." + key + " must be a number, got " + v);
        }
        return n.doubleValue();
    }

    private static double number(Map<String, Object> m, String key, double dflt) {
        return m.containsKey(key) ? number(m, key) : dflt;
    }

    /** A Python float as a float32 0-d array ({@code to_array(v, float32)}). */
    private static MlxArray f32(double v) {
        return Mlx.scalar(v, Dtype.FLOAT32);
    }

    /**
     * {@code x.at[..., :dims].multiply(v)} for a Python float {@code v}: mlx's binding makes
     * {@code v} an array of x's dtype through float ({@code mx::array(nb::cast<float>(v), dtype)})
     * and lowers the basic slice to {@code slice_update_prod} (a plain multiply when dims covers
     * the last axis).
     */
    private static MlxArray multiplyLeading(MlxArray x, int dims, double v) {
        int n = x.ndim();
        int[] start = new int[n];
        int[] stop = x.shape();
        int[] strides = new int[n];
        Arrays.fill(strides, 1);
        stop[n - 1] = Math.min(dims, stop[n - 1]);
        return Mlx.sliceUpdateProd(x, Mlx.scalar((float) v, x.dtype()), start, stop, strides);
    }

    /** {@code base ** (mx.arange(0, dims, 2, dtype=mx.float32) / dims)} (yarn, longrope). */
    private static MlxArray baseFreqs(int dims, double base) {
        return Mlx.power(f32(base), Mlx.divide(Mlx.arange(0, dims, 2, Dtype.FLOAT32), f32(dims)));
    }

    /** Evaluates a load-time frequency array and detaches it from the scope that built it. */
    private static MlxArray keep(MlxArray freqs) {
        Mlx.eval(freqs); // evaluated here: the exec thread cannot run this thread's stream
        return freqs.detach();
    }

    /** {@code nn.RoPE}: {@code mx.fast.rope(x, dims, traditional, base, scale, offset)}. */
    record Standard(int dims, boolean traditional, float base, float scale, CpuKernels kernels) implements Rope {
        @Override
        public MlxArray forward(MlxArray x, int offset) {
            return Mlx.rope(kernels, x, dims, traditional, base, scale, offset);
        }

        @Override
        public MlxArray forward(MlxArray x, MlxArray offsets) {
            return Mlx.rope(kernels, x, dims, traditional, base, scale, offsets);
        }

        @Override
        public MlxArray forwardHeads(MlxArray x, int heads, int offset) {
            return kernels == CpuKernels.NATIVE
                    ? Mlx.nativeRopeHeads(x, heads, dims, traditional, base, scale, offset, null, null)
                    : Rope.super.forwardHeads(x, heads, offset);
        }

        @Override
        public MlxArray forwardHeads(MlxArray x, int heads, MlxArray offsets) {
            return kernels == CpuKernels.NATIVE
                    ? Mlx.nativeRopeHeads(x, heads, dims, traditional, base, scale, 0, offsets, null)
                    : Rope.super.forwardHeads(x, heads, offsets);
        }
    }

    /** {@code Llama3RoPE}: precomputed frequencies, {@code base=None}. Owns its freqs array. */
    final class Llama3 implements Rope {
        private final int dims;
        private final boolean traditional;
        private final MlxArray freqs;
        private final CpuKernels kernels;

        private Llama3(int dims, boolean traditional, MlxArray freqs, CpuKernels kernels) {
            this.dims = dims;
            this.traditional = traditional;
            this.freqs = freqs;
            this.kernels = kernels;
        }

        public int dims() {
            return dims;
        }

        public boolean traditional() {
            return traditional;
        }

        /** The precomputed frequencies {@code [dims / 2]}, owned by this rope. */
        public MlxArray freqs() {
            return freqs;
        }

        /** Builds the frequency graph op for op as Llama3RoPE.__init__ (Python scalars become float32). */
        static Llama3 create(int dims, boolean traditional, double base, Map<String, Object> cfg, CpuKernels kernels) {
            double factor = number(cfg, "factor");
            double lowFreqFactor = number(cfg, "low_freq_factor", 1.0);
            double highFreqFactor = number(cfg, "high_freq_factor", 4.0);
            double oldContextLen = number(cfg, "original_max_position_embeddings", 8192);
            double lowFreqWavelen = oldContextLen / lowFreqFactor;
            double highFreqWavelen = oldContextLen / highFreqFactor;
            try (ArrayScope s = ArrayScope.open()) {
                MlxArray exponents = Mlx.divide(Mlx.arange(0, dims, 2, Dtype.INT32), Mlx.scalar(dims, Dtype.INT32));
                MlxArray freqs = Mlx.power(f32(base), exponents);
                MlxArray wavelens = Mlx.multiply(freqs, f32(2 * Math.PI));
                freqs = Mlx.where(Mlx.greater(wavelens, f32(lowFreqWavelen)), Mlx.multiply(freqs, f32(factor)), freqs);
                MlxArray isMediumFreq = Mlx.logicalAnd(
                        Mlx.greater(wavelens, f32(highFreqWavelen)), Mlx.less(wavelens, f32(lowFreqWavelen)));
                MlxArray smoothFactors = Mlx.divide(
                        Mlx.subtract(Mlx.divide(f32(oldContextLen), wavelens), f32(lowFreqFactor)),
                        f32(highFreqFactor - lowFreqFactor));
                MlxArray smoothFreqs = Mlx.divide(
                        freqs, Mlx.add(Mlx.divide(Mlx.subtract(f32(1), smoothFactors), f32(factor)), smoothFactors));
                return new Llama3(dims, traditional, keep(Mlx.where(isMediumFreq, smoothFreqs, freqs)), kernels);
            }
        }

        @Override
        public MlxArray forward(MlxArray x, int offset) {
            return Mlx.rope(kernels, x, dims, traditional, 1.0f, offset, freqs);
        }

        @Override
        public MlxArray forward(MlxArray x, MlxArray offsets) {
            return Mlx.rope(kernels, x, dims, traditional, 1.0f, offsets, freqs);
        }

        @Override
        public MlxArray forwardHeads(MlxArray x, int heads, int offset) {
            return kernels == CpuKernels.NATIVE
                    ? Mlx.nativeRopeHeads(x, heads, dims, traditional, null, 1.0f, offset, null, freqs)
                    : Rope.super.forwardHeads(x, heads, offset);
        }

        @Override
        public MlxArray forwardHeads(MlxArray x, int heads, MlxArray offsets) {
            return kernels == CpuKernels.NATIVE
                    ? Mlx.nativeRopeHeads(x, heads, dims, traditional, null, 1.0f, 0, offsets, freqs)
                    : Rope.super.forwardHeads(x, heads, offsets);
        }

        @Override
        public void close() {
            freqs.close();
        }
    }

    /**
     * {@code DynamicNTKScalingRoPE}: {@code mx.fast.rope} with a base that grows with
     * {@code max(seq_len + offset, max_position_embeddings)} at each call.
     */
    record DynamicNtk(
            int dims, int maxPositionEmbeddings, boolean traditional, double base, double factor, CpuKernels kernels)
            implements Rope {
        @Override
        public MlxArray forward(MlxArray x, int offset) {
            // x.shape: [batch, num_heads, seq_len, head_dim]
            int seqLen = Math.max(x.dim(x.ndim() - 2) + offset, maxPositionEmbeddings);
            double b = base
                    * PyMath.pow((factor * seqLen / maxPositionEmbeddings) - (factor - 1), (double) dims / (dims - 2));
            return Mlx.rope(kernels, x, dims, traditional, (float) b, 1.0f, offset);
        }
    }

    /** {@code YarnRoPE} (with initialize_rope's defaults for the keys a config leaves out). */
    final class Yarn implements Rope {
        private final int dims;
        private final boolean traditional;
        private final double mscale;
        private final MlxArray freqs;
        private final CpuKernels kernels;

        private Yarn(int dims, boolean traditional, double mscale, MlxArray freqs, CpuKernels kernels) {
            this.dims = dims;
            this.traditional = traditional;
            this.mscale = mscale;
            this.freqs = freqs;
            this.kernels = kernels;
        }

        static Yarn create(int dims, boolean traditional, double base, Map<String, Object> cfg, CpuKernels kernels) {
            double scalingFactor = number(cfg, "factor");
            double originalMax = number(cfg, "original_max_position_embeddings", 4096);
            double betaFast = number(cfg, "beta_fast", 32);
            double betaSlow = number(cfg, "beta_slow", 1);
            double mscaleCfg = number(cfg, "mscale", 1);
            double mscaleAllDim = number(cfg, "mscale_all_dim", 0);

            double mscale = getMscale(scalingFactor, mscaleCfg) / getMscale(scalingFactor, mscaleAllDim);
            // yarn_find_correction_range: math.floor / math.ceil of Python floats, then clamped
            long low = Math.max((long) Math.floor(correctionDim(dims, base, originalMax, betaFast)), 0);
            long high = Math.min((long) Math.ceil(correctionDim(dims, base, originalMax, betaSlow)), dims - 1);
            try (ArrayScope s = ArrayScope.open()) {
                MlxArray freqExtra = baseFreqs(dims, base);
                MlxArray freqInter = Mlx.multiply(f32(scalingFactor), freqExtra);
                MlxArray freqMask = Mlx.subtract(f32(1.0), linearRampMask(low, high, dims / 2));
                MlxArray num = Mlx.multiply(freqInter, freqExtra);
                MlxArray den = Mlx.add(
                        Mlx.multiply(freqInter, freqMask), Mlx.multiply(freqExtra, Mlx.subtract(f32(1), freqMask)));
                return new Yarn(dims, traditional, mscale, keep(Mlx.divide(num, den)), kernels);
            }
        }

        /** yarn_find_correction_dim, in Python float arithmetic. */
        private static double correctionDim(int dims, double base, double originalMax, double numRotations) {
            return (dims * PyMath.log(originalMax / (numRotations * 2 * Math.PI))) / (2 * PyMath.log(base));
        }

        /** yarn_get_mscale. */
        private static double getMscale(double scale, double mscale) {
            if (scale <= 1) {
                return 1.0;
            }
            return 0.1 * mscale * PyMath.log(scale) + 1.0;
        }

        /** yarn_linear_ramp_mask: {@code clip((arange(dim, float32) - min) / (max - min), 0, 1)}. */
        private static MlxArray linearRampMask(long minVal, long maxVal, int dim) {
            double range = minVal == maxVal ? (maxVal + 0.001) - minVal : (double) (maxVal - minVal);
            MlxArray linear = Mlx.divide(Mlx.subtract(Mlx.arange(0, dim, 1, Dtype.FLOAT32), f32(minVal)), f32(range));
            // mx.clip(a, 0, 1) = minimum(maximum(a, 0), 1)
            return Mlx.minimum(Mlx.maximum(linear, f32(0)), f32(1));
        }

        @Override
        public MlxArray forward(MlxArray x, int offset) {
            if (mscale != 1.0) {
                x = multiplyLeading(x, dims, mscale);
            }
            return Mlx.rope(kernels, x, dims, traditional, 1.0f, offset, freqs);
        }

        @Override
        public MlxArray forward(MlxArray x, MlxArray offsets) {
            if (mscale != 1.0) {
                x = multiplyLeading(x, dims, mscale);
            }
            return Mlx.rope(kernels, x, dims, traditional, 1.0f, offsets, freqs);
        }

        @Override
        public void close() {
            freqs.close();
        }
    }

    /**
     * {@code SuScaledRoPE} ("longrope"): long_factor-scaled frequencies, input scaled by
     * {@code sqrt(1 + log(factor) / log(original))} on every call, always non-traditional.
     */
    final class SuScaled implements Rope {
        private final int dims;
        private final double scale;
        private final MlxArray freqs;
        private final CpuKernels kernels;

        private SuScaled(int dims, double scale, MlxArray freqs, CpuKernels kernels) {
            this.dims = dims;
            this.scale = scale;
            this.freqs = freqs;
            this.kernels = kernels;
        }

        static SuScaled create(
                int dims, double base, int maxPositionEmbeddings, Map<String, Object> cfg, CpuKernels kernels) {
            if (!cfg.containsKey("short_factor")) {
                throw new ModelLoadException("rope_scaling.short_factor is missing (longrope)");
            }
            return of(
                    dims,
                    base,
                    maxPositionEmbeddings,
                    number(cfg, "original_max_position_embeddings"),
                    cfg.get("long_factor"),
                    kernels);
        }

        /**
         * {@code SuScaledRoPE(dims, base, max_position_embeddings, original_max_position_embeddings,
         * long_factor=...)} as a model builds it directly (phi3), without long_mscale.
         */
        public static SuScaled of(
                int dims,
                double base,
                int maxPositionEmbeddings,
                double originalMax,
                Object longFactorValue,
                CpuKernels kernels) {
            double factor = maxPositionEmbeddings / originalMax;
            // long_mscale is never passed (by initialize_rope nor by phi3)
            double scale = factor <= 1.0 ? 1.0 : Math.sqrt(1 + PyMath.log(factor) / PyMath.log(originalMax));
            try (ArrayScope s = ArrayScope.open()) {
                MlxArray longFactor = factorArray(longFactorValue, dims);
                return new SuScaled(dims, scale, keep(Mlx.multiply(longFactor, baseFreqs(dims, base))), kernels);
            }
        }

        /** {@code mx.array(long_factor, dtype=mx.float32)}: a number or a list of numbers. */
        private static MlxArray factorArray(Object v, int dims) {
            if (v instanceof Number n) {
                return Mlx.scalar(n.floatValue(), Dtype.FLOAT32);
            }
            if (!(v instanceof List<?> list) || list.isEmpty()) {
                throw new ModelLoadException(
                        "rope_scaling.long_factor must be a number or a list of numbers, got " + v);
            }
            if (list.size() != dims / 2 && list.size() != 1) {
                throw new ModelLoadException("rope_scaling.long_factor has " + list.size() + " entries, expected "
                        + dims / 2 + " (head_dim / 2)");
            }
            float[] values = new float[list.size()];
            for (int i = 0; i < values.length; i++) {
                if (!(list.get(i) instanceof Number n)) {
                    throw new ModelLoadException(
                            "rope_scaling.long_factor[" + i + "] must be a number, got " + list.get(i));
                }
                values[i] = n.floatValue();
            }
            return Mlx.fromFloats(values, values.length);
        }

        @Override
        public MlxArray forward(MlxArray x, int offset) {
            return Mlx.rope(kernels, multiplyLeading(x, dims, scale), dims, false, 1.0f, offset, freqs);
        }

        @Override
        public MlxArray forward(MlxArray x, MlxArray offsets) {
            return Mlx.rope(kernels, multiplyLeading(x, dims, scale), dims, false, 1.0f, offsets, freqs);
        }

        @Override
        public void close() {
            freqs.close();
        }
    }
    /**
     * {@code ProportionalRoPE} (Gemma 4's full-attention layers): the first
     * {@code int(dims * partial_rotary_factor)} dimensions rotate at
     * {@code factor * base ** (arange(0, rotated, 2) / dims)}, the rest get infinite wavelengths
     * (no rotation); {@code mx.fast.rope(x, dims, base=None, scale=1.0, freqs=...)}. Owns its freqs.
     */
    final class Proportional implements Rope {
        private final int dims;
        private final boolean traditional;
        private final MlxArray freqs;
        private final CpuKernels kernels;

        private Proportional(int dims, boolean traditional, MlxArray freqs, CpuKernels kernels) {
            this.dims = dims;
            this.traditional = traditional;
            this.freqs = freqs;
            this.kernels = kernels;
        }

        static Proportional create(
                int dims, boolean traditional, double base, Map<String, Object> cfg, CpuKernels kernels) {
            // rotated_dims = int(dims * scaling_config.get("partial_rotary_factor", 1.0))
            int rotated = (int) (dims * number(cfg, "partial_rotary_factor", 1.0));
            double factor = number(cfg, "factor", 1.0);
            if (rotated > dims) {
                throw new ModelLoadException("rotated_dims should be smaller than dims (proportional rope: " + rotated
                        + " of " + dims + ")");
            }
            try (ArrayScope s = ArrayScope.open()) {
                MlxArray exponents = Mlx.divide(Mlx.arange(0, rotated, 2, Dtype.FLOAT32), f32(dims));
                int still = (dims - rotated) / 2;
                float[] inf = new float[still];
                Arrays.fill(inf, Float.POSITIVE_INFINITY);
                MlxArray freqs = Mlx.concatenate(
                        0, Mlx.multiply(f32(factor), Mlx.power(f32(base), exponents)), Mlx.fromFloats(inf, still));
                return new Proportional(dims, traditional, keep(freqs), kernels);
            }
        }

        @Override
        public MlxArray forward(MlxArray x, int offset) {
            return Mlx.rope(kernels, x, dims, traditional, 1.0f, offset, freqs);
        }

        @Override
        public MlxArray forward(MlxArray x, MlxArray offsets) {
            return Mlx.rope(kernels, x, dims, traditional, 1.0f, offsets, freqs);
        }

        @Override
        public void close() {
            freqs.close();
        }
    }
}
