package dev.mlxring.ingress.http;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Tool definitions and calls in the form chat templates read (OpenAI's chat shape, which Hugging
 * Face templates are written for), built from any codec's own shape, and the tool-choice rule
 * the codecs share. Stateless.
 *
 * <p>Tool choice: nothing constrains decoding, so a choice can only change which tools the
 * template offers: {@code none} offers none, a named tool offers only that one, and "auto" or
 * "any"/"required" offer all of them (the model may still answer without a call).
 */
public final class ChatTools {
    private ChatTools() {}

    /** How a request lets the model use its tools. */
    public sealed interface Choice {
        Choice AUTO = new Auto();
        Choice NONE = new None();

        record Auto() implements Choice {}

        record None() implements Choice {}

        record Named(String name) implements Choice {}
    }

    /** {@code {"type": "function", "function": {"name", "description"?, "parameters"}}}. */
    public static Map<String, Object> function(String name, String description, Object parameters) {
        Map<String, Object> fn = new LinkedHashMap<>();
        fn.put("name", name);
        if (description != null) {
            fn.put("description", description);
        }
        fn.put("parameters", parameters == null ? Map.of("type", "object", "properties", Map.of()) : parameters);
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

    /** The tools the template offers under {@code choice}; a named tool must be defined. */
    @SuppressWarnings("unchecked")
    public static List<Map<String, Object>> offered(List<Map<String, Object>> tools, Choice choice, String field) {
        return switch (choice) {
            case Choice.None n -> List.of();
            case Choice.Auto a -> tools;
            case Choice.Named named -> {
                for (Map<String, Object> t : tools) {
                    if (named.name().equals(((Map<String, Object>) t.get("function")).get("name"))) {
                        yield List.of(t);
                    }
                }
                throw ApiError.invalid(field, field + " names tool '" + named.name() + "', which is not in tools");
            }
        };
    }
}
