package dev.mlxring.pipeline;

import java.util.List;

/**
 * One completion request after protocol parsing: immutable, validated for shape by ingress. An
 * embedding host names what it sets through {@link #builder()}:
 *
 * <pre>{@code
 * GenerationRequest request = GenerationRequest.builder()
 *         .userMessage("What is the capital of France?")
 *         .maxTokens(32)
 *         .sampling(SamplingSpec.builder().temperature(0.7).seed(42L).build())
 *         .stop("\n\n")
 *         .build();
 * }</pre>
 *
 * @param id the session's id; null = the engine assigns {@code req-N}
 * @param model the model name a protocol layer echoes back; the engine does not read it
 * @param prompt what the model continues (required)
 * @param sampling the sampling fields set; null = {@link SamplingSpec#DEFAULTS} (every field the engine default)
 * @param maxTokens tokens to generate at most; null = the engine default
 * @param stop stop strings (the text up to, not including, the first match is returned)
 * @param logprobs whether to report the chosen tokens' log-probabilities
 * @param topLogprobs how many alternatives to report per token (0 = none)
 * @param constraint what the output must match (a JSON schema, grammar or regex); null = free text
 * @param toolChoice how the model may or must call the prompt's tools; null = {@link ToolChoiceSpec#DEFAULT}.
 *     A choice that constrains the output (forced, strict or single calls) excludes {@code constraint}:
 *     plan refuses a request with both
 * @param speculative the request's speculative-decoding choice; null = the server's default
 * @param adapter the named adapter ({@code serve --adapter NAME=DIR}) to serve the request with;
 *     null = the base model. Resolved from the protocol's fields by ingress; a name the engine does
 *     not serve fails the request as invalid
 */
