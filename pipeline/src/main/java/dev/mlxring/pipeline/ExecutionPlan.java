package dev.mlxring.pipeline;

import java.util.List;

/**
 * plan-stage's output, sealed once per request: everything exec-stage and sink-stage need, with
 * defaults resolved. Nothing downstream re-reads request fields or global flags.
 *
 * @param sampling the resolved sampling settings (the executor's own immutable type)
 * @param stopTokenIds ids that end generation and are not emitted (EOS)
 */
public record ExecutionPlan(String requestId, PreparedPrompt prompt, Object sampling, int maxTokens,
        int[] stopTokenIds, List<String> stopStrings, boolean logprobs, int topLogprobs) {
    public ExecutionPlan {
        stopTokenIds = stopTokenIds.clone();
        stopStrings = List.copyOf(stopStrings);
        if (maxTokens < 0) {
            throw new IllegalArgumentException("maxTokens must be >= 0, got " + maxTokens);
        }
    }
}
