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
                name);
    }

    /** A plan on the base model. */
    public ExecutionPlan(
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
            SpeculativeSpec speculative) {
        this(
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
                null);
    }

    /** A plan that speculates as the executor's default says. */
    public ExecutionPlan(
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
            TokenConstraint constraint) {
        this(
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
                null);
    }

    /** A plan without a token constraint. */
    public ExecutionPlan(
            String requestId,
            PreparedPrompt prompt,
            SamplingParams sampling,
            int maxTokens,
            int[] stopTokenIds,
            List<String> stopStrings,
            boolean logprobs,
            int topLogprobs,
            List<Map<String, Object>> tools,
            KvQuantization kvScheme) {
        this(
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
                null);
    }

    /** A plan with the full-precision KV cache. */
    public ExecutionPlan(
            String requestId,
            PreparedPrompt prompt,
            SamplingParams sampling,
            int maxTokens,
            int[] stopTokenIds,
            List<String> stopStrings,
            boolean logprobs,
            int topLogprobs,
            List<Map<String, Object>> tools) {
        this(
                requestId,
                prompt,
                sampling,
                maxTokens,
                stopTokenIds,
                stopStrings,
                logprobs,
                topLogprobs,
                tools,
                null,
                null);
    }

    /** A plan without tool definitions, with the full-precision KV cache. */
    public ExecutionPlan(
            String requestId,
            PreparedPrompt prompt,
            SamplingParams sampling,
            int maxTokens,
            int[] stopTokenIds,
            List<String> stopStrings,
            boolean logprobs,
            int topLogprobs) {
        this(
                requestId,
                prompt,
                sampling,
                maxTokens,
                stopTokenIds,
                stopStrings,
                logprobs,
                topLogprobs,
                List.of(),
                null,
                null);
    }
}
