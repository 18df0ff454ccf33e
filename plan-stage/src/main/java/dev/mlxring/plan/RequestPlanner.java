package dev.mlxring.plan;

import dev.mlxring.exec.kv.KvQuantization;
import dev.mlxring.exec.sample.SamplingParams;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.Planner;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.OutputConstraint;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.SamplingSpec;
import dev.mlxring.pipeline.TokenConstraint;
import dev.mlxring.plan.constraint.ConstraintCompiler;
import dev.mlxring.pipeline.Utf16;
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
     * @param maxPromptTokens the operator's prompt limit ({@code --max-prompt-tokens}); 0 = the
     *     context is the only limit
     */
    public record Defaults(int maxTokens, double temperature, double topP, int topK, double minP,
            int maxContextTokens, KvQuantization kvQuantization, int maxPromptTokens) {
        public Defaults(int maxTokens, double temperature, double topP, int topK, double minP, int maxContextTokens) {
            this(maxTokens, temperature, topP, topK, minP, maxContextTokens, null, 0);
        }

        public Defaults(int maxTokens, double temperature, double topP, int topK, double minP, int maxContextTokens,
                KvQuantization kvQuantization) {
            this(maxTokens, temperature, topP, topK, minP, maxContextTokens, kvQuantization, 0);
        }

        public Defaults withMaxPromptTokens(int n) {
            return new Defaults(maxTokens, temperature, topP, topK, minP, maxContextTokens, kvQuantization, n);
        }

        public static Defaults mlxLm(int maxContextTokens) {
            return new Defaults(512, 0.0, 1.0, 0, 0.0, maxContextTokens);
        }
    }

    private final Defaults defaults;
    private final ConstraintCompiler constraints;
    private final int[] eosTokenIds;
    private final int[] xtcSpecialTokens;
    private final int vocabSize;

    /**
     * @param eosTokenIds ids that end generation (tokenizer and config EOS)
     * @param xtcSpecialTokens ids XTC never removes (mlx_lm.server: {@code encode("\n")} plus the EOS ids)
     */
    public RequestPlanner(Defaults defaults, int[] eosTokenIds, int[] xtcSpecialTokens, int vocabSize) {
        this(defaults, eosTokenIds, xtcSpecialTokens, vocabSize, null);
    }

    /**
     * @param constraints compiles requests' output constraints (structured outputs); null = this
     *     engine has none, and a request with a constraint is refused (never run unconstrained)
     */
    public RequestPlanner(Defaults defaults, int[] eosTokenIds, int[] xtcSpecialTokens, int vocabSize,
            ConstraintCompiler constraints) {
        this.defaults = defaults;
        this.constraints = constraints;
        this.eosTokenIds = eosTokenIds.clone();
        this.xtcSpecialTokens = xtcSpecialTokens.clone();
        this.vocabSize = vocabSize;
    }

    @Override
    public ExecutionPlan plan(GenerationRequest request, PreparedPrompt prompt) throws RequestException {
        checkStopStrings(request.stop());
        int maxTokens = maxTokens(request, prompt.length());
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
        TokenConstraint constraint = constraint(request.constraint());
        try {
            return new ExecutionPlan(request.id(), prompt, sampling, maxTokens, eosTokenIds, request.stop(),
                    request.logprobs(), request.topLogprobs(), tools, defaults.kvQuantization(), constraint);
        } catch (RuntimeException e) {
            if (constraint != null) {
                constraint.close();
            }
            throw e;
        }
    }

    /** The request's constraint compiled for its row (last, so nothing after it can fail and leak it). */
    private TokenConstraint constraint(OutputConstraint spec) throws RequestException {
        if (spec == null) {
            return null;
        }
        if (constraints == null) {
            throw new RequestException(ErrorType.UNSUPPORTED, unsupportedConstraint(spec));
        }
        return constraints.compile(spec);
    }

    /** Why a constraint is refused by an engine that has no compiler (also what test doubles answer). */
    public static String unsupportedConstraint(OutputConstraint spec) {
        return spec.field() + " is not supported by this engine: it has no structured-output compiler for "
                + spec.kind().name().toLowerCase(java.util.Locale.ROOT) + ", and output is never left unconstrained";
    }

    /**
     * OpenAI's rule: the prompt plus an explicit {@code max_tokens} must fit the context, else
     * 400 {@code context_length_exceeded} with the numbers. Without one, the server default is cut
     * to what the context leaves, and generation ends with "length" at the context's end.
     */
    private int maxTokens(GenerationRequest request, int promptTokens) throws RequestException {
        int context = defaults.maxContextTokens();
        int promptLimit = defaults.maxPromptTokens() > 0 ? Math.min(defaults.maxPromptTokens(), context - 1)
                : context - 1;
        if (promptTokens > promptLimit) {
            throw new RequestException(ErrorType.CONTEXT_LENGTH_EXCEEDED, promptLimit < context - 1
                    ? "The prompt is " + promptTokens + " tokens; this server accepts at most " + promptLimit
                            + " prompt tokens (--max-prompt-tokens). Please reduce the length of the messages."
                    : "This model's maximum context length is " + context + " tokens. However, your messages "
                            + "resulted in " + promptTokens + " tokens, which leaves no room for a completion. "
                            + "Please reduce the length of the messages.");
        }
        Integer requested = request.maxTokens();
        if (requested == null) {
            return Math.min(defaults.maxTokens(), context - promptTokens);
        }
        if (requested < 1) {
            throw new RequestException(ErrorType.INVALID_REQUEST, "max_tokens must be at least 1");
        }
        if ((long) promptTokens + requested > context) {
            throw new RequestException(ErrorType.CONTEXT_LENGTH_EXCEEDED, "This model's maximum context length is "
                    + context + " tokens. However, you requested " + (promptTokens + (long) requested) + " tokens ("
                    + promptTokens + " in the messages, " + requested + " in the completion). Please reduce the "
                    + "length of the messages or completion.");
        }
        return requested;
    }

    /** A stop string that is not well-formed UTF-16 can never match decoded text: refuse it. */
    private static void checkStopStrings(List<String> stops) throws RequestException {
        for (int i = 0; i < stops.size(); i++) {
            String stop = stops.get(i);
            if (stop.isEmpty()) {
                throw new RequestException(ErrorType.INVALID_REQUEST, "stop[" + i + "] must not be empty");
            }
            int bad = Utf16.firstUnpairedSurrogate(stop);
            if (bad >= 0) {
                throw new RequestException(ErrorType.INVALID_REQUEST, "stop[" + i
                        + "] contains an unpaired UTF-16 surrogate at index " + bad);
            }
        }
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
