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
 * @param toolChoice how the model may or must call the prompt's tools; null = {@link ToolChoiceSpec#DEFAULT}.
 *     A choice that constrains the output (forced, strict or single calls) excludes {@code constraint}:
 *     plan refuses a request with both
 */
public record GenerationRequest(String id, String model, Prompt prompt, SamplingSpec sampling, Integer maxTokens,
        List<String> stop, boolean logprobs, int topLogprobs, OutputConstraint constraint,
        ToolChoiceSpec toolChoice) {

    /** A request whose tool choice is the default ({@code auto}). */
    public GenerationRequest(String id, String model, Prompt prompt, SamplingSpec sampling, Integer maxTokens,
            List<String> stop, boolean logprobs, int topLogprobs, OutputConstraint constraint) {
        this(id, model, prompt, sampling, maxTokens, stop, logprobs, topLogprobs, constraint, null);
    }

    /** A request whose output is free text. */
    public GenerationRequest(String id, String model, Prompt prompt, SamplingSpec sampling, Integer maxTokens,
            List<String> stop, boolean logprobs, int topLogprobs) {
        this(id, model, prompt, sampling, maxTokens, stop, logprobs, topLogprobs, null);
    }

    /** The same request with {@code c} as its output constraint. */
    public GenerationRequest withConstraint(OutputConstraint c) {
        return new GenerationRequest(id, model, prompt, sampling, maxTokens, stop, logprobs, topLogprobs, c,
                toolChoice);
    }

    /** The same request with {@code choice} as its tool choice. */
    public GenerationRequest withToolChoice(ToolChoiceSpec choice) {
        return new GenerationRequest(id, model, prompt, sampling, maxTokens, stop, logprobs, topLogprobs, constraint,
                choice);
    }

    public GenerationRequest {
        // Ingress checks shapes for HTTP; an embedder builds requests directly: name what is missing.
        java.util.Objects.requireNonNull(prompt, "GenerationRequest prompt");
        sampling = sampling == null ? SamplingSpec.DEFAULTS : sampling;
        stop = stop == null ? List.of() : List.copyOf(stop);
        toolChoice = toolChoice == null ? ToolChoiceSpec.DEFAULT : toolChoice;
    }
}
