package dev.mlxring.sink.tools;

import dev.mlxring.pipeline.ToolCall;
import dev.mlxring.pycompat.PyJsonLoads;
import dev.mlxring.pycompat.PyStrings;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@code mlx_lm/tool_parsers/json_tools.py} (Qwen2.5, Qwen3, Hermes): {@code <tool_call>} ...
 * {@code </tool_call>}, parsed as {@code json.loads(text.strip())} ({@link PyJsonLoads}: NaN /
 * Infinity, duplicate keys, big ints, exactly as Python).
 *
 * <p>mlx_lm.server then reads the result as a call dict (or a list of them) and serialises
 * {@code arguments}. Where Python would crash there (the JSON is not an object or a list of
 * objects, an object has no {@code "arguments"}; the server does not catch the TypeError /
 * KeyError), this port throws IllegalArgumentException (the call is dropped). A
 * non-string {@code "name"} is also rejected (Python would pass it through as it is); extra keys
 * besides name / arguments / id, which mlx_lm.server copies into {@code function}, are dropped.
 * {@code "id"} is kept when it is a non-empty string (the server replaces a falsy id with a uuid);
 * a non-string id is ignored (gap: Python would use it as it is).
 */
public final class JsonToolsParser implements ToolCallParser {
    @Override
    public String type() {
        return "json_tools";
    }

    @Override
    public String callStart() {
        return "<tool_call>";
    }

    @Override
    public String callEnd() {
        return "</tool_call>";
    }

    @Override
    public List<ToolCall> parse(String text, List<Map<String, Object>> tools) {
        Object parsed = PyJsonLoads.loads(PyStrings.strip(text, null), true);
        List<ToolCall> out = new ArrayList<>();
        if (parsed instanceof List<?> list) {
            for (Object o : list) {
                out.add(toCall(o));
            }
        } else {
            out.add(toCall(parsed));
        }
        return out;
    }

    /** A parser's call dict (name, arguments, optional id) as a ToolCall. */
    static ToolCall toCall(Object o) {
        if (!(o instanceof Map<?, ?> m)) {
            throw new IllegalArgumentException("TypeError: tool call is not an object: " + PyStrings.repr(o));
        }
        if (!m.containsKey("arguments")) {
            throw new IllegalArgumentException("KeyError: 'arguments'");
        }
        Object name = m.get("name");
        if (name != null && !(name instanceof String)) {
            throw new IllegalArgumentException("tool call name is not a string: " + PyStrings.repr(name));
        }
        Object id = m.get("id");
        return new ToolCall((String) name, m.get("arguments"), id instanceof String s && !s.isEmpty() ? s : null);
    }
}
