package dev.mlxring.pipeline;

import java.util.Map;

/**
 * The sampling fields a request may set, as mlx_lm.server names them; null means "use the
 * engine default". plan-stage resolves these once into the immutable settings exec-stage runs.
 */
public record SamplingSpec(Double temperature, Double topP, Integer topK, Double minP, Double xtcProbability,
        Double xtcThreshold, Double repetitionPenalty, Integer repetitionContextSize, Double presencePenalty,
        Double frequencyPenalty, Map<Integer, Double> logitBias, Long seed) {

    public static final SamplingSpec DEFAULTS =
            new SamplingSpec(null, null, null, null, null, null, null, null, null, null, null, null);

    public SamplingSpec {
        logitBias = logitBias == null ? null : Map.copyOf(logitBias);
    }
}
