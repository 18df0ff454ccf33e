package dev.mlxring.sink.tools;

import dev.mlxring.pipeline.ToolCall;
import dev.mlxring.pycompat.PyJsonLoads;
import dev.mlxring.pycompat.PyRegex;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code mlx_lm/tool_parsers/mistral.py}: {@code [TOOL_CALLS]} with no end marker; either a JSON
 * list {@code [{"name": ..., "arguments": ...}]} (arguments possibly a JSON string; the call's
 * string {@code "id"} kept) or one or more {@code name[ARGS]{...}} headers, each followed by one
 * JSON value ({@code raw_decode}). Exact, including Python's JSON semantics ({@link PyJsonLoads}).
 * An {@code "id"} of {@code ""} is reported as no id (mlx_lm.server replaces it with a uuid).
 * Gap: {@code [\w-]} uses Java's Unicode 16 tables where the {@code regex} module has a newer
 * Unicode version (characters assigned since then are no word characters here).
 */
public final class MistralParser implements ToolCallParser {
    private static final Pattern HEADER =
            Pattern.compile("([\\w-]+)" + PyRegex.S + "*\\[ARGS\\]" + PyRegex.S + "*", PyRegex.FLAGS);

    @Override
    public String type() {
        return "mistral";
    }

    @Override
    public String callStart() {
        return "[TOOL_CALLS]";
    }

    @Override
    public String callEnd() {
        return "";
    }

    @Override
    public List<ToolCall> parse(String text, List<Map<String, Object>> tools) {
        List<ToolCall> calls = jsonCalls(text);
        if (calls.isEmpty()) {
            calls = headerCalls(text);
        }
        if (calls.isEmpty()) {
            throw new IllegalArgumentException("ValueError: Could not parse tool call from: " + text);
        }
        return calls;
    }

    private static List<ToolCall> jsonCalls(String text) {
        Object payload;
        try {
            payload = PyJsonLoads.loads(text, true);
        } catch (PyJsonLoads.DecodeError e) {
            return List.of();
        }
        if (!(payload instanceof List<?> list)) {
            return List.of();
        }
        List<ToolCall> calls = new ArrayList<>();
        for (Object call : list) {
            Object name = null;
            Object arguments = null;
            if (call instanceof Map<?, ?> m) {
                name = m.get("name");
                arguments = m.containsKey("arguments") ? m.get("arguments") : new java.util.LinkedHashMap<>();
            }
            if (arguments instanceof String s) {
                try {
                    arguments = PyJsonLoads.loads(s, true);
                } catch (PyJsonLoads.DecodeError e) {
                    arguments = null;
                }
            }
            if (!(name instanceof String n) || !(arguments instanceof Map)) {
                throw new IllegalArgumentException("ValueError: Could not parse tool call from: " + text);
            }
            String id = null;
            if (((Map<?, ?>) call).get("id") instanceof String s && !s.isEmpty()) {
                id = s;
            }
            calls.add(new ToolCall(n, arguments, id));
        }
        return calls;
    }

    private static List<ToolCall> headerCalls(String text) {
        List<ToolCall> calls = new ArrayList<>();
        Matcher m = HEADER.matcher(text);
        int pos = 0;
        while (pos <= text.length() && m.find(pos)) {
            pos = m.end();
            PyJsonLoads.Decoded d;
            try {
                d = PyJsonLoads.rawDecode(text, pos);
            } catch (PyJsonLoads.DecodeError e) {
                throw new IllegalArgumentException("ValueError: Could not parse tool call from: " + text, e);
            }
            pos = d.end();
            calls.add(new ToolCall(m.group(1), d.value(), null));
        }
        return calls;
    }
}
