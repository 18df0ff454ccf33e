package dev.mlxring.pipeline;

import java.util.List;

/**
 * One completion request after protocol parsing: immutable, validated for shape by ingress.
 *
 * @param maxTokens tokens to generate at most; null = the engine default
 * @param stop stop strings (the text up to, not including, the first match is returned)
 * @param logprobs whether to report the chosen tokens' log-probabilities
 * @param topLogprobs how many alternatives to report per token (0 = none)
 * @param constraint what the output must match (a JSON schema, grammar or regex); null = free text
 */
public record GenerationRequest(String id, String model, Prompt prompt, SamplingSpec sampling, Integer maxTokens,
        List<String> stop, boolean logprobs, int topLogprobs, OutputConstraint constraint) {

    /** A request whose output is free text. */
    public GenerationRequest(String id, String model, Prompt prompt, SamplingSpec sampling, Integer maxTokens,
            List<String> stop, boolean logprobs, int topLogprobs) {
        this(id, model, prompt, sampling, maxTokens, stop, logprobs, topLogprobs, null);
    }

    /** The same request with {@code c} as its output constraint. */
    public GenerationRequest withConstraint(OutputConstraint c) {
        return new GenerationRequest(id, model, prompt, sampling, maxTokens, stop, logprobs, topLogprobs, c);
    }

    public GenerationRequest {
        // Ingress checks shapes for HTTP; an embedder builds requests directly: name what is missing.
        java.util.Objects.requireNonNull(prompt, "GenerationRequest prompt");
        sampling = sampling == null ? SamplingSpec.DEFAULTS : sampling;
        stop = stop == null ? List.of() : List.copyOf(stop);
    }
}
