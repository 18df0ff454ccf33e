package dev.mlxring.pipeline;

import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * How one request picks its tokens: mlx-lm's {@code make_sampler} and
 * {@code make_logits_processors} arguments plus the request seed and the logprobs it wants back,
 * named and defaulted as {@code mlx_lm.server} names and defaults them. Immutable and validated on
 * construction: an out-of-range value raises {@link IllegalArgumentException} naming the field
 * (as the server names it) and the allowed range. See docs/sampling.md.
 *
 * @param temperature {@code temperature}, >= 0; 0 = greedy (argmax; every other sampler field is then unused)
 * @param topP {@code top_p}, in [0, 1]; applied only when 0 < top_p < 1
 * @param minP {@code min_p}, in [0, 1]; applied only when != 0
 * @param minTokensToKeep {@code min_tokens_to_keep} of min-p, >= 1
 * @param topK {@code top_k}, >= 0; 0 = off (must also be below the vocabulary size when on)
 * @param xtcProbability {@code xtc_probability}, in [0, 1]; applied only when > 0
 * @param xtcThreshold {@code xtc_threshold}, in [0, 0.5] (mlx-lm's apply_xtc range)
 * @param xtcSpecialTokens ids XTC never removes (mlx-lm: the ids of "\n" plus the EOS ids)
 * @param logitBias {@code logit_bias}: token id -> additive bias (insertion order kept); empty = off
 * @param repetitionPenalty {@code repetition_penalty}, >= 0; 0 = off
 * @param repetitionContextSize {@code repetition_context_size}, >= 0 (0 = the whole history, as mlx-lm's {@code tokens[-0:]})
 * @param presencePenalty {@code presence_penalty}, any finite value; 0 = off
 * @param presenceContextSize {@code presence_context_size}, >= 0
 * @param frequencyPenalty {@code frequency_penalty}, any finite value; 0 = off
 * @param frequencyContextSize {@code frequency_context_size}, >= 0
 * @param seed {@code seed}: null = draw from the engine generator; else >= 0, as {@code mx.random.seed(seed)}
 * @param logprobs {@code logprobs}: report each chosen token's logprob
 * @param topLogprobs {@code top_logprobs}, in [0, 11] (mlx_lm.server's limit); 0 = none
 */
public record SamplingParams(
        double temperature,
        double topP,
        double minP,
        int minTokensToKeep,
        int topK,
        double xtcProbability,
        double xtcThreshold,
        int[] xtcSpecialTokens,
        Map<Integer, Double> logitBias,
        double repetitionPenalty,
        int repetitionContextSize,
        double presencePenalty,
        int presenceContextSize,
        double frequencyPenalty,
        int frequencyContextSize,
        Long seed,
        boolean logprobs,
        int topLogprobs) {

    /** mlx_lm.server's largest accepted {@code top_logprobs}. */
    public static final int MAX_TOP_LOGPROBS = 11;

    public static final int DEFAULT_CONTEXT_SIZE = 20;
    public static final double DEFAULT_XTC_THRESHOLD = 0.1;

    /** Greedy decoding, nothing else: mlx-lm's defaults. */
    public static final SamplingParams GREEDY = builder().build();

    public SamplingParams {
        finiteAtLeast("temperature", temperature, 0);
        inRange("top_p", topP, 0, 1);
        inRange("min_p", minP, 0, 1);
        if (minTokensToKeep < 1) {
            throw range("min_tokens_to_keep", minTokensToKeep, "[1, +inf)");
        }
        if (topK < 0) {
            throw range("top_k", topK, "[0, +inf)");
        }
        inRange("xtc_probability", xtcProbability, 0, 1);
        inRange("xtc_threshold", xtcThreshold, 0, 0.5);
        xtcSpecialTokens = xtcSpecialTokens == null ? new int[0] : xtcSpecialTokens.clone();
        for (int t : xtcSpecialTokens) {
            if (t < 0) {
                throw range("xtc_special_tokens", t, "[0, vocabulary size)");
            }
        }
        LinkedHashMap<Integer, Double> bias = new LinkedHashMap<>();
        if (logitBias != null) {
            for (Map.Entry<Integer, Double> e : logitBias.entrySet()) {
                if (e.getKey() == null || e.getKey() < 0) {
                    throw new IllegalArgumentException(
                            "logit_bias keys must be token ids in [0, vocabulary size), got " + e.getKey());
                }
                if (e.getValue() == null || !Double.isFinite(e.getValue())) {
                    throw new IllegalArgumentException(
                            "logit_bias[" + e.getKey() + "] must be a finite number, got " + e.getValue());
                }
                bias.put(e.getKey(), e.getValue());
            }
        }
        logitBias = Collections.unmodifiableMap(bias);
        finiteAtLeast("repetition_penalty", repetitionPenalty, 0);
        contextSize("repetition_context_size", repetitionContextSize);
        finite("presence_penalty", presencePenalty);
        contextSize("presence_context_size", presenceContextSize);
        finite("frequency_penalty", frequencyPenalty);
        contextSize("frequency_context_size", frequencyContextSize);
        if (seed != null && seed < 0) {
            throw range("seed", seed, "[0, 2^63) (an unsigned 64-bit seed, as mx.random.seed)");
        }
        if (topLogprobs < 0 || topLogprobs > MAX_TOP_LOGPROBS) {
            throw range("top_logprobs", topLogprobs, "[0, " + MAX_TOP_LOGPROBS + "]");
        }
    }

    /** True when tokens come from argmax ({@code temperature == 0}): make_sampler's greedy_sampler. */
    public boolean greedy() {
        return temperature == 0;
    }

    /** True when no logits processor is active (make_logits_processors returns an empty list). */
    public boolean noLogitsProcessors() {
        return logitBias.isEmpty() && repetitionPenalty == 0 && presencePenalty == 0 && frequencyPenalty == 0;
    }

    /** The defining arrays are copied in and out: the record stays immutable. */
    @Override
    public int[] xtcSpecialTokens() {
        return xtcSpecialTokens.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SamplingParams p
                && Double.compare(temperature, p.temperature) == 0
                && Double.compare(topP, p.topP) == 0
                && Double.compare(minP, p.minP) == 0
                && minTokensToKeep == p.minTokensToKeep
                && topK == p.topK
                && Double.compare(xtcProbability, p.xtcProbability) == 0
                && Double.compare(xtcThreshold, p.xtcThreshold) == 0
                && Arrays.equals(xtcSpecialTokens, p.xtcSpecialTokens)
                && logitBias.equals(p.logitBias)
                && Double.compare(repetitionPenalty, p.repetitionPenalty) == 0
                && repetitionContextSize == p.repetitionContextSize
                && Double.compare(presencePenalty, p.presencePenalty) == 0
                && presenceContextSize == p.presenceContextSize
                && Double.compare(frequencyPenalty, p.frequencyPenalty) == 0
                && frequencyContextSize == p.frequencyContextSize
                && java.util.Objects.equals(seed, p.seed)
                && logprobs == p.logprobs
                && topLogprobs == p.topLogprobs;
    }

    @Override
    public int hashCode() {
        return java.util.Objects.hash(
                temperature,
                topP,
                minP,
                minTokensToKeep,
                topK,
                xtcProbability,
                xtcThreshold,
                Arrays.hashCode(xtcSpecialTokens),
                logitBias,
                repetitionPenalty,
                repetitionContextSize,
                presencePenalty,
                presenceContextSize,
                frequencyPenalty,
                frequencyContextSize,
                seed,
                logprobs,
                topLogprobs);
    }

    @Override
    public String toString() {
        return "SamplingParams[temperature=" + temperature + ", top_p=" + topP + ", min_p=" + minP
                + ", min_tokens_to_keep=" + minTokensToKeep + ", top_k=" + topK + ", xtc_probability="
                + xtcProbability + ", xtc_threshold=" + xtcThreshold + ", xtc_special_tokens="
                + Arrays.toString(xtcSpecialTokens) + ", logit_bias=" + logitBias + ", repetition_penalty="
                + repetitionPenalty + "/" + repetitionContextSize + ", presence_penalty=" + presencePenalty + "/"
                + presenceContextSize + ", frequency_penalty=" + frequencyPenalty + "/" + frequencyContextSize
                + ", seed=" + seed + ", logprobs=" + logprobs + ", top_logprobs=" + topLogprobs + "]";
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder preset to this record's values. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.temperature = temperature;
        b.topP = topP;
        b.minP = minP;
        b.minTokensToKeep = minTokensToKeep;
        b.topK = topK;
        b.xtcProbability = xtcProbability;
        b.xtcThreshold = xtcThreshold;
        b.xtcSpecialTokens = xtcSpecialTokens.clone();
        b.logitBias = new LinkedHashMap<>(logitBias);
        b.repetitionPenalty = repetitionPenalty;
        b.repetitionContextSize = repetitionContextSize;
        b.presencePenalty = presencePenalty;
        b.presenceContextSize = presenceContextSize;
        b.frequencyPenalty = frequencyPenalty;
        b.frequencyContextSize = frequencyContextSize;
        b.seed = seed;
        b.logprobs = logprobs;
        b.topLogprobs = topLogprobs;
        return b;
    }

    /** Starts from mlx_lm.server's defaults (greedy, top_p 1, xtc_threshold 0.1, context sizes 20). */
    public static final class Builder {
        private double temperature = 0;
        private double topP = 1.0;
        private double minP = 0;
        private int minTokensToKeep = 1;
        private int topK = 0;
        private double xtcProbability = 0;
        private double xtcThreshold = DEFAULT_XTC_THRESHOLD;
        private int[] xtcSpecialTokens = new int[0];
        private Map<Integer, Double> logitBias = new LinkedHashMap<>();
        private double repetitionPenalty = 0;
        private int repetitionContextSize = DEFAULT_CONTEXT_SIZE;
        private double presencePenalty = 0;
        private int presenceContextSize = DEFAULT_CONTEXT_SIZE;
        private double frequencyPenalty = 0;
        private int frequencyContextSize = DEFAULT_CONTEXT_SIZE;
        private Long seed;
        private boolean logprobs;
        private int topLogprobs;

        private Builder() {}

        public Builder temperature(double v) {
            temperature = v;
            return this;
        }

        public Builder topP(double v) {
            topP = v;
            return this;
        }

        public Builder minP(double v) {
            minP = v;
            return this;
        }

        public Builder minTokensToKeep(int v) {
            minTokensToKeep = v;
            return this;
        }

        public Builder topK(int v) {
            topK = v;
            return this;
        }

        public Builder xtcProbability(double v) {
            xtcProbability = v;
            return this;
        }

        public Builder xtcThreshold(double v) {
            xtcThreshold = v;
            return this;
        }

        public Builder xtcSpecialTokens(int... v) {
            xtcSpecialTokens = v.clone();
            return this;
        }

        public Builder logitBias(Map<Integer, Double> v) {
            logitBias = new LinkedHashMap<>(v);
            return this;
        }

        public Builder repetitionPenalty(double v) {
            repetitionPenalty = v;
            return this;
        }

        public Builder repetitionContextSize(int v) {
            repetitionContextSize = v;
            return this;
        }

        public Builder presencePenalty(double v) {
            presencePenalty = v;
            return this;
        }

        public Builder presenceContextSize(int v) {
            presenceContextSize = v;
            return this;
        }

        public Builder frequencyPenalty(double v) {
            frequencyPenalty = v;
            return this;
        }

        public Builder frequencyContextSize(int v) {
            frequencyContextSize = v;
            return this;
        }

        /** null = draw from the engine generator. */
        public Builder seed(Long v) {
            seed = v;
            return this;
        }

        public Builder logprobs(boolean v) {
            logprobs = v;
            return this;
        }

        public Builder topLogprobs(int v) {
            topLogprobs = v;
            return this;
        }

        public SamplingParams build() {
            return new SamplingParams(
                    temperature,
                    topP,
                    minP,
                    minTokensToKeep,
                    topK,
                    xtcProbability,
                    xtcThreshold,
                    xtcSpecialTokens,
                    logitBias,
                    repetitionPenalty,
                    repetitionContextSize,
                    presencePenalty,
                    presenceContextSize,
                    frequencyPenalty,
                    frequencyContextSize,
                    seed,
                    logprobs,
                    topLogprobs);
        }
    }

    private static IllegalArgumentException range(String field, Object value, String allowed) {
        return new IllegalArgumentException(field + " must be in " + allowed + ", got " + value);
    }

    private static void finite(String field, double v) {
        if (!Double.isFinite(v)) {
            throw range(field, v, "(-inf, +inf) (a finite number)");
        }
    }

    private static void finiteAtLeast(String field, double v, double min) {
        if (!Double.isFinite(v) || v < min) {
            throw range(field, v, "[" + fmt(min) + ", +inf)");
        }
    }

    private static void inRange(String field, double v, double min, double max) {
        if (!(v >= min && v <= max)) {
            throw range(field, v, "[" + fmt(min) + ", " + fmt(max) + "]");
        }
    }

    private static void contextSize(String field, int v) {
        if (v < 0) {
            throw range(field, v, "[0, +inf) (0 = the whole history)");
        }
    }

    private static String fmt(double v) {
        return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
    }
}
