package dev.mlxring.ingress.http.anthropic;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.ingress.http.ApiError;
import dev.mlxring.ingress.http.ChatTools;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An Anthropic {@code /v1/messages} (or {@code /v1/messages/count_tokens}) body, validated and
 * turned into the same chat {@link Prompt} the OpenAI codec builds: {@code system} becomes the
 * first system message; {@code tool_use} blocks become the assistant's {@code tool_calls};
 * {@code tool_result} blocks become {@code tool} messages; {@code thinking} blocks become the
 * assistant's {@code reasoning_content}. Every violation is an {@link ApiError} naming the field.
 *
 * @param stream whether to answer with Anthropic's event stream
 */
record MessagesRequest(GenerationRequest request, boolean stream, String model) {
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * @param countOnly {@code count_tokens}: no {@code max_tokens}, no sampling
     */
    static MessagesRequest parse(byte[] body, ServerDefaults defaults, String id, boolean countOnly) {
        RequestFields f = new RequestFields(RequestFields.parseObject(body));
        String adapter = defaults.adapters().fromField(f.node());
        String model = f.string("model", null);
        if (model == null) {
            throw ApiError.invalid("model", "model is required");
        }
        int maxTokens = countOnly ? 1 : f.maxTokens("max_tokens", true, defaults);
        boolean stream = !countOnly && f.bool("stream", false);
        SamplingSpec sampling = f.temperatureTopPTopK(1);
        List<String> stop = countOnly ? List.of() : f.stopStrings("stop_sequences", false);
        f.object("metadata"); // accepted (user_id); nothing here depends on it

        Map<String, String> toolNames = new HashMap<>();
        List<ChatMessage> messages = new ArrayList<>();
        system(f.get("system"), messages);
        JsonNode ms = f.required("messages");
        if (!ms.isArray() || ms.isEmpty()) {
            throw ApiError.invalid("messages", "messages must be a non-empty array");
        }
        for (int i = 0; i < ms.size(); i++) {
            message(ms.get(i), "messages[" + i + "]", messages, toolNames);
        }
        Map<String, Object> kwargs = new HashMap<>();
        JsonNode thinking = f.object("thinking");
        if (thinking != null) {
            String type = RequestFields.at(thinking, "thinking").string("type", "");
            switch (type) {
                case "enabled", "adaptive" -> kwargs.put("enable_thinking", true);
                case "disabled" -> kwargs.put("enable_thinking", false);
                default ->
                    throw ApiError.invalid("thinking.type", "thinking.type must be enabled, adaptive or disabled");
            }
        }
        JsonNode toolsNode = f.array("tools");
        ChatTools.checkCount(toolsNode, "tools");
        List<Map<String, Object>> tools = tools(toolsNode);
        JsonNode choice = f.object("tool_choice");
        ChatTools.Choice toolChoice = toolChoice(choice);
        ChatTools.checkChoice(
                tools,
                toolChoice,
                "tool_choice",
                choice == null
                        ? "auto"
                        : "type '" + RequestFields.at(choice, "tool_choice").string("type", "") + "'");
        boolean parallel =
                choice == null || !RequestFields.at(choice, "tool_choice").bool("disable_parallel_tool_use", false);
        OutputConstraint constraint = StructuredOutputs.anthropic(f.node());
        GenerationRequest req = GenerationRequest.builder()
                .id(id)
                .model(model)
                .prompt(new Prompt.Chat(messages, tools, kwargs))
                .sampling(sampling)
                .maxTokens(maxTokens)
                .stop(stop)
                .constraint(constraint)
                .toolChoice(ChatTools.spec(toolChoice, parallel, "input_schema"))
                .speculative(SpeculativeField.parse(f.node()))
                .adapter(adapter)
                .build();
        return new MessagesRequest(req, stream, model);
    }

    private static void system(JsonNode system, List<ChatMessage> out) {
        if (system == null) {
            return;
        }
        String text = system.isTextual() ? system.asText() : textBlocks(system, "system");
        if (!text.isEmpty()) {
            out.add(ChatMessage.of("system", text));
        }
    }

    /** A string, or an array of {@code text} blocks, joined. */
    private static String textBlocks(JsonNode node, String at) {
        if (node.isTextual()) {
            return node.asText();
        }
        if (!node.isArray()) {
            throw ApiError.invalid(at, at + " must be a string or an array of text blocks");
        }
        StringBuilder sb = new StringBuilder();
        for (int j = 0; j < node.size(); j++) {
            JsonNode b = node.get(j);
            String bt = at + "[" + j + "]";
            String type = blockType(b, bt);
            if (!type.equals("text")) {
                throw unsupported(type, bt, "text");
            }
            sb.append(text(b, bt));
        }
        return sb.toString();
    }

    private static String blockType(JsonNode b, String at) {
        if (!b.isObject()) {
            throw ApiError.invalid(at, at + " must be a content block object");
        }
        JsonNode t = b.get("type");
        if (t == null || !t.isTextual()) {
            throw ApiError.invalid(at + ".type", at + ".type must be a string");
        }
        return t.asText();
    }

    private static ApiError unsupported(String type, String at, String allowed) {
        if (type.equals("image") || type.equals("document")) {
            return ApiError.invalid(
                    at + ".type",
                    at + " is an " + type + " block: images and documents are not"
                            + " supported (the served model has no vision input)");
        }
        return ApiError.invalid(
                at + ".type", at + ".type '" + type + "' is not supported here (expected " + allowed + ")");
    }

