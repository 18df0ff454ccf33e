package dev.mlxring.ingress.http.openai;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mlxring.ingress.http.ApiError;
import dev.mlxring.ingress.http.ChatTools;
import dev.mlxring.ingress.http.RequestFields;
import dev.mlxring.pipeline.ToolChoiceSpec;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * OpenAI's {@code tools}, {@code tool_choice} and {@code parallel_tool_calls}, validated as
 * OpenAI validates them: each tool {@code {"type": "function", "function": {"name",
 * "description"?, "parameters"?}}} with a name of at most 64 letters, digits, '_' or '-', unique,
 * and parameters a JSON-schema object; at most {@value #MAX_TOOLS} tools. A key set to null is
 * absent.
 *
 * <p>The tools go to the chat template with {@code strict} kept; {@code tool_choice}
 * {@code "required"}, a named function, {@code strict: true} tools and {@code parallel_tool_calls:
 * false} go to plan ({@link #choice}), which holds the output to them with a grammar in the
 * model's tool-call syntax. {@code "none"} with tools is refused with a 400 naming {@code
 * tool_choice} (they would still be offered, and nothing keeps the model from calling them).
 */
final class OpenAiTools {
    static final int MAX_TOOLS = ChatTools.MAX_TOOLS;
    private static final Pattern NAME = Pattern.compile("[a-zA-Z0-9_-]{1,64}");
    private static final Set<String> CHOICES = Set.of("none", "auto", "required");

    private OpenAiTools() {}

    /** The tools as plain maps for the chat template; empty when absent. */
    static List<Map<String, Object>> parse(JsonNode tools, JsonNode toolChoice, boolean parallelToolCalls) {
        List<Map<String, Object>> out = new ArrayList<>();
        Set<String> names = new HashSet<>();
        if (tools != null && !tools.isNull()) {
            if (!tools.isArray()) {
                throw ApiError.invalid("tools", "tools must be an array of function tools");
            }
            if (tools.size() > MAX_TOOLS) {
                throw ApiError.invalid("tools", "tools may hold at most " + MAX_TOOLS + " tools, got " + tools.size());
            }
            for (int i = 0; i < tools.size(); i++) {
                String at = "tools[" + i + "]";
                String name = checkTool(tools.get(i), at);
                if (!names.add(name)) {
                    throw ApiError.invalid(
                            at + ".function.name",
                            at + ".function.name '" + name + "' is used by an earlier tool; tool names must be unique");
                }
                Map<String, Object> tool = RequestFields.withoutNullKeys(tools.get(i));
                tool.put("function", RequestFields.withoutNullKeys(tools.get(i).get("function")));
                out.add(tool);
            }
        }
        checkChoice(toolChoice, names);
        return out;
    }

    /**
     * The request's tool choice as plan reads it; {@code toolChoice} has passed {@link #parse}.
     *
     * @param parallelToolCalls {@code parallel_tool_calls} (true when absent)
     */
    static ToolChoiceSpec choice(JsonNode toolChoice, boolean parallelToolCalls) {
        ChatTools.Choice c;
        if (toolChoice == null || toolChoice.isNull()) {
            c = ChatTools.Choice.AUTO;
        } else if (toolChoice.isTextual()) {
            c = switch (toolChoice.textValue()) {
                case "none" -> ChatTools.Choice.NONE;
                case "required" -> ChatTools.Choice.REQUIRED;
                default -> ChatTools.Choice.AUTO;
            };
        } else {
            c = new ChatTools.Choice.Named(
                    toolChoice.path("function").path("name").textValue());
        }
        return ChatTools.spec(c, parallelToolCalls, "function.parameters");
    }

    private static String checkTool(JsonNode tool, String at) {
        if (!tool.isObject()) {
            throw ApiError.invalid(at, at + " must be an object {\"type\": \"function\", \"function\": {...}}");
        }
        JsonNode type = tool.get("type");
        if (type == null || !type.isTextual() || !type.textValue().equals("function")) {
            throw ApiError.invalid(at + ".type", at + ".type must be \"function\" (the only tool type supported)");
        }
        JsonNode fn = tool.get("function");
        if (fn == null || !fn.isObject()) {
            throw ApiError.invalid(at + ".function", at + ".function must be an object with a name");
        }
        JsonNode name = fn.get("name");
        if (name == null || !name.isTextual() || !NAME.matcher(name.textValue()).matches()) {
            throw ApiError.invalid(
                    at + ".function.name",
                    at + ".function.name must be a string of 1 to 64 " + "letters, digits, underscores or dashes");
        }
        JsonNode description = fn.get("description");
        if (description != null && !description.isNull() && !description.isTextual()) {
            throw ApiError.invalid(at + ".function.description", at + ".function.description must be a string");
        }
        JsonNode parameters = fn.get("parameters");
        if (parameters != null && !parameters.isNull() && !parameters.isObject()) {
            throw ApiError.invalid(
                    at + ".function.parameters", at + ".function.parameters must be a JSON Schema " + "object");
        }
        JsonNode strict = fn.get("strict");
        if (strict != null && !strict.isNull() && !strict.isBoolean()) {
            throw ApiError.invalid(at + ".function.strict", at + ".function.strict must be a boolean");
        }
        return name.textValue();
    }

    private static void checkChoice(JsonNode choice, Set<String> names) {
        if (choice == null || choice.isNull()) {
            return;
        }
        if (choice.isTextual()) {
            if (!CHOICES.contains(choice.textValue())) {
                throw ApiError.invalid(
                        "tool_choice",
                        "tool_choice must be \"none\", \"auto\", \"required\" or "
                                + "{\"type\": \"function\", \"function\": {\"name\": ...}}, got \"" + choice.textValue()
                                + "\"");
            }
            if (choice.textValue().equals("required") && names.isEmpty()) {
                throw ApiError.invalid("tool_choice", "tool_choice \"required\" needs at least one tool in tools");
            }
            ChatTools.refuseUnenforced(
                    switch (choice.textValue()) {
                        case "none" -> ChatTools.Choice.NONE;
                        case "required" -> ChatTools.Choice.REQUIRED;
                        default -> ChatTools.Choice.AUTO;
                    },
                    !names.isEmpty(),
                    "tool_choice",
                    "\"" + choice.textValue() + "\"");
            return;
        }
        if (!choice.isObject()
                || !"function".equals(choice.path("type").textValue())
                || !choice.path("function").path("name").isTextual()) {
            throw ApiError.invalid(
                    "tool_choice",
                    "tool_choice must be \"none\", \"auto\", \"required\" or "
                            + "{\"type\": \"function\", \"function\": {\"name\": ...}}");
        }
        String name = choice.path("function").path("name").textValue();
        if (!names.contains(name)) {
            throw ApiError.invalid("tool_choice", "tool_choice names function '" + name + "', which is not in tools");
        }
        ChatTools.refuseUnenforced(
                new ChatTools.Choice.Named(name),
                true,
                "tool_choice",
                "{\"type\": \"function\", \"function\": {\"name\": \"" + name + "\"}}");
    }
}
