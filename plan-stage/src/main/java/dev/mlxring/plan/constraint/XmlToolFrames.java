package dev.mlxring.plan.constraint;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The function blocks of mlx-lm's {@code qwen3_coder} format as Lark rules: {@code
 * <function=NAME>} then one {@code <parameter=KEY>\nVALUE\n</parameter>} per argument, then
 * {@code </function>}, where the sink's parser converts each raw VALUE by the type its property
 * schema names. So a property is held to its schema only where the raw text can be: {@code
 * string} (free text, or one of its {@code enum} / {@code const} strings; a property without
 * {@code type} may have those strings too), {@code integer},
 * {@code number}, {@code object}, {@code array} (JSON text matching the property's schema, with the
 * root's {@code $defs}) and {@code boolean} ({@code true} / {@code false}). Anything else (no
 * {@code type}, a list of types, {@code null}, string keywords such as {@code pattern}) is refused.
 * Properties come in the schema's order, the required ones always, the others optionally; no
 * other key is allowed. Stateless.
 */
final class XmlToolFrames {
    /** A name or key the parser reads whole ({@code [^\s<>]+}). */
    private static final Pattern WORD =
            Pattern.compile("[^\\s<>\\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029" + "\\u202F\\u205F\\u3000]+");

    private static final Set<String> JSON_TYPES = Set.of("integer", "number", "object", "array");
    private static final Set<String> STRING_CONSTRAINTS = Set.of("pattern", "minLength", "maxLength", "format");
    private static final String ANY = "(?s:.*)";
    /** The sink ends the call at its end marker, and reads "null" in any case as None. */
    private static final String FREE_VALUE = "/" + ANY + "\\x0A\\x3C\\x2Fparameter\\x3E/ & ~/" + ANY
            + "\\x3C\\x2Ftool_call\\x3E" + ANY + "/ & ~/[nN][uU][lL][lL]\\x0A\\x3C\\x2Fparameter\\x3E/";

    private XmlToolFrames() {}

    /**
     * Appends {@code xframe_i} per tool and {@code xframe}, any of them.
     *
     * @param names the tools' names
     * @param schemas each tool's parameters schema, or null for any arguments
     * @param at each tool's parameters field, for messages
     */
    static void rules(StringBuilder g, List<String> names, List<JsonNode> schemas, List<String> at) {
        StringBuilder all = new StringBuilder();
        StringBuilder values = new StringBuilder();
        for (int i = 0; i < names.size(); i++) {
            String name = names.get(i);
            if (!WORD.matcher(name).matches()) {
                throw new IllegalArgumentException(at.get(i).replace(".parameters", ".name") + " '" + name
                        + "' cannot be written in qwen3_coder's <function=NAME>");
            }
            g.append("xframe_")
                    .append(i)
                    .append(": ")
                    .append(lit("<function=" + name + ">"))
                    .append(" WS? ");
            if (schemas.get(i) == null) {
                g.append("(xany WS?)* ");
            } else {
                params(g, values, i, schemas.get(i), at.get(i));
            }
            g.append(lit("</function>")).append('\n');
            all.append(i == 0 ? "" : " | ").append("xframe_").append(i);
        }
        g.append(values);
        if (schemas.contains(null)) {
            g.append("xany[lazy]: XANY\nXANY: /\\x3Cparameter=[^ \\t\\r\\n\\x3C\\x3E]+\\x3E")
                    .append(ANY)
                    .append("\\x3C\\x2Fparameter\\x3E/ & ~/")
                    .append(ANY)
                    .append("\\x3C\\x2Ftool_call\\x3E")
                    .append(ANY)
                    .append("/\n");
        }
        g.append("xframe: ").append(all).append('\n');
    }

