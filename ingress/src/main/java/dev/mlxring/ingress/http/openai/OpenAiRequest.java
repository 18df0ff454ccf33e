package dev.mlxring.ingress.http.openai;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mlxring.ingress.http.ApiError;
import dev.mlxring.ingress.http.RequestFields;
import dev.mlxring.ingress.http.ServerDefaults;
import dev.mlxring.ingress.http.SpeculativeField;
import dev.mlxring.ingress.http.StructuredOutputs;
import dev.mlxring.pipeline.ChatMessage;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.OutputConstraint;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.SamplingSpec;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * An OpenAI {@code /v1/chat/completions} or {@code /v1/completions} body, parsed and validated
 * with mlx_lm.server's rules (types and ranges per field); every violation is an {@link ApiError}
 * naming the field.
 *
 * <p>Null means absent, as in OpenAI's API: a field, a message's key, a tool's key, a
 * {@code chat_template_kwargs} or {@code logit_bias} entry set to JSON null is treated as not
 * given (the openai SDK sends an assistant message back with {@code refusal}, {@code audio},
 * {@code function_call} and {@code tool_calls} null).
 *
 * @param chat true for chat completions, false for text completions
 * @param includeUsage {@code stream_options.include_usage}
 * @param legacyTopLogprobs text completions' integer {@code logprobs} (0 to
 *     {@value #MAX_LEGACY_LOGPROBS}): the legacy logprobs shape with that many alternatives per
 *     token; -1 when not asked for that way ({@code logprobs: true} keeps mlx_lm.server's shape)
 */
record OpenAiRequest(
        GenerationRequest request,
        boolean chat,
        boolean stream,
        boolean includeUsage,
        String model,
        int legacyTopLogprobs) {
    static final Set<String> ROLES = Set.of("system", "developer", "user", "assistant", "tool");
    /** mlx_lm.server's bound, which the planner also enforces (docs/api.md). */
    static final int MAX_TOP_LOGPROBS = 11;

    static final int MAX_LOGIT_BIAS_ENTRIES = 1024;
    /** OpenAI's bound on the legacy completions API's integer {@code logprobs}. */
    static final int MAX_LEGACY_LOGPROBS = 5;

    static OpenAiRequest parse(byte[] body, boolean chat, ServerDefaults defaults, String requestId) {
        JsonNode root = RequestFields.parseObject(body);
        String adapter = defaults.adapters().fromField(root);
        RequestFields f = new RequestFields(root);
        boolean stream = f.bool("stream", false);
        boolean includeUsage = false;
        JsonNode so = root.get("stream_options");
        if (so != null && !so.isNull()) {
            if (!so.isObject()) {
                throw ApiError.invalid("stream_options", "stream_options must be an object");
            }
            if (!stream) {
                throw ApiError.invalid("stream_options", "stream_options is only allowed when stream is true");
            }
            includeUsage = RequestFields.at(so, "stream_options").bool("include_usage", false);
        }
        String model = f.string("model", "default_model");
        f.string("user", null);
        Integer n = f.integer("n", null);
        if (n != null && n != 1) {
            throw ApiError.invalid("n", "n must be 1 (one choice per request is supported)");
        }
        OutputConstraint constraint = StructuredOutputs.openAi(root);
        if (!chat) {
            legacyCompletionOptions(f);
        }
        String maxField = f.get("max_completion_tokens") != null ? "max_completion_tokens" : "max_tokens";
        Integer maxTokens = f.maxTokens(maxField, false, defaults);
        SamplingSpec sampling = new SamplingSpec(
                f.number("temperature", 0, 2),
                f.number("top_p", 0, 1),
                f.intRange("top_k", 0, Integer.MAX_VALUE),
                f.number("min_p", 0, 1),
                f.number("xtc_probability", 0, 1),
                f.number("xtc_threshold", 0, 1),
                f.number("repetition_penalty", 0, 10),
                f.intRange("repetition_context_size", 0, defaults.maxContextTokens()),
                f.number("presence_penalty", -2, 2),
                f.number("frequency_penalty", -2, 2),
                logitBias(root.get("logit_bias"), defaults.vocabSize()),
                f.longRange("seed", 0, Long.MAX_VALUE));
        int legacyTop = chat ? -1 : legacyLogprobs(f);
        boolean logprobs = legacyTop >= 0 || f.bool("logprobs", false);
        Integer top = f.integer("top_logprobs", -1);
        if (top != -1 && (top < 0 || top > MAX_TOP_LOGPROBS)) {
            throw ApiError.invalid("top_logprobs", "top_logprobs must be between 0 and " + MAX_TOP_LOGPROBS);
        }
        if (legacyTop >= 0) {
            if (top != -1) {
                throw ApiError.invalid(
                        "top_logprobs",
                        "top_logprobs goes with logprobs: true; with an integer "
                                + "logprobs (the legacy form) that integer is the number of alternatives");
            }
            top = legacyTop;
        }
        List<String> stop = f.stopStrings("stop", true);
        Prompt prompt = chat ? chatPrompt(root) : textPrompt(root);
        GenerationRequest.Builder req = GenerationRequest.builder()
                .id(requestId)
                .model(model)
                .prompt(prompt)
                .sampling(sampling)
                .maxTokens(maxTokens)
                .stop(stop)
                .constraint(constraint)
                .speculative(SpeculativeField.parse(root))
                .adapter(adapter);
        if (logprobs || top > 0) {
            req.logprobs(Math.max(top, 0));
        }
        if (chat) {
            req.toolChoice(OpenAiTools.choice(
                    root.get("tool_choice"), new RequestFields(root).bool("parallel_tool_calls", true)));
        }
        return new OpenAiRequest(req.build(), chat, stream, includeUsage, model, legacyTop);
    }

    /**
     * Text completions' {@code logprobs} as OpenAI's legacy API takes it, an integer 0 to
     * {@value #MAX_LEGACY_LOGPROBS}; -1 when absent or a boolean (read by the caller).
     */
    private static int legacyLogprobs(RequestFields f) {
        JsonNode v = f.get("logprobs");
        if (v == null || v.isBoolean()) {
            return -1;
        }
        if (!v.isIntegralNumber() || !v.canConvertToInt() || v.intValue() < 0 || v.intValue() > MAX_LEGACY_LOGPROBS) {
            throw ApiError.invalid(
                    "logprobs",
                    "logprobs must be a boolean or an integer between 0 and " + MAX_LEGACY_LOGPROBS
                            + " (the number of alternatives per token), got " + v);
        }
        return v.intValue();
    }

    private static Prompt chatPrompt(JsonNode root) {
        JsonNode messages = root.get("messages");
        if (messages == null || messages.isNull()) {
            throw ApiError.invalid("messages", "messages is required");
        }
        if (!messages.isArray() || messages.isEmpty()) {
            throw ApiError.invalid("messages", "messages must be a non-empty array");
        }
        List<ChatMessage> out = new ArrayList<>();
        for (int i = 0; i < messages.size(); i++) {
            JsonNode m = messages.get(i);
            String at = "messages[" + i + "]";
            if (!m.isObject()) {
                throw ApiError.invalid(at, at + " must be an object");
            }
            JsonNode role = m.get("role");
            if (role == null || !role.isTextual()) {
                throw ApiError.invalid(at + ".role", at + ".role must be a string");
            }
            if (!ROLES.contains(role.asText())) {
                throw ApiError.invalid(at + ".role", at + ".role '" + role.asText() + "' is not one of " + ROLES);
            }
            Map<String, Object> extra = RequestFields.withoutNullKeys(m);
            extra.remove("role");
            extra.remove("content");
            if (m.path("tool_calls").isArray()) {
                extra.put("tool_calls", toolCalls(m.get("tool_calls")));
            }
            out.add(new ChatMessage(
                    role.asText(),
                    content(
                            m.get("content"),
                            at + ".content",
                            role.asText().equals("assistant") && extra.containsKey("tool_calls")),
                    extra));
        }
        List<Map<String, Object>> tools = OpenAiTools.parse(
                root.get("tools"), root.get("tool_choice"), new RequestFields(root).bool("parallel_tool_calls", true));
        Map<String, Object> kwargs = new HashMap<>();
        JsonNode k = root.get("chat_template_kwargs");
        if (k != null && !k.isNull()) {
            if (!k.isObject()) {
                throw ApiError.invalid("chat_template_kwargs", "chat_template_kwargs must be an object");
            }
            kwargs.putAll(RequestFields.withoutNullKeys(k));
        }
        return new Prompt.Chat(out, tools, kwargs);
    }

    /**
     * An assistant message's {@code tool_calls} for the template, null-valued keys left out of
     * each call and of its {@code function} (the arguments are data: kept as sent).
     */
    private static List<Object> toolCalls(JsonNode calls) {
        List<Object> out = new ArrayList<>();
        for (JsonNode call : calls) {
            if (!call.isObject()) {
                out.add(RequestFields.data(call));
                continue;
            }
            Map<String, Object> c = RequestFields.withoutNullKeys(call);
            if (call.path("function").isObject()) {
                c.put("function", RequestFields.withoutNullKeys(call.get("function")));
            }
            out.add(c);
        }
        return out;
    }

    /** A message's content: a string, or a list of {"type": "text", "text": ...} parts joined. */
    private static String content(JsonNode c, String at, boolean mayBeEmpty) {
        if (c == null || c.isNull()) {
            if (mayBeEmpty) {
                return "";
            }
            throw ApiError.invalid(at, at + " is required");
        }
        if (c.isTextual()) {
            return c.asText();
        }
        if (c.isArray()) {
            StringBuilder sb = new StringBuilder();
            for (JsonNode part : c) {
                if (!part.isObject() || !"text".equals(part.path("type").asText())) {
                    throw ApiError.invalid(
                            at, at + " parts must be {\"type\": \"text\", \"text\": ...} (only text is supported)");
                }
                JsonNode text = part.get("text");
                if (text == null || !text.isTextual()) {
                    throw ApiError.invalid(at, at + " text part needs a string 'text'");
                }
                sb.append(text.asText());
            }
            return sb.toString();
        }
        throw ApiError.invalid(at, at + " must be a string or an array of text parts");
    }

    private static Prompt textPrompt(JsonNode root) {
        JsonNode p = root.get("prompt");
        if (p == null || p.isNull()) {
            throw ApiError.invalid("prompt", "prompt is required");
        }
        if (p.isTextual()) {
            return new Prompt.Text(p.asText());
        }
        if (p.isArray() && !p.isEmpty() && p.get(0).isInt()) {
            int[] ids = new int[p.size()];
            for (int i = 0; i < ids.length; i++) {
                if (!p.get(i).isInt() || p.get(i).intValue() < 0) {
                    throw ApiError.invalid("prompt", "prompt token ids must be non-negative integers");
                }
                ids[i] = p.get(i).intValue();
            }
            return new Prompt.Tokens(ids);
        }
        throw ApiError.invalid("prompt", "prompt must be a string or an array of token ids");
    }

    /**
     * The legacy completions API's options that would change what is returned: refused rather than
     * ignored (their defaults are accepted).
     */
    private static void legacyCompletionOptions(RequestFields f) {
        if (f.bool("echo", false)) {
            throw ApiError.invalid("echo", "echo is not supported: the response carries the completion only");
        }
        String suffix = f.string("suffix", null);
        if (suffix != null && !suffix.isEmpty()) {
            throw ApiError.invalid("suffix", "suffix (insertion) is not supported");
        }
        Integer bestOf = f.integer("best_of", null);
        if (bestOf != null && bestOf != 1) {
            throw ApiError.invalid("best_of", "best_of must be 1 (one completion per request is generated)");
        }
    }

    /** {@code logit_bias}: at most 1024 token ids (in the vocabulary when known) to biases in [-100, 100]. */
    private static Map<Integer, Double> logitBias(JsonNode b, int vocabSize) {
        if (b == null || b.isNull()) {
            return null;
        }
        if (!b.isObject()) {
            throw ApiError.invalid("logit_bias", "logit_bias must be an object of token id to bias");
        }
        if (b.size() > MAX_LOGIT_BIAS_ENTRIES) {
            throw ApiError.invalid(
                    "logit_bias",
                    "logit_bias may hold at most " + MAX_LOGIT_BIAS_ENTRIES + " token ids, got " + b.size());
        }
        Map<Integer, Double> out = new HashMap<>();
        for (var e : b.properties()) {
            int id;
            try {
                id = Integer.parseInt(e.getKey());
            } catch (NumberFormatException ex) {
                throw ApiError.invalid(
                        "logit_bias", "logit_bias keys must be integer token ids, got '" + e.getKey() + "'");
            }
            if (id < 0 || vocabSize > 0 && id >= vocabSize) {
                throw ApiError.invalid(
                        "logit_bias",
                        "logit_bias token id " + id + " is outside the vocabulary [0, "
                                + (vocabSize > 0 ? vocabSize : "vocabulary size") + ")");
            }
            JsonNode v = e.getValue();
            if (v.isNull()) {
                continue; // null means absent
            }
            if (!v.isNumber() || !(v.doubleValue() >= -100 && v.doubleValue() <= 100)) {
                throw ApiError.invalid(
                        "logit_bias", "logit_bias[" + e.getKey() + "] must be a number between -100 " + "and 100");
            }
            out.put(id, v.doubleValue());
        }
        return out;
    }
}
