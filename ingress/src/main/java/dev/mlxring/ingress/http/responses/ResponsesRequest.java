package dev.mlxring.ingress.http.responses;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.ingress.http.ApiError;
import dev.mlxring.ingress.http.ChatTools;
import dev.mlxring.ingress.http.RequestFields;
import dev.mlxring.ingress.http.ServerDefaults;
import dev.mlxring.ingress.http.SpeculativeField;
import dev.mlxring.ingress.http.StructuredOutputs;
import dev.mlxring.pipeline.ChatMessage;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.SamplingSpec;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * An OpenAI {@code /v1/responses} body, validated and turned into the same chat {@link Prompt}
 * the chat-completions codec builds: {@code instructions} become the first system message, then
 * the stored conversation of {@code previous_response_id}, then {@code input} ({@code message}
 * items as messages, {@code function_call} items as the assistant's {@code tool_calls},
 * {@code function_call_output} items as {@code tool} messages, {@code reasoning} items as the
 * next assistant message's {@code reasoning_content}).
 *
 * @param conversation the messages this response continues, without {@code instructions} (they
 *     do not carry over to a later {@code previous_response_id}, as in OpenAI's API)
 * @param echo the request fields a response object repeats
 */
record ResponsesRequest(
        GenerationRequest request,
        boolean stream,
        boolean store,
        String model,
        List<ChatMessage> conversation,
        ObjectNode echo) {
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * @param previous the stored conversation of a response id, or null when unknown
     */
    static ResponsesRequest parse(
            byte[] body, ServerDefaults defaults, String id, Function<String, List<ChatMessage>> previous) {
        JsonNode root = RequestFields.parseObject(body);
        String adapter = defaults.adapters().fromField(root);
        RequestFields f = new RequestFields(root);
        String model = f.string("model", "default_model");
        boolean stream = f.bool("stream", false);
        boolean store = f.bool("store", true);
        Integer maxTokens = f.maxTokens("max_output_tokens", false, defaults);
        SamplingSpec sampling = f.temperatureTopPTopK(2);
        String instructions = f.string("instructions", null);
        JsonNode metadata = f.object("metadata");
        String previousId = f.string("previous_response_id", null);
        refuseUnsupported(f);

        List<ChatMessage> conversation = new ArrayList<>();
        if (previousId != null) {
            List<ChatMessage> prior = previous.apply(previousId);
            if (prior == null) {
                throw new ApiError(
                        404,
                        "invalid_request_error",
                        "previous response with id '" + previousId + "' not found (never stored, deleted, or evicted)",
                        "previous_response_id",
                        "not_found");
            }
            conversation.addAll(prior);
        }
        new InputItems(conversation).add(f.required("input"));

        JsonNode toolsNode = f.array("tools");
        ChatTools.checkCount(toolsNode, "tools");
        List<Map<String, Object>> tools = tools(toolsNode);
        JsonNode choice = f.get("tool_choice");
        ChatTools.Choice toolChoice = toolChoice(choice);
        ChatTools.checkChoice(
                tools,
                toolChoice,
                "tool_choice",
                choice == null ? "auto" : choice.isTextual() ? "\"" + choice.textValue() + "\"" : choice.toString());
        boolean parallel = f.bool("parallel_tool_calls", true);
        Map<String, Object> kwargs = new HashMap<>();
        JsonNode reasoning = f.object("reasoning");
        if (reasoning != null) {
            String effort = RequestFields.at(reasoning, "reasoning").string("effort", null);
            if (effort != null) {
                // the templates' one switch: any effort but "none" asks for thinking
                kwargs.put("enable_thinking", !effort.equals("none"));
            }
        }

        List<ChatMessage> messages = new ArrayList<>();
        if (instructions != null && !instructions.isEmpty()) {
            messages.add(ChatMessage.of("system", instructions));
        }
        messages.addAll(conversation);
        GenerationRequest req = GenerationRequest.builder()
                .id(id)
                .model(model)
                .prompt(new Prompt.Chat(messages, tools, kwargs))
                .sampling(sampling)
                .maxTokens(maxTokens)
                .constraint(StructuredOutputs.responses(root))
                .toolChoice(ChatTools.spec(toolChoice, parallel, "parameters"))
                .speculative(SpeculativeField.parse(root))
                .adapter(adapter)
                .build();

        ObjectNode echo = JSON.createObjectNode();
        putNullable(echo, "instructions", instructions);
        // null when not given: the server's --max-tokens applies
        echo.set("max_output_tokens", JSON.valueToTree(maxTokens));
        echo.set("metadata", metadata == null ? JSON.createObjectNode() : metadata);
        echo.put("parallel_tool_calls", parallel);
        putNullable(echo, "previous_response_id", previousId);
        echo.put("store", store);
        // null when not given: the server's own default (--temp, --top-p) applies
        echo.set("temperature", JSON.valueToTree(sampling.temperature()));
        echo.set("tool_choice", choice == null ? JSON.getNodeFactory().textNode("auto") : choice);
        echo.set("tools", f.get("tools") == null ? JSON.createArrayNode() : f.get("tools"));
        echo.set("top_p", JSON.valueToTree(sampling.topP()));
        JsonNode format = root.path("text").path("format");
        echo.putObject("text")
                .set(
                        "format",
                        format.isObject() ? format : JSON.createObjectNode().put("type", "text"));
        echo.put("truncation", "disabled");
        return new ResponsesRequest(req, stream, store, model, List.copyOf(conversation), echo);
    }

    /**
     * Options whose meaning this server does not implement are refused, naming the field, rather
     * than answered as if they had been honoured (docs/api.md, "Not supported"): structured
     * output, background mode, automatic truncation, server-side conversations, several
     * choices, logprobs and a cap on tool calls. Their defaults, and {@code include} (extra output
     * a response may carry), are accepted.
     */
    private static void refuseUnsupported(RequestFields f) {
        Integer n = f.integer("n", null);
        if (n != null && n != 1) {
            throw ApiError.invalid(
                    "n",
                    "n " + n + " is not supported: one output per response is generated; " + "leave it out or send 1");
        }
        Integer topLogprobs = f.integer("top_logprobs", null);
        if (topLogprobs != null && topLogprobs != 0) {
            throw ApiError.invalid(
                    "top_logprobs",
                    "top_logprobs is not supported on /v1/responses (its output "
                            + "carries no logprobs); leave it out or send 0");
        }
        if (f.get("max_tool_calls") != null) {
            throw ApiError.invalid(
                    "max_tool_calls",
                    "max_tool_calls is not supported: the number of calls is not "
                            + "capped; leave it out (parallel_tool_calls: false allows at most one call)");
        }
        if (f.bool("background", false)) {
            throw ApiError.invalid(
                    "background",
                    "background responses are not supported; send background: false "
                            + "(the response is generated while the request waits, or streamed)");
        }
        String truncation = f.string("truncation", "disabled");
        if (!truncation.equals("disabled")) {
            throw ApiError.invalid(
                    "truncation",
                    "truncation '" + truncation + "' is not supported; only 'disabled' is "
                            + "(an input longer than the context is refused with context_length_exceeded)");
        }
        if (f.get("conversation") != null) {
            throw ApiError.invalid(
                    "conversation",
                    "conversation objects are not supported; continue a response " + "with previous_response_id");
        }
    }

    private static void putNullable(ObjectNode o, String field, String value) {
        if (value == null) {
            o.putNull(field);
        } else {
            o.put(field, value);
        }
    }

    /** Builds messages from input items, merging consecutive function calls into one assistant turn. */
    private static final class InputItems {
        private final List<ChatMessage> out;
        private final Map<String, String> callNames = new HashMap<>();
        private String pendingReasoning;
        /** The assistant turn being built from this input's items (not yet in {@code out}). */
        private String assistantText;

        private List<Map<String, Object>> assistantCalls;

        InputItems(List<ChatMessage> out) {
            this.out = out;
            for (ChatMessage m : out) {
                if (m.extra().get("tool_calls") instanceof List<?> calls) {
                    for (Object c : calls) {
                        if (c instanceof Map<?, ?> call && call.get("function") instanceof Map<?, ?> fn) {
                            callNames.put(String.valueOf(call.get("id")), String.valueOf(fn.get("name")));
                        }
                    }
                }
            }
        }

        void add(JsonNode input) {
            if (input.isTextual()) {
                out.add(ChatMessage.of("user", input.asText()));
                return;
            }
            if (!input.isArray() || input.isEmpty()) {
                throw ApiError.invalid("input", "input must be a string or a non-empty array of items");
            }
            for (int i = 0; i < input.size(); i++) {
                item(input.get(i), "input[" + i + "]");
            }
            endAssistant();
        }

        private void item(JsonNode item, String at) {
            if (!item.isObject()) {
                throw ApiError.invalid(at, at + " must be an object");
            }
            RequestFields f = RequestFields.at(item, at);
            String type = f.string("type", "message");
            switch (type) {
                case "message" -> message(f, at);
                case "function_call" -> {
                    String callId = f.string("call_id", null);
                    String name = f.string("name", null);
                    String arguments = f.string("arguments", null);
                    if (callId == null || name == null || arguments == null) {
                        throw ApiError.invalid(at, at + " (function_call) needs string call_id, name and arguments");
                    }
                    Object args;
                    try {
                        args = JSON.readValue(arguments, Object.class);
                    } catch (JsonProcessingException e) {
                        throw ApiError.invalid(
                                at + ".arguments", at + ".arguments is not valid JSON: " + e.getOriginalMessage());
                    }
                    if (assistantText == null) {
                        assistantText = "";
                    }
                    if (assistantCalls == null) {
                        assistantCalls = new ArrayList<>();
                    }
                    callNames.put(callId, name);
                    assistantCalls.add(ChatTools.call(callId, name, args));
                }
                case "function_call_output" -> {
                    endAssistant();
                    String callId = f.string("call_id", null);
                    if (callId == null) {
                        throw ApiError.invalid(at + ".call_id", at + ".call_id is required");
                    }
                    JsonNode output = f.required("output");
                    Map<String, Object> extra = new LinkedHashMap<>();
                    extra.put("tool_call_id", callId);
                    if (callNames.containsKey(callId)) {
                        extra.put("name", callNames.get(callId));
                    }
                    out.add(new ChatMessage("tool", text(output, at + ".output"), extra));
                }
                case "reasoning" -> {
                    endAssistant();
                    StringBuilder sb = new StringBuilder();
                    JsonNode content = f.array("content");
                    for (JsonNode part : content == null ? JSON.createArrayNode() : content) {
                        sb.append(part.path("text").asText(""));
                    }
                    pendingReasoning = sb.toString();
                }
                default ->
                    throw ApiError.invalid(
                            at + ".type",
                            at + ".type '" + type + "' is not supported (expected"
                                    + " message, function_call, function_call_output or reasoning)");
            }
        }

        private void message(RequestFields f, String at) {
            String role = f.string("role", null);
            if (role == null
                    || !List.of("user", "assistant", "system", "developer").contains(role)) {
                throw ApiError.invalid(at + ".role", at + ".role must be user, assistant, system or developer");
            }
            String text = text(f.required("content"), at + ".content");
            endAssistant();
            if (role.equals("assistant")) {
                assistantText = text;
            } else {
                out.add(ChatMessage.of(role, text));
            }
        }

        private void endAssistant() {
            if (assistantText == null) {
                return;
            }
            Map<String, Object> extra = new LinkedHashMap<>();
            if (pendingReasoning != null) {
                extra.put("reasoning_content", pendingReasoning);
                pendingReasoning = null;
            }
            if (assistantCalls != null) {
                extra.put("tool_calls", assistantCalls);
            }
            out.add(new ChatMessage("assistant", assistantText, extra));
            assistantText = null;
            assistantCalls = null;
        }

        /** A string, or content parts of text ({@code input_text}, {@code output_text}, {@code text}). */
        private static String text(JsonNode c, String at) {
            if (c.isTextual()) {
                return c.asText();
            }
            if (!c.isArray()) {
                throw ApiError.invalid(at, at + " must be a string or an array of text parts");
            }
            StringBuilder sb = new StringBuilder();
            for (int j = 0; j < c.size(); j++) {
                JsonNode part = c.get(j);
                String pt = at + "[" + j + "]";
                String type = part.isObject() ? part.path("type").asText("") : "";
                switch (type) {
                    case "input_text", "output_text", "text" -> {
                        JsonNode t = part.get("text");
                        if (t == null || !t.isTextual()) {
                            throw ApiError.invalid(pt + ".text", pt + ".text must be a string");
                        }
                        sb.append(t.asText());
                    }
                    case "input_image", "input_file" ->
                        throw ApiError.invalid(
                                pt + ".type",
                                pt + " is an " + type
                                        + " part: images and files are not supported (the served model has no vision input)");
                    default ->
                        throw ApiError.invalid(
                                pt + ".type",
                                pt + ".type '" + type + "' is not supported" + " (expected input_text or output_text)");
                }
            }
            return sb.toString();
        }
    }

    private static List<Map<String, Object>> tools(JsonNode tools) {
        return ChatTools.readTools(tools, (f, at, names) -> {
            String type = f.string("type", null);
            if (!"function".equals(type)) {
                throw ApiError.invalid(
                        at + ".type", at + ".type '" + type + "' is not supported: only function" + " tools run here");
            }
            String name = f.string("name", null);
            ChatTools.checkName(name, at + ".name", names);
            JsonNode params = f.object("parameters");
            return ChatTools.function(
                    name,
                    f.string("description", null),
                    params == null ? null : JSON.convertValue(params, Map.class),
                    f.bool("strict", false));
        });
    }

    private static ChatTools.Choice toolChoice(JsonNode c) {
        if (c == null) {
            return ChatTools.Choice.AUTO;
        }
        if (c.isTextual()) {
            return switch (c.asText()) {
                case "auto" -> ChatTools.Choice.AUTO;
                case "required" -> ChatTools.Choice.REQUIRED;
                case "none" -> ChatTools.Choice.NONE;
                default ->
                    throw ApiError.invalid(
                            "tool_choice",
                            "tool_choice must be auto, required, none or" + " {\"type\": \"function\", \"name\": ...}");
            };
        }
        RequestFields f = RequestFields.at(c, "tool_choice");
        String name = f.string("name", null);
        if (!c.isObject() || !"function".equals(f.string("type", null)) || name == null) {
            throw ApiError.invalid(
                    "tool_choice",
                    "tool_choice must be auto, required, none or" + " {\"type\": \"function\", \"name\": ...}");
        }
        return new ChatTools.Choice.Named(name);
    }
}
