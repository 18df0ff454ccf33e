package dev.mlxring.exec.nn;

import dev.mlxring.exec.model.ModelLoadException;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.Map;

/** Rotary embeddings as mlx-lm's {@code rope_utils.initialize_rope} builds them. */
public interface Rope extends AutoCloseable {
    MlxArray forward(MlxArray x, int offset);

    @Override
    default void close() {}

    /** The rope types this engine reproduces; anything else is refused at load. */
    String SUPPORTED = "default, linear, llama3";

    static Rope initialize(int dims, double base, boolean traditional, Map<String, Object> scaling) {
        String type = "default";
        if (scaling != null) {
            Object t = scaling.get("type") != null ? scaling.get("type") : scaling.getOrDefault("rope_type", "default");
            type = String.valueOf(t);
        }
        return switch (type) {
            case "default" -> new Standard(dims, traditional, (float) base, 1.0f);
            case "linear" -> new Standard(dims, traditional, (float) base, (float) (1.0 / number(scaling, "factor")));
            case "llama3" -> Llama3.create(dims, traditional, base, scaling);
            default -> throw new ModelLoadException(
                    "rope_scaling type '" + type + "' is not supported (supported: " + SUPPORTED + ")");
        };
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

    /** {@code nn.RoPE}: {@code mx.fast.rope(x, dims, traditional, base, scale, offset)}. */
    record Standard(int dims, boolean traditional, float base, float scale) implements Rope {
        @Override
        public MlxArray forward(MlxArray x, int offset) {
            return Mlx.rope(x, dims, traditional, base, scale, offset);
        }
    }

    /** {@code Llama3RoPE}: precomputed frequencies, {@code base=None}. Owns its freqs array. */
    final class Llama3 implements Rope {
        private final int dims;
        private final boolean traditional;
        private final MlxArray freqs;

        private Llama3(int dims, boolean traditional, MlxArray freqs) {
            this.dims = dims;
            this.traditional = traditional;
            this.freqs = freqs;
        }

        /** Builds the frequency graph op for op as Llama3RoPE.__init__ (Python scalars become float32). */
        static Llama3 create(int dims, boolean traditional, double base, Map<String, Object> cfg) {
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
                MlxArray isMediumFreq = Mlx.logicalAnd(Mlx.greater(wavelens, f32(highFreqWavelen)),
                        Mlx.less(wavelens, f32(lowFreqWavelen)));
                MlxArray smoothFactors = Mlx.divide(
                        Mlx.subtract(Mlx.divide(f32(oldContextLen), wavelens), f32(lowFreqFactor)),
                        f32(highFreqFactor - lowFreqFactor));
                MlxArray smoothFreqs = Mlx.divide(freqs,
                        Mlx.add(Mlx.divide(Mlx.subtract(f32(1), smoothFactors), f32(factor)), smoothFactors));
                MlxArray result = Mlx.where(isMediumFreq, smoothFreqs, freqs);
                Mlx.eval(result); // evaluated here: the exec thread cannot run this thread's stream
                result.detach();
                return new Llama3(dims, traditional, result);
            }
        }

        private static MlxArray f32(double v) {
            return Mlx.scalar(v, Dtype.FLOAT32);
        }

        @Override
        public MlxArray forward(MlxArray x, int offset) {
            return Mlx.rope(x, dims, traditional, 1.0f, offset, freqs);
        }

        @Override
        public void close() {
            freqs.close();
        }
    }
}
