package dev.mlxring.pycompat;

import java.math.BigInteger;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Python's {@code json.dumps(value, ensure_ascii=False, indent=..., separators=..., sort_keys=...)},
 * character for character: what mlx_lm.server puts in a tool call's {@code arguments} and what
 * transformers' {@code tojson} filter writes. Values are plain JSON data as a parser holds them:
 * {@link Map} (insertion order), {@link Iterable} and arrays (lists), {@link CharSequence} and
 * {@link Character}, {@link Boolean}, None ({@code null} or a {@link NoneValue}), integers
 * ({@link Integer}, {@link Long}, {@link Short}, {@link Byte}, {@link BigInteger}: Python ints)
 * and other {@link Number}s (Python floats, written as {@link PyNumbers#floatRepr}, {@code NaN} /
 * {@code Infinity} / {@code -Infinity} as Python writes them).
 */
public final class PyJsonDumps {
    private PyJsonDumps() {}

    /**
     * {@code json.dumps(value, ensure_ascii=False)}: one line, separators {@code ", "} and {@code ": "}.
     *
     * @throws PyError for a value Python's encoder rejects (TypeError): anything that is not JSON
     *     data, or a map key that is not a string, number, boolean or None
     */
    public static String dumps(Object value) {
        return dumps(value, null, null, false);
    }

    /**
     * {@code json.dumps(value, ensure_ascii=False, indent=indent, separators=separators,
     * sort_keys=sortKeys)}.
     *
     * @param indent {@code null} for one line, a {@link Number} (that many spaces) or a String (the
     *     indent unit)
     * @param separators {@code null} for Python's defaults ({@code ", "} and {@code ": "}, or
     *     {@code ","} and {@code ": "} with an indent), else {item, key} separators
     * @param sortKeys order each map's entries by their JSON key text
     * @throws PyError for a value Python's encoder rejects, or an indent of another type
     */
    public static String dumps(Object value, Object indent, String[] separators, boolean sortKeys) {
        String unit = null;
        if (indent instanceof Number n) {
            unit = " ".repeat(Math.max(0, n.intValue()));
        } else if (indent instanceof String s) {
            unit = s;
        } else if (indent != null) {
            throw new PyError("indent must be an int or a str, not " + PyValues.typeName(indent));
        }
        String itemSep = separators != null ? separators[0] : unit != null ? "," : ", ";
        String keySep = separators != null ? separators[1] : ": ";
        StringBuilder out = new StringBuilder();
        new Writer(out, unit, itemSep, keySep, sortKeys).write(value, 0);
        return out.toString();
    }

    private record Writer(StringBuilder out, String unit, String itemSep, String keySep, boolean sortKeys) {

        void write(Object v, int level) {
            if (PyValues.isNone(v)) {
                out.append("null");
            } else if (v instanceof CharSequence || v instanceof Character) {
                string(v.toString(), out);
            } else if (v instanceof Boolean b) {
                out.append(b ? "true" : "false");
            } else if (v instanceof Number n) {
                number(n, out);
            } else if (v instanceof Map<?, ?> m) {
                if (m.isEmpty()) {
                    out.append("{}");
                    return;
                }
                List<Map.Entry<CharSequence, Object>> entries = new ArrayList<>(m.size());
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    entries.add(new AbstractMap.SimpleImmutableEntry<>(key(e.getKey()), e.getValue()));
                }
                if (sortKeys) {
                    entries.sort(
                            (x, y) -> x.getKey().toString().compareTo(y.getKey().toString()));
                }
                out.append('{');
                boolean first = true;
                for (Map.Entry<CharSequence, Object> e : entries) {
                    if (!first) {
                        out.append(itemSep);
                    }
                    first = false;
                    newline(level + 1);
                    string(e.getKey(), out);
                    out.append(keySep);
                    write(e.getValue(), level + 1);
                }
                newline(level);
                out.append('}');
            } else if (v instanceof Iterable<?> || v instanceof Object[]) {
                List<Object> items = new ArrayList<>();
                PyValues.iterable(v).forEach(items::add);
                if (items.isEmpty()) {
                    out.append("[]");
                    return;
                }
                out.append('[');
                boolean first = true;
                for (Object x : items) {
                    if (!first) {
                        out.append(itemSep);
                    }
                    first = false;
                    newline(level + 1);
                    write(x, level + 1);
                }
                newline(level);
                out.append(']');
            } else {
                throw new PyError("Object of type " + PyValues.typeName(v) + " is not JSON serializable");
            }
        }

        private void newline(int level) {
            if (unit != null) {
                out.append('\n').append(unit.repeat(level));
            }
        }
    }

    /** Python's key coercion: str as is; float, int, bool and None as their JSON text. */
    private static CharSequence key(Object k) {
        if (k instanceof CharSequence || k instanceof Character) {
            return k.toString();
        }
        if (PyValues.isNone(k)) {
            return "null";
        }
        if (k instanceof Boolean b) {
            return b ? "true" : "false";
        }
        if (k instanceof Number n) {
            StringBuilder b = new StringBuilder();
            number(n, b);
            return b;
        }
        throw new PyError("keys must be str, int, float, bool or None, not " + PyValues.typeName(k));
    }

    private static void number(Number n, StringBuilder out) {
        if (n instanceof Integer
                || n instanceof Long
                || n instanceof Short
                || n instanceof Byte
                || n instanceof BigInteger) {
            out.append(n);
            return;
        }
        // Double, Float, BigDecimal: what json.loads makes a float
        double d = n.doubleValue();
        if (Double.isNaN(d)) {
            out.append("NaN");
        } else if (Double.isInfinite(d)) {
            out.append(d > 0 ? "Infinity" : "-Infinity");
        } else {
            PyNumbers.appendFiniteRepr(d, out);
        }
    }

    /** {@code encode_basestring}: escapes {@code "}, {@code \} and C0 controls; everything else raw. */
    private static void string(CharSequence s, StringBuilder out) {
        out.append('"');
        for (int i = 0, len = s.length(); i < len; i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20) {
                        out.append("\\u00")
                                .append(Character.forDigit(c >> 4, 16))
                                .append(Character.forDigit(c & 15, 16));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
