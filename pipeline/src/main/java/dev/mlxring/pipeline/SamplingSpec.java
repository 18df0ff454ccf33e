package dev.mlxring.pipeline;

import java.util.Map;

/**
 * The sampling fields a request may set, as mlx_lm.server names them; null means "use the
 * engine default". plan-stage resolves these once into the immutable settings exec-stage runs
 * and refuses out-of-range values, naming the field. {@link #builder()} names the fields a host
 * sets.
 */
public record SamplingSpec(
        Double temperature,
        Double topP,
        Integer topK,
        Double minP,
        Double xtcProbability,
        Double xtcThreshold,
        Double repetitionPenalty,
        Integer repetitionContextSize,
        Double presencePenalty,
        Double frequencyPenalty,
        Map<Integer, Double> logitBias,
        Long seed) {

    public static final SamplingSpec DEFAULTS =
            new SamplingSpec(null, null, null, null, null, null, null, null, null, null, null, null);

    /** A builder with every field unset (the engine's defaults). */
    public static Builder builder() {
        return new Builder();
    }

    public SamplingSpec {
        logitBias = logitBias == null ? null : Map.copyOf(logitBias);
    }

    /** Names each field of a {@link SamplingSpec}; a field not set stays null (the engine's default). */
    public static final class Builder {
        private Double temperature;
        private Double topP;
        private Integer topK;
        private Double minP;
        private Double xtcProbability;
        private Double xtcThreshold;
        private Double repetitionPenalty;
        private Integer repetitionContextSize;
        private Double presencePenalty;
        private Double frequencyPenalty;
        private Map<Integer, Double> logitBias;
        private Long seed;

        private Builder() {}

        /** 0 = greedy argmax. */
        public Builder temperature(double t) {
            temperature = t;
            return this;
        }

        public Builder topP(double p) {
            topP = p;
            return this;
        }

        /** 0 = off. */
        public Builder topK(int k) {
            topK = k;
            return this;
        }

        public Builder minP(double p) {
            minP = p;
            return this;
        }

        public Builder xtc(double probability, double threshold) {
            xtcProbability = probability;
            xtcThreshold = threshold;
            return this;
        }

        public Builder repetitionPenalty(double penalty, int contextSize) {
            repetitionPenalty = penalty;
            repetitionContextSize = contextSize;
            return this;
        }

        public Builder presencePenalty(double penalty) {
            presencePenalty = penalty;
            return this;
        }

        public Builder frequencyPenalty(double penalty) {
            frequencyPenalty = penalty;
            return this;
        }

        /** Added to the logits of the given token ids before sampling. */
        public Builder logitBias(Map<Integer, Double> bias) {
            logitBias = bias;
            return this;
        }

        /** Seeds this request's sampling: the same seed, the same tokens. */
        public Builder seed(long s) {
            seed = s;
            return this;
        }

        public SamplingSpec build() {
            return new SamplingSpec(
                    temperature,
                    topP,
                    topK,
                    minP,
                    xtcProbability,
                    xtcThreshold,
                    repetitionPenalty,
                    repetitionContextSize,
                    presencePenalty,
                    frequencyPenalty,
                    logitBias,
                    seed);
        }
    }
}
