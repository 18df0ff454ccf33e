package dev.mlxring.sink.tools;

import dev.mlxring.pipeline.ToolCall;
import dev.mlxring.pycompat.PyJsonLoads;
import dev.mlxring.pycompat.PyLiteral;
import dev.mlxring.pycompat.PyNumbers;
import dev.mlxring.pycompat.PyRegex;
import dev.mlxring.pycompat.PyStrings;
import dev.mlxring.pycompat.PyValues;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code mlx_lm/tool_parsers/qwen3_coder.py}: {@code <tool_call>} {@code <function=NAME>}
 * {@code <parameter=KEY>VALUE</parameter>}... {@code </function>} {@code </tool_call>}, each
 * value converted by the type the request's tool schema gives it ({@code _convert_param_value}):
 * "null" (any case) is None; no schema entry: the raw string; no "type": JSON containers only;
 * string types: raw; int / uint / long / short / unsigned*: {@code int(float(v))}, ValueError if
 * fractional; num* / float*: float, or int when integral; boolean / bool / binary: "true" (any
 * case); object / array / arr / dict* / list*: {@code json.loads(v, strict=False)}, then (and for
 * any other type) {@code ast.literal_eval}, else the raw string.
 *
 * <p>Exact ports: {@code float(str)} ({@link PyNumbers#parseFloat}: Unicode digits and spaces,
 * underscores, inf / nan), Python's JSON ({@link PyJsonLoads}). Gaps: {@code ast.literal_eval} is
 * {@link PyLiteral}'s subset (bytes, complex, sets, non-str dict keys keep the raw string where
 * Python returns a value json.dumps cannot serialise); where Python raises something other than a
 * ValueError (OverflowError for an infinite int, TypeError / KeyError for a malformed tool
 * schema), which mlx_lm.server does not catch, this throws IllegalArgumentException too (the call
 * is dropped); a schema entry that is not an object (Python would test {@code "type" in} a string
 * or list) is treated as one without "type".
 */
public final class Qwen3CoderParser implements ToolCallParser {
    private static final String NOT_SPACE = "[^" + PyRegex.SPACE_CHARS + "<>]";
    private static final Pattern FUNCTION =
            Pattern.compile("<function=(.*?)</function>$", Pattern.DOTALL | PyRegex.FLAGS);
    private static final Pattern PARAMETER =
            Pattern.compile("<parameter=(.*?)</parameter>", Pattern.DOTALL | PyRegex.FLAGS);
    private static final Pattern NAME = Pattern.compile(PyRegex.S + "*(" + NOT_SPACE + "+)>?", PyRegex.FLAGS);

    private static final Set<String> STRING_TYPES = Set.of("string", "str", "text", "varchar", "char", "enum");
    private static final Set<String> BOOL_TYPES = Set.of("boolean", "bool", "binary");
    private static final Set<String> OBJ_TYPES = Set.of("object", "array", "arr");

    @Override
    public String type() {
        return "qwen3_coder";
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
        Matcher m = FUNCTION.matcher(text);
        if (!m.find()) {
            throw new IllegalArgumentException("ValueError: No function provided.");
        }
        return List.of(parseXmlFunctionCall(m.group(1), tools));
    }

    private static ToolCall parseXmlFunctionCall(String call, List<Map<String, Object>> tools) {
        Matcher nm = NAME.matcher(call);
        if (!nm.lookingAt()) {
            throw new IllegalArgumentException("ValueError: No function name provided.");
        }
        String functionName = nm.group(1);
        Map<?, ?> config = argumentsConfig(functionName, tools);
        String parameters = call.substring(nm.end());
        Map<String, Object> params = new LinkedHashMap<>();
        Matcher pm = PARAMETER.matcher(parameters);
        while (pm.find()) {
            String matchText = pm.group(1);
            Matcher km = NAME.matcher(matchText);
            if (!km.lookingAt()) {
                continue;
            }
            String paramName = km.group(1);
            String value = matchText.substring(km.end());
            if (value.startsWith("\n")) {
                value = value.substring(1);
            }
            if (value.endsWith("\n")) {
                value = value.substring(0, value.length() - 1);
            }
            params.put(paramName, convertParamValue(value, paramName, config));
        }
        return new ToolCall(functionName, params, null);
    }

    /** {@code _get_arguments_config}. */
    private static Map<?, ?> argumentsConfig(String name, List<Map<String, Object>> tools) {
        if (tools == null) {
            return Map.of();
        }
        for (Map<String, Object> tool : tools) {
            Object function = tool.get("function");
            if (!PyValues.truthy(function)) {
                continue;
            }
            if (!(function instanceof Map<?, ?> f) || !f.containsKey("name")) {
                throw new IllegalArgumentException("TypeError/KeyError: malformed tool definition");
            }
            if (name.equals(f.get("name"))) {
                Object params = f.get("parameters");
                if (!PyValues.truthy(params)) {
                    return Map.of();
                }
                if (!(params instanceof Map<?, ?> p)) {
                    throw new IllegalArgumentException("AttributeError: tool parameters is not an object");
                }
                Object props = p.containsKey("properties") ? p.get("properties") : Map.of();
                if (!(props instanceof Map<?, ?> pr)) {
                    throw new IllegalArgumentException("AttributeError: tool properties is not an object");
                }
                return pr;
            }
        }
        return Map.of();
    }

    /** {@code _convert_param_value}. */
    static Object convertParamValue(String value, String name, Map<?, ?> config) {
        if (value.toLowerCase(Locale.ROOT).equals("null")) {
            return null;
        }
        Object param = config.get(name);
        if (!PyValues.truthy(param)) {
            return value;
        }
        if (!(param instanceof Map<?, ?> p) || !p.containsKey("type")) {
            Object v;
            try {
                v = PyJsonLoads.loads(value, true);
            } catch (PyJsonLoads.DecodeError e) {
                return value;
            }
            return v instanceof Map || v instanceof List ? v : value;
        }
        String type = PyStrings.strip(PyStrings.str(p.get("type")), null).toLowerCase(Locale.ROOT);
        if (STRING_TYPES.contains(type)) {
            return value;
        } else if (type.startsWith("int")
                || type.startsWith("uint")
                || type.startsWith("long")
                || type.startsWith("short")
                || type.startsWith("unsigned")) {
            double f = PyNumbers.parseFloat(value);
            Number i = PyNumbers.intOfFloat(f);
            if (f - i.doubleValue() != 0) {
                throw new IllegalArgumentException("ValueError: Invalid integer literal '" + value + "'");
            }
            return i;
        } else if (type.startsWith("num") || type.startsWith("float")) {
            double f = PyNumbers.parseFloat(value);
            Number i = PyNumbers.intOfFloat(f);
            return f - i.doubleValue() != 0 ? (Object) f : i;
        } else if (BOOL_TYPES.contains(type)) {
            return value.toLowerCase(Locale.ROOT).equals("true");
        } else {
            if (OBJ_TYPES.contains(type) || type.startsWith("dict") || type.startsWith("list")) {
                try {
                    return PyJsonLoads.loads(value, false);
                } catch (PyJsonLoads.DecodeError e) {
                    // fall through to literal_eval
                }
            }
            try {
                return PyLiteral.literalEval(value);
            } catch (PyLiteral.Fail e) {
                return value;
            }
        }
    }
}