    private static String text(JsonNode block, String at) {
        JsonNode t = block.get("text");
        if (t == null || !t.isTextual()) {
            throw ApiError.invalid(at + ".text", at + ".text must be a string");
        }
        return t.asText();
    }

    private static void message(JsonNode m, String at, List<ChatMessage> out, Map<String, String> toolNames) {
        if (!m.isObject()) {
            throw ApiError.invalid(at, at + " must be an object");
        }
        RequestFields f = RequestFields.at(m, at);
        String role = f.string("role", null);
        if (role == null || !(role.equals("user") || role.equals("assistant"))) {
            throw ApiError.invalid(at + ".role", at + ".role must be \"user\" or \"assistant\"");
        }
        JsonNode content = f.required("content");
        if (content.isTextual()) {
            out.add(ChatMessage.of(role, content.asText()));
            return;
        }
        if (!content.isArray()) {
            throw ApiError.invalid(at + ".content", at + ".content must be a string or an array of content blocks");
        }
        StringBuilder text = new StringBuilder();
        StringBuilder thinking = new StringBuilder();
        List<Map<String, Object>> calls = new ArrayList<>();
        for (int j = 0; j < content.size(); j++) {
            JsonNode b = content.get(j);
            String bt = at + ".content[" + j + "]";
            String type = blockType(b, bt);
            switch (role + ":" + type) {
                case "user:text", "assistant:text" -> text.append(text(b, bt));
                case "user:tool_result" -> out.add(toolResult(b, bt, toolNames));
                case "assistant:tool_use" -> calls.add(toolUse(b, bt, toolNames));
                case "assistant:thinking" -> {
                    JsonNode t = b.get("thinking");
                    if (t == null || !t.isTextual()) {
                        throw ApiError.invalid(bt + ".thinking", bt + ".thinking must be a string");
                    }
                    thinking.append(t.asText());
                }
                case "assistant:redacted_thinking" -> {
                    // opaque to this server: nothing to render
                }
                default ->
                    throw unsupported(
                            type, bt, role.equals("user") ? "text or tool_result" : "text, tool_use or thinking");
            }
        }
        if (role.equals("user")) {
            // tool results were added as tool messages, in order; the text follows them
            if (!text.isEmpty() || content.isEmpty()) {
                out.add(ChatMessage.of("user", text.toString()));
            }
            return;
        }
        Map<String, Object> extra = new LinkedHashMap<>();
        if (!thinking.isEmpty()) {
            extra.put("reasoning_content", thinking.toString());
        }
        if (!calls.isEmpty()) {
            extra.put("tool_calls", calls);
        }
        out.add(new ChatMessage("assistant", text.toString(), extra));
    }

    private static Map<String, Object> toolUse(JsonNode b, String at, Map<String, String> toolNames) {
        RequestFields f = RequestFields.at(b, at);
        String id = f.string("id", null);
        String name = f.string("name", null);
        if (id == null || name == null) {
            throw ApiError.invalid(at, at + " needs a string id and name");
        }
        JsonNode input = f.object("input");
        toolNames.put(id, name);
        return ChatTools.call(id, name, input == null ? Map.of() : JSON.convertValue(input, Map.class));
    }

    private static ChatMessage toolResult(JsonNode b, String at, Map<String, String> toolNames) {
        RequestFields f = RequestFields.at(b, at);
        String id = f.string("tool_use_id", null);
        if (id == null) {
            throw ApiError.invalid(at + ".tool_use_id", at + ".tool_use_id is required");
        }
        f.bool("is_error", false);
        JsonNode c = f.get("content");
        String content = c == null ? "" : textBlocks(c, at + ".content");
        Map<String, Object> extra = new LinkedHashMap<>();
        extra.put("tool_call_id", id);
        String name = toolNames.get(id);
        if (name != null) {
            extra.put("name", name);
        }
        return new ChatMessage("tool", content, extra);
    }

    private static List<Map<String, Object>> tools(JsonNode tools) {
        return ChatTools.readTools(tools, (f, at, names) -> {
            String type = f.string("type", "custom");
            if (!type.equals("custom")) {
                throw ApiError.invalid(
                        at + ".type",
                        at + ".type '" + type + "' is not supported: only client tools"
                                + " (name, description, input_schema) run here");
            }
            String name = f.string("name", null);
            ChatTools.checkName(name, at + ".name", names);
            JsonNode schema = f.object("input_schema");
            if (schema == null) {
                throw ApiError.invalid(at + ".input_schema", at + ".input_schema is required");
            }
            return ChatTools.function(
                    name, f.string("description", null), JSON.convertValue(schema, Map.class), f.bool("strict", false));
        });
    }

    private static ChatTools.Choice toolChoice(JsonNode c) {
        if (c == null) {
            return ChatTools.Choice.AUTO;
        }
        RequestFields f = RequestFields.at(c, "tool_choice");
        f.bool("disable_parallel_tool_use", false);
        return switch (f.string("type", "")) {
            case "auto" -> ChatTools.Choice.AUTO;
            case "any" -> ChatTools.Choice.REQUIRED;
            case "none" -> ChatTools.Choice.NONE;
            case "tool" -> {
                String name = f.string("name", null);
                if (name == null) {
                    throw ApiError.invalid("tool_choice.name", "tool_choice.name is required with type tool");
                }
                yield new ChatTools.Choice.Named(name);
            }
            default -> throw ApiError.invalid("tool_choice.type", "tool_choice.type must be auto, any, tool or none");
        };
    }
}