public record GenerationRequest(
        String id,
        String model,
        Prompt prompt,
        SamplingSpec sampling,
        Integer maxTokens,
        List<String> stop,
        boolean logprobs,
        int topLogprobs,
        OutputConstraint constraint,
        ToolChoiceSpec toolChoice,
        SpeculativeSpec speculative,
        String adapter) {

    /** The same request with {@code c} as its output constraint. */
    public GenerationRequest withConstraint(OutputConstraint c) {
        return toBuilder().constraint(c).build();
    }

    /** The same request with {@code choice} as its tool choice. */
    public GenerationRequest withToolChoice(ToolChoiceSpec choice) {
        return toBuilder().toolChoice(choice).build();
    }

    /** The same request with {@code spec} as its speculative-decoding choice (null: the server's default). */
    public GenerationRequest withSpeculative(SpeculativeSpec spec) {
        return toBuilder().speculative(spec).build();
    }

    /** The same request served with the named adapter {@code name} (null: the base model). */
    public GenerationRequest withAdapter(String name) {
        return toBuilder().adapter(name).build();
    }

    /** A builder with nothing set: {@link Builder#build()} needs a prompt; every other field has its default. */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder with every field of this request set, for a copy that changes some. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.id = id;
        b.model = model;
        b.prompt = prompt;
        b.sampling = sampling;
        b.maxTokens = maxTokens;
        b.stop = stop;
        b.logprobs = logprobs;
        b.topLogprobs = topLogprobs;
        b.constraint = constraint;
        b.toolChoice = toolChoice;
        b.speculative = speculative;
        b.adapter = adapter;
        return b;
    }

    public GenerationRequest {
        // Ingress checks shapes for HTTP; an embedder builds requests directly: name what is missing.
        java.util.Objects.requireNonNull(prompt, "GenerationRequest prompt");
        sampling = sampling == null ? SamplingSpec.DEFAULTS : sampling;
        stop = stop == null ? List.of() : List.copyOf(stop);
        toolChoice = toolChoice == null ? ToolChoiceSpec.DEFAULT : toolChoice;
    }

    /**
     * Names each field of a {@link GenerationRequest}. Only the prompt is required; the other
     * fields default as the record's Javadoc says (no id, no stop strings, no logprobs, free text,
     * tool choice {@code auto}, every sampling field and {@code maxTokens} the engine's).
     * Values are checked where HTTP requests' are, by plan at submission (a refusal is the
     * session's outcome), except what the builder can see alone.
     */
    public static final class Builder {
        private String id;
        private String model;
        private Prompt prompt;
        private SamplingSpec sampling;
        private Integer maxTokens;
        private List<String> stop = List.of();
        private boolean logprobs;
        private int topLogprobs;
        private OutputConstraint constraint;
        private ToolChoiceSpec toolChoice;
        private SpeculativeSpec speculative;
        private String adapter;

        private Builder() {}

        /** The session's id; without it the engine assigns {@code req-N}. */
        public Builder id(String id) {
            this.id = id;
            return this;
        }

        /** The model name a protocol layer echoes back (not read by the engine). */
        public Builder model(String model) {
            this.model = model;
            return this;
        }

        /** What the model continues: chat messages, plain text or token ids. */
        public Builder prompt(Prompt prompt) {
            this.prompt = java.util.Objects.requireNonNull(prompt, "prompt");
            return this;
        }

        /** A chat prompt of one user message, rendered with the model's chat template. */
        public Builder userMessage(String text) {
            return prompt(new Prompt.Chat(List.of(ChatMessage.of("user", text)), List.of(), java.util.Map.of()));
        }

        /** The sampling fields this request sets (see {@link SamplingSpec#builder()}). */
        public Builder sampling(SamplingSpec sampling) {
            this.sampling = sampling;
            return this;
        }

        /** Tokens to generate at most, at least 1; without it (or null), the engine's default. */
        public Builder maxTokens(Integer maxTokens) {
            if (maxTokens != null && maxTokens < 1) {
                throw new IllegalArgumentException("maxTokens must be >= 1, got " + maxTokens);
            }
            this.maxTokens = maxTokens;
            return this;
        }

        /** Stop strings: the text up to, not including, the first match is returned. */
        public Builder stop(List<String> stop) {
            this.stop = List.copyOf(stop);
            return this;
        }

        /** Stop strings: the text up to, not including, the first match is returned. */
        public Builder stop(String... stop) {
            return stop(List.of(stop));
        }

        /**
         * Reports each chosen token's log-probability and, when {@code top} > 0, the {@code top}
         * most likely alternatives (at most {@link EngineConfig#maxTopLogprobs}, which plan checks).
         */
        public Builder logprobs(int top) {
            if (top < 0) {
                throw new IllegalArgumentException("top logprobs must be >= 0, got " + top);
            }
            this.logprobs = true;
            this.topLogprobs = top;
            return this;
        }

        /** What the output must match (a JSON schema, grammar or regex); without it, free text. */
        public Builder constraint(OutputConstraint constraint) {
            this.constraint = constraint;
            return this;
        }

        /** How the model may or must call the prompt's tools; without it, {@link ToolChoiceSpec#DEFAULT}. */
        public Builder toolChoice(ToolChoiceSpec toolChoice) {
            this.toolChoice = toolChoice;
            return this;
        }

        /** How this request speculates; without it, the server's default. */
        public Builder speculative(SpeculativeSpec speculative) {
            this.speculative = speculative;
            return this;
        }

        /** The named adapter to serve the request with ({@code serve --adapter NAME=DIR}); without it, the base model. */
        public Builder adapter(String adapter) {
            this.adapter = adapter;
            return this;
        }

        /** The request; refuses one without a prompt. */
        public GenerationRequest build() {
            if (prompt == null) {
                throw new IllegalStateException(
                        "a GenerationRequest needs a prompt: set prompt(...) or userMessage(...)");
            }
            return new GenerationRequest(
                    id,
                    model,
                    prompt,
                    sampling,
                    maxTokens,
                    stop,
                    logprobs,
                    topLogprobs,
                    constraint,
                    toolChoice,
                    speculative,
                    adapter);
        }
    }
}
