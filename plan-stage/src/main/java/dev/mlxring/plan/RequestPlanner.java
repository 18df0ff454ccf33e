package dev.mlxring.plan;

import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.KvQuantization;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.OutputConstraint;
import dev.mlxring.pipeline.Planner;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.SamplingSpec;
import dev.mlxring.pipeline.TokenConstraint;
import dev.mlxring.pipeline.ToolChoiceSpec;
import dev.mlxring.pipeline.Utf16;
import dev.mlxring.plan.constraint.ConstraintCompiler;
import dev.mlxring.plan.constraint.ModelTools;
import dev.mlxring.plan.constraint.ToolCallGrammar;
import dev.mlxring.plan.constraint.ToolChoice;
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
    public record Defaults(
            int maxTokens,
            double temperature,
            double topP,
            int topK,
            double minP,
            int maxContextTokens,
            KvQuantization kvQuantization,
            int maxPromptTokens) {
        public Defaults(int maxTokens, double temperature, double topP, int topK, double minP, int maxContextTokens) {
            this(maxTokens, temperature, topP, topK, minP, maxContextTokens, null, 0);
        }

        public Defaults(
                int maxTokens,
                double temperature,
                double topP,
                int topK,
                double minP,
                int maxContextTokens,
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
    private final ModelTools modelTools;
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
    public RequestPlanner(
            Defaults defaults,
            int[] eosTokenIds,
            int[] xtcSpecialTokens,
            int vocabSize,
            ConstraintCompiler constraints) {
        this(defaults, eosTokenIds, xtcSpecialTokens, vocabSize, constraints, null);
    }

    /**
     * @param constraints compiles requests' output constraints, tool-call grammars included; null =
     *     none, and a constrained request is refused
     * @param modelTools the model's tool-call syntax, from which a forced, strict or single-call
     *     tool choice becomes a {@link ToolCallGrammar}; null = such a choice is refused
     */
    public RequestPlanner(
            Defaults defaults,
            int[] eosTokenIds,
            int[] xtcSpecialTokens,
            int vocabSize,
            ConstraintCompiler constraints,
            ModelTools modelTools) {
        this.defaults = defaults;
        this.constraints = constraints;
        this.modelTools = modelTools;
        this.eosTokenIds = eosTokenIds.clone();
        this.xtcSpecialTokens = xtcSpecialTokens.clone();
        this.vocabSize = vocabSize;
    }

    @Override
    public ExecutionPlan plan(GenerationRequest request, PreparedPrompt prompt) throws RequestException {
        checkStopStrings(request.stop());
        int maxTokens = maxTokens(request, prompt.length());
        if (request.topLogprobs() > SamplingParams.MAX_TOP_LOGPROBS) {
            throw new RequestException(
                    ErrorType.UNSUPPORTED,
                    "top_logprobs must be at most " + SamplingParams.MAX_TOP_LOGPROBS + " (mlx_lm.server's limit)");
        }
        SamplingParams sampling;
        try {
            sampling = sampling(request);
        } catch (IllegalArgumentException e) {
            throw new RequestException(ErrorType.INVALID_REQUEST, e.getMessage());
        }
        List<Map<String, Object>> tools = request.prompt() instanceof Prompt.Chat chat ? chat.tools() : List.of();
        OutputConstraint spec = outputConstraint(request, tools, prompt);
        TokenConstraint constraint = constraint(spec);
        try {
            return ExecutionPlan.builder()
                    .requestId(request.id())
                    .prompt(prompt)
                    .sampling(sampling)
                    .maxTokens(maxTokens)
                    .stopTokenIds(eosTokenIds)
                    .stopStrings(request.stop())
                    .logprobs(request.logprobs())
                    .topLogprobs(request.topLogprobs())
                    .tools(tools)
                    .kvScheme(defaults.kvQuantization())
                    .constraint(constraint)
                    .speculative(request.speculative())
                    .adapter(request.adapter())
                    .build();
        } catch (RuntimeException e) {
            if (constraint != null) {
                constraint.close();
            }
            throw e;
        }
    }

    /**
     * What the output must match: the request's own constraint, or the grammar its tool choice
     * demands ({@link #toolConstraint}); never both, as each holds the whole output to its own shape
     * (one JSON value against tool calls in the model's syntax).
     */
    private OutputConstraint outputConstraint(
            GenerationRequest request, List<Map<String, Object>> tools, PreparedPrompt prompt) throws RequestException {
        OutputConstraint tool = toolConstraint(request.toolChoice(), tools, prompt);
        if (tool != null && request.constraint() != null) {
            throw new RequestException(
                    ErrorType.INVALID_REQUEST,
                    "tool_choice: " + describe(request.toolChoice())
                            + " cannot be combined with " + request.constraint().field() + ": both constrain the whole "
                            + "output (tool calls in the model's syntax against one value of the response format); send one");
        }
        if (tool != null) {
            return tool;
        }
        OutputConstraint own = request.constraint();
        if (own != null && modelTools != null && modelTools.syntax().thinks()) {
            // The reasoning block stays free: the constraint holds what follows it.
            return ConstraintCompiler.afterReasoning(
                    own, modelTools.syntax(), modelTools.reasoningOpenInPrompt().test(prompt.tokenIds()));
        }
        return own;
    }

    /**
     * The grammar a tool choice demands, or null when it demands none: a forced call
     * ({@code required}, a named tool), strict tools under {@code auto}, or at most one call
     * ({@code parallel} false) with tools. {@code none} with tools is refused: the tools reach the
     * template and nothing keeps the model from calling them.
     */
    private OutputConstraint toolConstraint(
            ToolChoiceSpec choice, List<Map<String, Object>> tools, PreparedPrompt prompt) throws RequestException {
        if (choice.mode() == ToolChoiceSpec.Mode.NONE) {
            if (!tools.isEmpty()) {
                throw new RequestException(
                        ErrorType.UNSUPPORTED,
                        "tool_choice: none is not supported with tools: "
                                + "they would still be offered to the model, and nothing keeps it from calling them; leave "
                                + "tools out to forbid calls");
            }
            return null;
        }
        if (!choice.forced() && (tools.isEmpty() || choice.parallel() && !anyStrict(tools))) {
            return null;
        }
        ToolChoice grammarChoice = switch (choice.mode()) {
            case REQUIRED -> ToolChoice.required(choice.parallel());
            case NAMED -> ToolChoice.named(choice.name(), choice.parallel());
            default -> ToolChoice.auto(choice.parallel());
        };
        if (modelTools == null) {
            throw new RequestException(
                    ErrorType.UNSUPPORTED,
                    "tool_choice: " + describe(choice) + " is not supported "
                            + "by this engine: it has no tool-call grammar, and tool calls are never left unconstrained");
        }
        try {
            return ToolCallGrammar.forTools(
                    tools,
                    grammarChoice,
                    modelTools.syntax(),
                    modelTools.reasoningOpenInPrompt().test(prompt.tokenIds()));
        } catch (IllegalArgumentException e) {
            throw new RequestException(ErrorType.INVALID_REQUEST, namingField(e.getMessage(), choice.schemaKey()));
        } catch (IllegalStateException e) {
            throw new RequestException(
                    ErrorType.UNSUPPORTED,
                    "tool_choice: " + describe(choice) + " is unavailable on this server: " + e.getMessage());
        }
    }

    private static boolean anyStrict(List<Map<String, Object>> tools) {
        for (Map<String, Object> t : tools) {
            if (t != null && t.get("function") instanceof Map<?, ?> fn && Boolean.TRUE.equals(fn.get("strict"))) {
                return true;
            }
        }
        return false;
    }

    /**
     * A grammar refusal worded field first, as ingress reads the field from it: {@code
     * tools[i].<schemaKey>: ...} for a tool's schema (the grammar names OpenAI chat's {@code
     * function.parameters}), else {@code tool_choice: ...} (the grammar's own leading
     * {@code tool_choice} folded into it).
     */
    static String namingField(String message, String schemaKey) {
        var m = java.util.regex.Pattern.compile("^(tools\\[\\d+])\\.function\\.parameters:? ")
                .matcher(message);
        if (m.find()) {
            return m.group(1) + "." + schemaKey + ": " + message.substring(m.end());
        }
        return "tool_choice: "
                + (message.startsWith("tool_choice ") ? message.substring("tool_choice ".length()) : message);
    }

    private static String describe(ToolChoiceSpec choice) {
        return switch (choice.mode()) {
            case AUTO -> (choice.parallel() ? "auto with strict tools" : "auto without parallel tool calls");
            case NONE -> "none";
            case REQUIRED -> "required" + (choice.parallel() ? "" : " without parallel tool calls");
            case NAMED -> "the function '" + choice.name() + "'";
        };
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
        int promptLimit =
                defaults.maxPromptTokens() > 0 ? Math.min(defaults.maxPromptTokens(), context - 1) : context - 1;
        if (promptTokens > promptLimit) {
            throw new RequestException(
                    ErrorType.CONTEXT_LENGTH_EXCEEDED,
                    promptLimit < context - 1
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
            throw new RequestException(
                    ErrorType.CONTEXT_LENGTH_EXCEEDED,
                    "This model's maximum context length is "
                            + context + " tokens. However, you requested " + (promptTokens + (long) requested)
                            + " tokens ("
                            + promptTokens + " in the messages, " + requested
                            + " in the completion). Please reduce the "
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
                throw new RequestException(
                        ErrorType.INVALID_REQUEST,
                        "stop[" + i + "] contains an unpaired UTF-16 surrogate at index " + bad);
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
                    throw new IllegalArgumentException(
                            "logit_bias token id " + e.getKey() + " is outside the vocabulary [0, " + vocabSize + ")");
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
