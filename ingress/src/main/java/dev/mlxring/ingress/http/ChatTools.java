package dev.mlxring.ingress.http;

import dev.mlxring.pipeline.ToolChoiceSpec;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Tool definitions and calls in the form chat templates read (OpenAI's chat shape, which Hugging
 * Face templates are written for), built from any codec's own shape, and the tool-choice rule
 * the codecs share. Stateless.
 *
 * <p>The tools go to the chat template. A choice that demands something of the output — a call
 * of any tool ({@code required}, Anthropic's {@code any}), of a named tool, strict tools' arguments,
 * at most one call — travels to plan as a {@link ToolChoiceSpec} ({@link #spec}), which holds the
 * output to it with a grammar in the model's tool-call syntax (or refuses it there with a 400).
 * {@code none} is accepted without tools only: with tools they would still be offered and nothing
 * keeps the model from calling them ({@link #refuseUnenforced}). Tool names follow OpenAI's rule
 * (1 to 64 letters, digits, '_' or '-', unique), at most {@value #MAX_TOOLS} tools, on every route.
 */
public final class ChatTools {
    public static final int MAX_TOOLS = 128;
    private static final java.util.regex.Pattern NAME = java.util.regex.Pattern.compile("[a-zA-Z0-9_-]{1,64}");

    private ChatTools() {}

    /** How a request lets the model use its tools. */
    public sealed interface Choice {
        Choice AUTO = new Auto();
        Choice NONE = new None();
        Choice REQUIRED = new Required();

        record Auto() implements Choice {}

        record None() implements Choice {}

        /** Anthropic's {@code any}, OpenAI's {@code required}: needs at least one tool. */
        record Required() implements Choice {}

        record Named(String name) implements Choice {}
    }

    /** Checks a tool's name (at {@code at}) and that no earlier tool has it. */
    public static void checkName(String name, String at, java.util.Set<String> seen) {
        if (name == null || !NAME.matcher(name).matches()) {
            throw ApiError.invalid(at, at + " must be a string of 1 to 64 letters, digits, underscores or dashes");
        }
        if (!seen.add(name)) {
            throw ApiError.invalid(at, at + " '" + name + "' is used by an earlier tool; tool names must be unique");
        }
    }

    /** Reads one tool definition of a codec's shape into the chat form ({@link #function}). */
    @FunctionalInterface
    public interface ToolReader {
        /**
         * @param f the tool object's fields
         * @param at its path in the request ({@code tools[i]}), for error messages
         * @param names the names of the tools before it (for {@link #checkName})
         */
        Map<String, Object> read(RequestFields f, String at, java.util.Set<String> names);
    }

    /** A codec's {@code tools} array (absent: none), each entry an object read by {@code reader}. */
    public static List<Map<String, Object>> readTools(
            com.fasterxml.jackson.databind.JsonNode tools, ToolReader reader) {
        List<Map<String, Object>> out = new java.util.ArrayList<>();
        if (tools == null) {
            return out;
        }
        java.util.Set<String> names = new java.util.HashSet<>();
        for (int i = 0; i < tools.size(); i++) {
            com.fasterxml.jackson.databind.JsonNode t = tools.get(i);
            String at = "tools[" + i + "]";
            if (!t.isObject()) {
                throw ApiError.invalid(at, at + " must be an object");
            }
            out.add(reader.read(RequestFields.at(t, at), at, names));
        }
        return out;
    }

    /** At most {@link #MAX_TOOLS} tools. */
    public static void checkCount(com.fasterxml.jackson.databind.JsonNode tools, String field) {
        if (tools != null && tools.size() > MAX_TOOLS) {
            throw ApiError.invalid(field, field + " may hold at most " + MAX_TOOLS + " tools, got " + tools.size());
        }
    }

    /** {@code {"type": "function", "function": {"name", "description"?, "parameters"}}}. */
    public static Map<String, Object> function(String name, String description, Object parameters) {
        return function(name, description, parameters, false);
    }

    /**
     * {@code {"type": "function", "function": {"name", "description"?, "parameters", "strict"?}}},
     * {@code "strict": true} only when {@code strict} (plan then holds the tool's arguments to
     * {@code parameters} under {@code auto}).
     */
    public static Map<String, Object> function(String name, String description, Object parameters, boolean strict) {
        Map<String, Object> fn = new LinkedHashMap<>();
        fn.put("name", name);
        if (description != null) {
            fn.put("description", description);
        }
        fn.put("parameters", parameters == null ? Map.of("type", "object", "properties", Map.of()) : parameters);
        if (strict) {
            fn.put("strict", true);
        }
        Map<String, Object> tool = new LinkedHashMap<>();
        tool.put("type", "function");
        tool.put("function", fn);
        return tool;
    }

    /**
     * One entry of an assistant message's {@code tool_calls}: {@code {"id", "type": "function",
     * "function": {"name", "arguments"}}} with the arguments as an object, as mlx_lm.server hands
     * them to the template after {@code json.loads}.
     */
    public static Map<String, Object> call(String id, String name, Object arguments) {
        Map<String, Object> fn = new LinkedHashMap<>();
        fn.put("name", name);
        fn.put("arguments", arguments);
        Map<String, Object> call = new LinkedHashMap<>();
        call.put("id", id);
        call.put("type", "function");
        call.put("function", fn);
        return call;
    }

    /**
     * Refuses, with a 400 naming {@code field}, the one tool choice generation does not honour:
     * {@code none} while tools are given (they still reach the template, nothing keeps the model
     * from calling them, and a call it made would be returned).
     *
     * @param given the choice as the request wrote it, for the message
     */
    public static void refuseUnenforced(Choice choice, boolean hasTools, String field, String given) {
        if (choice instanceof Choice.None && hasTools) {
            throw ApiError.invalid(
                    field,
                    field + " " + given + " is not supported with tools: they would still be "
                            + "offered to the model, and nothing keeps it from calling them; leave tools out to forbid calls, "
                            + "or use auto");
        }
    }

    /**
     * The choice as plan reads it.
     *
     * @param parallel whether the output may hold more than one call
     * @param schemaKey where a tool's argument schema sits under {@code tools[i]} in this codec's
     *     request, for plan's errors
     */
    public static ToolChoiceSpec spec(Choice choice, boolean parallel, String schemaKey) {
        return switch (choice) {
            case Choice.Auto a -> new ToolChoiceSpec(ToolChoiceSpec.Mode.AUTO, null, parallel, schemaKey);
            case Choice.None n -> new ToolChoiceSpec(ToolChoiceSpec.Mode.NONE, null, parallel, schemaKey);
            case Choice.Required r -> new ToolChoiceSpec(ToolChoiceSpec.Mode.REQUIRED, null, parallel, schemaKey);
            case Choice.Named named -> new ToolChoiceSpec(ToolChoiceSpec.Mode.NAMED, named.name(), parallel, schemaKey);
        };
    }

    /**
     * Checks {@code choice} against the defined tools: a named tool must be one of them, and a
     * required call needs at least one; then refuses what is not honoured
     * ({@link #refuseUnenforced}). What it accepts goes to plan as {@link #spec}.
     *
     * @param given the choice as the request wrote it, for the message
     */
    @SuppressWarnings("unchecked")
    public static void checkChoice(List<Map<String, Object>> tools, Choice choice, String field, String given) {
        switch (choice) {
            case Choice.Required r
            when tools.isEmpty() -> throw ApiError.invalid(field, field + " requires a tool call but tools is empty");
            case Choice.Named named -> {
                boolean found = false;
                for (Map<String, Object> t : tools) {
                    found |= named.name().equals(((Map<String, Object>) t.get("function")).get("name"));
                }
                if (!found) {
                    throw ApiError.invalid(field, field + " names tool '" + named.name() + "', which is not in tools");
                }
            }
            default -> {
                // auto, none, or required with tools
            }
        }
        refuseUnenforced(choice, !tools.isEmpty(), field, given);
    }
}
