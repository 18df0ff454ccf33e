package dev.mlxring.pipeline;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * plan-stage's output, sealed once per request: everything exec-stage and sink-stage need, with
 * defaults resolved. Nothing downstream re-reads request fields or global flags.
 *
 * @param sampling the resolved sampling settings; never null (the planner resolves the defaults)
 * @param stopTokenIds ids that end generation and are not emitted (EOS)
 * @param tools the request's tool definitions (OpenAI shape, from {@link Prompt.Chat#tools()}),
 *     handed to the sink's tool-call parser; empty for other prompts
 * @param kvScheme the KV-cache quantization exec must use; null = the model's full-precision
 *     cache. Exec refuses a scheme it cannot run rather than substituting another.
 * @param constraint the request's token constraint (a structured-output mask), or null for none.
 *     Exec closes it: the executor from the moment exec hands it the plan ({@link Executor#open},
 *     {@link ExecutionBatch#insert}, also when they throw), the exec loop when the session
 *     settles before that (cancelled or refused while queued)
 * @param speculative the request's speculative-decoding choice; null = the executor's default
 * @param adapter the named adapter the request is served with ({@link GenerationRequest#adapter});
 *     null = the base model. An executor that cannot serve it refuses the plan
 */
public record ExecutionPlan(
        String requestId,
        PreparedPrompt prompt,
        SamplingParams sampling,
        int maxTokens,
        int[] stopTokenIds,
        List<String> stopStrings,
        boolean logprobs,
        int topLogprobs,
        List<Map<String, Object>> tools,
        KvQuantization kvScheme,
        TokenConstraint constraint,
        SpeculativeSpec speculative,
        String adapter) {
    public ExecutionPlan {
        Objects.requireNonNull(sampling, "sampling");
        stopTokenIds = stopTokenIds.clone();
        stopStrings = List.copyOf(stopStrings);
        tools = tools == null ? List.of() : List.copyOf(tools);
        if (maxTokens < 0) {
            throw new IllegalArgumentException("maxTokens must be >= 0, got " + maxTokens);
        }
    }

    /** The same plan served with the named adapter {@code name} (null: the base model). */
    public ExecutionPlan withAdapter(String name) {
        return toBuilder().adapter(name).build();
    }

    /** A builder with nothing set: {@link Builder#build()} needs a prompt, sampling and maxTokens. */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder with every field of this plan set, for a copy that changes some. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.requestId = requestId;
        b.prompt = prompt;
        b.sampling = sampling;
        b.maxTokens = maxTokens;
        b.stopTokenIds = stopTokenIds;
        b.stopStrings = stopStrings;
        b.logprobs = logprobs;
        b.topLogprobs = topLogprobs;
        b.tools = tools;
        b.kvScheme = kvScheme;
        b.constraint = constraint;
        b.speculative = speculative;
        b.adapter = adapter;
        return b;
    }

    /**
     * Names each field of an {@link ExecutionPlan}. The prompt, the sampling and maxTokens are
     * required; every other field defaults as the record's Javadoc says: no request id, no stop
     * ids or strings, no logprobs, no tools, the full-precision KV cache, no constraint, the
     * executor's speculative default, the base model. The builder checks only what is missing;
     * the record checks the values.
     */
    public static final class Builder {
        private String requestId;
        private PreparedPrompt prompt;
        private SamplingParams sampling;
        private Integer maxTokens;
        private int[] stopTokenIds = new int[0];
        private List<String> stopStrings = List.of();
        private boolean logprobs;
        private int topLogprobs;
        private List<Map<String, Object>> tools = List.of();
        private KvQuantization kvScheme;
        private TokenConstraint constraint;
        private SpeculativeSpec speculative;
        private String adapter;

        private Builder() {}

        /** The session's request id. */
        public Builder requestId(String requestId) {
            this.requestId = requestId;
            return this;
        }

        /** The prepared prompt exec prefills (required). */
        public Builder prompt(PreparedPrompt prompt) {
            this.prompt = prompt;
            return this;
        }

        /** The resolved sampling settings (required; the planner resolves the defaults). */
        public Builder sampling(SamplingParams sampling) {
            this.sampling = sampling;
            return this;
        }

        /** Tokens to generate at most, >= 0 (required). */
        public Builder maxTokens(int maxTokens) {
            this.maxTokens = maxTokens;
            return this;
        }

        /** Ids that end generation and are not emitted (EOS); without it, none. */
        public Builder stopTokenIds(int[] stopTokenIds) {
            this.stopTokenIds = stopTokenIds;
            return this;
        }

        /** Stop strings the sink matches; without it, none. */
        public Builder stopStrings(List<String> stopStrings) {
            this.stopStrings = stopStrings;
            return this;
        }

        /** Whether exec reports the chosen tokens' log-probabilities; without it, false. */
        public Builder logprobs(boolean logprobs) {
            this.logprobs = logprobs;
            return this;
        }

        /** How many alternatives exec reports per token; without it, 0. */
        public Builder topLogprobs(int topLogprobs) {
            this.topLogprobs = topLogprobs;
            return this;
        }

        /** The request's tool definitions (OpenAI shape) for the sink's tool-call parser; without it, none. */
        public Builder tools(List<Map<String, Object>> tools) {
            this.tools = tools;
            return this;
        }

        /** The KV-cache quantization exec must use; without it (or null), the full-precision cache. */
        public Builder kvScheme(KvQuantization kvScheme) {
            this.kvScheme = kvScheme;
            return this;
        }

        /** The token constraint (a structured-output mask) exec applies and closes; without it, none. */
        public Builder constraint(TokenConstraint constraint) {
            this.constraint = constraint;
            return this;
        }

        /** The request's speculative-decoding choice; without it (or null), the executor's default. */
        public Builder speculative(SpeculativeSpec speculative) {
            this.speculative = speculative;
            return this;
        }

        /** The named adapter the request is served with; without it (or null), the base model. */
        public Builder adapter(String adapter) {
            this.adapter = adapter;
            return this;
        }

        /** The plan; refuses one without a prompt or maxTokens (and, through the record, without sampling). */
        public ExecutionPlan build() {
            if (prompt == null) {
                throw new IllegalStateException("an ExecutionPlan needs a prompt: set prompt(...)");
            }
            if (maxTokens == null) {
                throw new IllegalStateException("an ExecutionPlan needs maxTokens: set maxTokens(...)");
            }
            return new ExecutionPlan(
                    requestId,
                    prompt,
                    sampling,
                    maxTokens,
                    stopTokenIds,
                    stopStrings,
                    logprobs,
                    topLogprobs,
                    tools,
                    kvScheme,
                    constraint,
                    speculative,
                    adapter);
        }
    }
}
