package dev.mlxring.sink.tools;

import dev.mlxring.pipeline.ToolCall;
import dev.mlxring.pycompat.PyLiteral;
import dev.mlxring.pycompat.PyRegex;
import dev.mlxring.pycompat.PyStrings;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code mlx_lm/tool_parsers/pythonic.py} (LFM2 / LFM2.5 and other {@code <|tool_call_start|>}
 * models): {@code [name(a="x", b=2), pkg.fn(c=[1, true])]}. First the text from the first
 * {@code [} to the last {@code ]} as a Python expression: a non-empty list of calls with keyword
 * arguments only, each value a literal ({@code ast.literal_eval}, JSON's true / false / null
 * accepted as names). Anything else falls back to a regex over the first {@code [name(args)]}
 * with {@code key="..." | key='...' | key=bare} arguments, each value tried with
 * {@code ast.literal_eval} and kept as a string when that fails.
 *
 * <p>Gaps: the Python side is {@link PyLiteral}'s subset (bytes, complex, sets, non-str dict
 * keys, Ellipsis make this fall back / keep the string where Python would produce a value
 * mlx_lm.server cannot serialise); a call on an attribute of a non-name ({@code a().b(x=1)},
 * which Python names {@code b}) falls back to the regex here.
 */
public final class PythonicParser implements ToolCallParser {
    private static final Pattern TOOL_CALL =
            Pattern.compile("\\[(?<name>[\\w.]+)\\((?<args>.*?)\\)\\]", Pattern.DOTALL | PyRegex.FLAGS);
    private static final Pattern TOOL_ARGS = Pattern.compile(
            "(?<key>\\w+)=(?:\"(?<q1>[^\"]*)\"|'(?<q2>[^']*)'|(?<bare>[^,]+))(?:," + PyRegex.S + "*|$)",
            Pattern.DOTALL | PyRegex.FLAGS);

    @Override
    public String type() {
        return "pythonic";
    }

    @Override
    public String callStart() {
        return "<|tool_call_start|>";
    }

    @Override
    public String callEnd() {
        return "<|tool_call_end|>";
    }

    @Override
    public List<ToolCall> parse(String text, List<Map<String, Object>> tools) {
        int start = text.indexOf('[');
        int end = text.lastIndexOf(']');
        if (start != -1 && end > start) {
            List<PyLiteral.KeywordCall> calls = PyLiteral.callList(text.substring(start, end + 1));
            if (calls != null) {
                return calls.stream()
                        .map(c -> new ToolCall(c.name(), c.arguments(), null))
                        .toList();
            }
        }
        Matcher m = TOOL_CALL.matcher(text);
        if (!m.find()) {
            throw new IllegalArgumentException("ValueError: No function provided.");
        }
        String name = m.group("name");
        String args = m.group("args");
        Map<String, Object> arguments = new LinkedHashMap<>();
        Matcher am = TOOL_ARGS.matcher(args);
        while (am.find()) {
            String bare = am.group("bare");
            String key = PyStrings.strip(am.group("key"), null);
            String value;
            if (bare != null) {
                value = PyStrings.strip(bare, null);
            } else {
                value = am.group("q1") != null ? am.group("q1") : am.group("q2");
            }
            Object v = value;
            try {
                v = PyLiteral.literalEval(value);
            } catch (PyLiteral.Fail e) {
                // keep the string
            }
            arguments.put(key, v);
        }
        return List.of(new ToolCall(name, arguments, null));
    }
}