    /** The parameter sequence of tool {@code i} into {@code frame}, the value rules it uses into {@code values}. */
    private static void params(StringBuilder frame, StringBuilder values, int i, JsonNode schema, String at) {
        JsonNode props = schema.path("properties");
        if (!props.isMissingNode() && !props.isObject()) {
            throw new IllegalArgumentException(at + " /properties must be an object");
        }
        Set<String> required = new HashSet<>();
        for (JsonNode r : schema.path("required")) {
            if (!props.has(r.asText())) {
                throw new IllegalArgumentException(at + " /required: '" + r.asText() + "' is not in properties, "
                        + "so qwen3_coder's parameters cannot carry it");
            }
            required.add(r.asText());
        }
        int j = 0;
        for (Map.Entry<String, JsonNode> e : props.properties()) {
            String key = e.getKey();
            String here = at + " /properties/" + key.replace("~", "~0").replace("/", "~1");
            if (!WORD.matcher(key).matches()) {
                throw new IllegalArgumentException(
                        here + ": the key cannot be written in qwen3_coder's " + "<parameter=KEY>");
            }
            String rule = "xv_" + i + "_" + j++;
            frame.append('(')
                    .append(lit("<parameter=" + key + ">\n"))
                    .append(' ')
                    .append(rule)
                    .append(" WS?)")
                    .append(required.contains(key) ? " " : "? ");
            values.append(value(rule, e.getValue(), schema, here));
        }
    }

    /** Rule {@code rule}: one property's raw value and the closing {@code \n</parameter>}. */
    private static String value(String rule, JsonNode p, JsonNode root, String here) {
        JsonNode type = p.get("type");
        String close = lit("\n</parameter>");
        if (type == null && (p.has("enum") || p.has("const"))) {
            // no type: the parser keeps the raw text unless it is a JSON object or array
            return rule + ": (" + String.join(" | ", options(p, here)) + ") " + close + "\n";
        }
        if (type == null || !type.isTextual()) {
            throw new IllegalArgumentException(here + ": qwen3_coder converts a value by its property's single "
                    + "\"type\"; give one of string, integer, number, boolean, object, array");
        }
        switch (type.textValue()) {
            case "string" -> {
                for (String k : STRING_CONSTRAINTS) {
                    if (p.has(k)) {
                        throw new IllegalArgumentException(here + ": keyword '" + k + "' is not supported for "
                                + "qwen3_coder's raw-text string values");
                    }
                }
                List<String> options = options(p, here);
                if (!options.isEmpty()) {
                    return rule + ": (" + String.join(" | ", options) + ") " + close + "\n";
                }
                String terminal = rule.toUpperCase(java.util.Locale.ROOT);
                return rule + "[lazy]: " + terminal + "\n" + terminal + ": " + FREE_VALUE + "\n";
            }
            case "boolean" -> {
                return rule + ": (\"true\" | \"false\") " + close + "\n";
            }
            default -> {
                if (!JSON_TYPES.contains(type.textValue())) {
                    throw new IllegalArgumentException(here + ": type '" + type.textValue() + "' is not supported "
                            + "for qwen3_coder's values (string, integer, number, boolean, object, array)");
                }
                ObjectNode s = p.deepCopy();
                for (String defs : List.of("$defs", "definitions")) {
                    if (root.has(defs) && !s.has(defs)) {
                        s.set(defs, root.get(defs));
                    }
                }
                return rule + ": %json " + s + " " + close + "\n";
            }
        }
    }

    /** A property's {@code const} and {@code enum} strings as Lark literals. */
    private static List<String> options(JsonNode p, String here) {
        List<String> options = new ArrayList<>();
        if (p.has("const")) {
            options.add(stringOption(p.get("const"), here));
        }
        for (JsonNode o : p.path("enum")) {
            options.add(stringOption(o, here));
        }
        return options;
    }

    private static String stringOption(JsonNode o, String here) {
        if (!o.isTextual()) {
            throw new IllegalArgumentException(here + ": qwen3_coder's raw-text values hold an enum / const only "
                    + "of strings, or give the property a \"type\"");
        }
        String t = o.textValue().strip();
        if (t.startsWith("{") || t.startsWith("[")) {
            throw new IllegalArgumentException(
                    here + ": qwen3_coder may read the value '" + o.textValue() + "' as JSON");
        }
        if (o.textValue().equalsIgnoreCase("null")) {
            throw new IllegalArgumentException(here + ": qwen3_coder reads the value '" + o.textValue() + "' as null");
        }
        return lit(o.textValue());
    }

    private static String lit(String text) {
        return ToolCallGrammar.jsonString(text);
    }
}
