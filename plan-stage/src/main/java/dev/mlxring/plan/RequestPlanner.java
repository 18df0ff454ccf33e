package dev.mlxring.plan;

import dev.mlxring.exec.kv.KvQuantization;
import dev.mlxring.exec.sample.SamplingParams;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.Planner;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.SamplingSpec;
import java.util.List;
import java.util.Map;

/**
 * plan-stage: request overrides on top of the server defaults, resolved once into an immutable
 * {@link ExecutionPlan}. Refuses — with the reason — what the engine cannot run faithfully
 * (prompt beyond the context, out-of-range sampling values, token ids outside the vocabulary);
 * it never substitutes a cheaper composition.
 */
public final class RequestPlanner implements Planner {

    /**
     * Server-wide defaults, named as mlx_lm.server's flags.
     *
     * @param maxContextTokens prompt plus completion may not exceed this (the model's context)
     * @param kvQuantization the KV-cache scheme of every plan ({@code --kv-bits} …); null = full
     *     precision. mlx_lm.server has no per-request KV settings, and neither do we.
     */
    public record Defaults(int maxTokens, double temperature, double topP, int topK, double minP,
            int maxContextTokens, KvQuantization kvQuantization) {
        public Defaults(int maxTokens, double temperature, double topP, int topK, double minP, int maxContextTokens) {
            this(maxTokens, temperature, topP, topK, minP, maxContextTokens, null);
        }

        public static Defaults mlxLm(int maxContextTokens) {
            return new Defaults(512, 0.0, 1.0, 0, 0.0, maxContextTokens);
        }
    }

    private final Defaults defaults;
    private final int[] eosTokenIds;
    private final int[] xtcSpecialTokens;
    private final int vocabSize;

    /**
     * @param eosTokenIds ids that end generation (tokenizer and config EOS)
     * @param xtcSpecialTokens ids XTC never removes (mlx_lm.server: {@code encode("\n")} plus the EOS ids)
     */
    public RequestPlanner(Defaults defaults, int[] eosTokenIds, int[] xtcSpecialTokens, int vocabSize) {
        this.defaults = defaults;
        this.eosTokenIds = eosTokenIds.clone();
        this.xtcSpecialTokens = xtcSpecialTokens.clone();
        this.vocabSize = vocabSize;
    }

    @Override
    public ExecutionPlan plan(GenerationRequest request, PreparedPrompt prompt) throws RequestException {
        int maxTokens = request.maxTokens() != null ? request.maxTokens() : defaults.maxTokens();
        if (maxTokens < 1) {
            throw new RequestException(ErrorType.INVALID_REQUEST, "max_tokens must be at least 1");
        }
        if (prompt.length() >= defaults.maxContextTokens()) {
            throw new RequestException(ErrorType.INVALID_REQUEST, "the prompt is " + prompt.length()
                    + " tokens; this model's context is " + defaults.maxContextTokens() + " tokens");
        }
        if (request.topLogprobs() > SamplingParams.MAX_TOP_LOGPROBS) {
            throw new RequestException(ErrorType.UNSUPPORTED, "top_logprobs must be at most "
                    + SamplingParams.MAX_TOP_LOGPROBS + " (mlx_lm.server's limit)");
        }
        SamplingParams sampling;
        try {
            sampling = sampling(request);
        } catch (IllegalArgumentException e) {
            throw new RequestException(ErrorType.INVALID_REQUEST, e.getMessage());
        }
        List<Map<String, Object>> tools = request.prompt() instanceof Prompt.Chat chat ? chat.tools() : List.of();
        return new ExecutionPlan(request.id(), prompt, sampling, maxTokens, eosTokenIds, request.stop(),
                request.logprobs(), request.topLogprobs(), tools, defaults.kvQuantization());
    }

    private SamplingParams sampling(GenerationRequest request) {
        SamplingSpec s = request.sampling();
        SamplingParams.Builder b = SamplingParams.builder()
                .temperature(or(s.temperature(), defaults.temperature()))
                .topP(or(s.topP(), defaults.topP()))
                .topK(s.topK() != null ? s.topK() : defaults.topK())
                .minP(or(s.minP(), defaults.minP()))
                .xtcSpecialTokens(xtcSpecialTokens);
        if (s.xtcProbability() != null) {
            b.xtcProbability(s.xtcProbability());
        }
        if (s.xtcThreshold() != null) {
            b.xtcThreshold(s.xtcThreshold());
        }
        if (s.repetitionPenalty() != null) {
            b.repetitionPenalty(s.repetitionPenalty());
        }
        if (s.repetitionContextSize() != null) {
            b.repetitionContextSize(s.repetitionContextSize());
        }
        if (s.presencePenalty() != null) {
            b.presencePenalty(s.presencePenalty());
        }
        if (s.frequencyPenalty() != null) {
            b.frequencyPenalty(s.frequencyPenalty());
        }
        if (s.logitBias() != null) {
            for (Map.Entry<Integer, Double> e : s.logitBias().entrySet()) {
                if (e.getKey() < 0 || e.getKey() >= vocabSize) {
                    throw new IllegalArgumentException("logit_bias token id " + e.getKey()
                            + " is outside the vocabulary [0, " + vocabSize + ")");
                }
            }
            b.logitBias(s.logitBias());
        }
        if (s.seed() != null) {
            b.seed(s.seed());
        }
        b.logprobs(request.logprobs()).topLogprobs(request.topLogprobs());
        return b.build();
    }

    private static double or(Double v, double dflt) {
        return v != null ? v : dflt;
    }
}
