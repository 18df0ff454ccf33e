package dev.mlxring.prep;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * Python 3 semantics, in plain Java, for what chat templates do to strings and values: the
 * {@code str} methods templates call ({@code strip}, {@code split}, {@code startswith}, ...),
 * {@code str()} / {@code repr()} of template values, and {@code json.dumps}. Used by {@link
 * ChatTemplate}'s Jinjava extensions; everything here is pure and stateless.
 *
 * <p>Strings are Java strings (UTF-16); methods that walk characters walk code points, so a
 * surrogate pair counts as one character as in Python. Whitespace is Python's {@code str.isspace}
 * set, not Java's {@link Character#isWhitespace}.
 */
final class PyStrings {

    private PyStrings() {}

    /** Thrown for what Python raises as ValueError/TypeError inside a str method. */
    static final class PyError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        PyError(String message) {
            super(message);
        }
    }

    // ---------------------------------------------------------------- whitespace / case

    /** Python's {@code str.isspace()} for one code point (bidi WS/B/S or category Zs). */
    static boolean isSpace(int cp) {
        return switch (cp) {
            case '\t', '\n', 0x0b, 0x0c, '\r', 0x1c, 0x1d, 0x1e, 0x1f, ' ', 0x85, 0xa0, 0x1680,
                 0x2028, 0x2029, 0x202f, 0x205f, 0x3000 -> true;
            default -> cp >= 0x2000 && cp <= 0x200a;
        };
    }

    static boolean isCased(int cp) {
        return Character.isUpperCase(cp) || Character.isLowerCase(cp) || Character.isTitleCase(cp);
    }

    static String upper(String s) {
        return s.toUpperCase(java.util.Locale.ROOT);
    }

    static String lower(String s) {
        return s.toLowerCase(java.util.Locale.ROOT);
    }

    /** Full titlecase of one code point (Python uses the full mapping: 'ß' -> 'Ss'). */
    private static String titleCase(int cp) {
        int t = Character.toTitleCase(cp);
        if (t != cp) {
            return Character.toString(t);
        }
        String up = Character.toString(cp).toUpperCase(java.util.Locale.ROOT);
        if (up.codePointCount(0, up.length()) > 1) {
            int first = up.codePointAt(0);
            return Character.toString(first) + up.substring(Character.charCount(first)).toLowerCase(java.util.Locale.ROOT);
        }
        return up;
    }

    /** {@code str.title()}: a cased char after a cased char is lowered, otherwise titlecased. */
    static String title(String s) {
        StringBuilder b = new StringBuilder(s.length());
        boolean prevCased = false;
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            b.append(prevCased ? Character.toString(cp).toLowerCase(java.util.Locale.ROOT) : titleCase(cp));
            prevCased = isCased(cp);
        }
        return b.toString();
    }

    /** {@code str.capitalize()}: first char titlecased (Python 3.8+), the rest lowered. */
    static String capitalize(String s) {
        if (s.isEmpty()) {
            return s;
        }
        int cp = s.codePointAt(0);
        return titleCase(cp) + s.substring(Character.charCount(cp)).toLowerCase(java.util.Locale.ROOT);
    }

    static String swapcase(String s) {
        StringBuilder b = new StringBuilder(s.length());
        s.codePoints().forEach(cp -> {
            String c = Character.toString(cp);
            b.append(Character.isUpperCase(cp) ? c.toLowerCase(java.util.Locale.ROOT)
                    : Character.isLowerCase(cp) ? c.toUpperCase(java.util.Locale.ROOT) : c);
        });
        return b.toString();
    }

    // ---------------------------------------------------------------- strip

    /** {@code str.strip(chars)}; {@code chars == null} strips whitespace. */
    static String strip(String s, String chars) {
        return rstrip(lstrip(s, chars), chars);
    }

    static String lstrip(String s, String chars) {
        int i = 0;
        while (i < s.length()) {
            int cp = s.codePointAt(i);
            if (!stripped(cp, chars)) {
                break;
            }
            i += Character.charCount(cp);
        }
        return s.substring(i);
    }

    static String rstrip(String s, String chars) {
        int end = s.length();
        while (end > 0) {
            int cp = s.codePointBefore(end);
            if (!stripped(cp, chars)) {
                break;
            }
            end -= Character.charCount(cp);
        }
        return s.substring(0, end);
    }

    private static boolean stripped(int cp, String chars) {
        return chars == null ? isSpace(cp) : chars.indexOf(Character.toString(cp)) >= 0;
    }

    // ---------------------------------------------------------------- split

    /** {@code str.split(sep, maxsplit)}: {@code sep == null} splits on whitespace runs. */
    static List<String> split(String s, String sep, int maxsplit) {
        List<String> out = new ArrayList<>();
        if (sep == null) {
            int i = 0;
            int n = s.length();
            while (true) {
                while (i < n && isSpace(s.codePointAt(i))) {
                    i += Character.charCount(s.codePointAt(i));
                }
                if (i >= n) {
                    break;
                }
                if (maxsplit >= 0 && out.size() == maxsplit) {
                    out.add(s.substring(i));
                    break;
                }
                int start = i;
                while (i < n && !isSpace(s.codePointAt(i))) {
                    i += Character.charCount(s.codePointAt(i));
                }
                out.add(s.substring(start, i));
            }
            return out;
        }
        if (sep.isEmpty()) {
            throw new PyError("empty separator");
        }
        int start = 0;
        while (maxsplit < 0 || out.size() < maxsplit) {
            int at = s.indexOf(sep, start);
            if (at < 0) {
                break;
            }
            out.add(s.substring(start, at));
            start = at + sep.length();
        }
        out.add(s.substring(start));
        return out;
    }

    /** {@code str.rsplit(sep, maxsplit)}. */
    static List<String> rsplit(String s, String sep, int maxsplit) {
        if (maxsplit < 0) {
            return split(s, sep, -1);
        }
        List<String> rev = new ArrayList<>();
        if (sep == null) {
            int i = s.length();
            while (true) {
                while (i > 0 && isSpace(s.codePointBefore(i))) {
                    i -= Character.charCount(s.codePointBefore(i));
                }
                if (i <= 0) {
                    break;
                }
                if (rev.size() == maxsplit) {
                    rev.add(s.substring(0, i));
                    break;
                }
                int end = i;
                while (i > 0 && !isSpace(s.codePointBefore(i))) {
                    i -= Character.charCount(s.codePointBefore(i));
                }
                rev.add(s.substring(i, end));
            }
        } else {
            if (sep.isEmpty()) {
                throw new PyError("empty separator");
            }
            int end = s.length();
            while (rev.size() < maxsplit) {
                int at = end - sep.length() < 0 ? -1 : s.lastIndexOf(sep, end - sep.length());
                if (at < 0) {
                    break;
                }
                rev.add(s.substring(at + sep.length(), end));
                end = at;
            }
            rev.add(s.substring(0, end));
        }
        List<String> out = new ArrayList<>(rev.size());
        for (int k = rev.size() - 1; k >= 0; k--) {
            out.add(rev.get(k));
        }
        return out;
    }

    /** {@code str.splitlines(keepends)} with Python's line boundaries. */
    static List<String> splitlines(String s, boolean keepends) {
        List<String> out = new ArrayList<>();
        int start = 0;
        int i = 0;
        while (i < s.length()) {
            char c = s.charAt(i);
            int eol;
            if (c == '\r' && i + 1 < s.length() && s.charAt(i + 1) == '\n') {
                eol = 2;
            } else if (c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || c == 0x1c || c == 0x1d || c == 0x1e
                    || c == 0x85 || c == 0x2028 || c == 0x2029) {
                eol = 1;
            } else {
                i++;
                continue;
            }
            out.add(s.substring(start, keepends ? i + eol : i));
            i += eol;
            start = i;
        }
        if (start < s.length()) {
            out.add(s.substring(start));
        }
        return out;
    }

    // ---------------------------------------------------------------- search / replace

    /** {@code str.replace(old, new, count)}; {@code count < 0} replaces all. */
    static String replace(String s, String old, String rep, int count) {
        if (count < 0) {
            return s.replace(old, rep);
        }
        StringBuilder b = new StringBuilder();
        int start = 0;
        int done = 0;
        if (old.isEmpty()) {
            // Python inserts `rep` before every code point and at the end, up to count times
            int i = 0;
            while (done < count && i <= s.length()) {
                b.append(rep);
                done++;
                if (i == s.length()) {
                    i++;
                    break;
                }
                int cp = s.codePointAt(i);
                b.appendCodePoint(cp);
                i += Character.charCount(cp);
            }
            if (i <= s.length()) {
                b.append(s, i, s.length());
            }
            return b.toString();
        }
        while (done < count) {
            int at = s.indexOf(old, start);
            if (at < 0) {
                break;
            }
            b.append(s, start, at).append(rep);
            start = at + old.length();
            done++;
        }
        return b.append(s.substring(start)).toString();
    }

    /**
     * Python's ADJUST_INDICES for {@code s[start:end]} in code points: {start, end}, where start is
     * not clamped to the length (a start past the end makes every match fail, as in Python).
     */
    private static int[] bounds(String s, Integer start, Integer end) {
        int n = s.codePointCount(0, s.length());
        int a = start == null ? 0 : start < 0 ? Math.max(0, n + start) : start;
        int z = end == null ? n : end < 0 ? Math.max(0, n + end) : Math.min(end, n);
        return new int[] {a, z};
    }

    /** {@code s[a:z]} in code points, for {@code 0 <= a <= z <= len}. */
    private static String cpSubstring(String s, int a, int z) {
        int from = s.offsetByCodePoints(0, a);
        return s.substring(from, s.offsetByCodePoints(from, z - a));
    }

    static boolean startswith(String s, Object prefix, Integer start, Integer end) {
        return tailmatch(s, prefix, start, end, false, "startswith");
    }

    static boolean endswith(String s, Object suffix, Integer start, Integer end) {
        return tailmatch(s, suffix, start, end, true, "endswith");
    }

    private static boolean tailmatch(String s, Object arg, Integer start, Integer end, boolean tail, String method) {
        int[] r = bounds(s, start, end);
        for (String p : prefixes(arg, method)) {
            if (r[1] - r[0] < p.codePointCount(0, p.length())) {
                continue;
            }
            String sub = cpSubstring(s, r[0], r[1]);
            if (tail ? sub.endsWith(p) : sub.startsWith(p)) {
                return true;
            }
        }
        return false;
    }

    private static List<String> prefixes(Object arg, String method) {
        if (arg instanceof String str) {
            return List.of(str);
        }
        if (arg instanceof Collection<?> c) {
            List<String> out = new ArrayList<>();
            for (Object o : c) {
                if (!(o instanceof String str)) {
                    throw new PyError("tuple for " + method + " must only contain str, not " + typeName(o));
                }
                out.add(str);
            }
            return out;
        }
        throw new PyError(method + " first arg must be str or a tuple of str, not " + typeName(arg));
    }

    /** {@code str.find}/{@code rfind} in code points; -1 when absent. */
    static int find(String s, String sub, Integer start, Integer end, boolean reverse) {
        int[] r = bounds(s, start, end);
        if (r[0] > r[1]) {
            return -1;
        }
        String region = cpSubstring(s, r[0], r[1]);
        int at = reverse ? region.lastIndexOf(sub) : region.indexOf(sub);
        return at < 0 ? -1 : r[0] + region.codePointCount(0, at);
    }

    static int count(String s, String sub, Integer start, Integer end) {
        int[] r = bounds(s, start, end);
        if (r[0] > r[1]) {
            return 0;
        }
        String region = cpSubstring(s, r[0], r[1]);
        if (sub.isEmpty()) {
            return region.codePointCount(0, region.length()) + 1;
        }
        int n = 0;
        for (int at = region.indexOf(sub); at >= 0; at = region.indexOf(sub, at + sub.length())) {
            n++;
        }
        return n;
    }

    static boolean allCodePoints(String s, java.util.function.IntPredicate p) {
        return !s.isEmpty() && s.codePoints().allMatch(p);
    }

    /** {@code str.islower()} / {@code isupper()}: at least one cased char, none of the other case. */
    static boolean isLower(String s) {
        return isCase(s, Character::isLowerCase, Character::isUpperCase);
    }

    static boolean isUpper(String s) {
        return isCase(s, Character::isUpperCase, Character::isLowerCase);
    }

    /** At least one code point that is {@code cased}, and none that is {@code other} or titlecase. */
    private static boolean isCase(String s, java.util.function.IntPredicate cased, java.util.function.IntPredicate other) {
        boolean any = false;
        for (int cp : s.codePoints().toArray()) {
            if (other.test(cp) || Character.isTitleCase(cp)) {
                return false;
            }
            any |= cased.test(cp);
        }
        return any;
    }

    /** {@code sep.join(items)}: items must all be strings, as in Python. */
    static String join(String sep, Object items) {
        StringBuilder b = new StringBuilder();
        int i = 0;
        for (Object o : iterable(items)) {
            if (!(o instanceof String str)) {
                throw new PyError("sequence item " + i + ": expected str instance, " + typeName(o) + " found");
            }
            if (i++ > 0) {
                b.append(sep);
            }
            b.append(str);
        }
        return b.toString();
    }

    static Iterable<?> iterable(Object o) {
        if (o instanceof Iterable<?> it) {
            return it;
        }
        if (o instanceof Map<?, ?> m) {
            return m.keySet();
        }
        if (o instanceof String s) {
            return s.codePoints().mapToObj(Character::toString).toList();
        }
        if (o instanceof Object[] a) {
            return List.of(a);
        }
        throw new PyError("'" + typeName(o) + "' object is not iterable");
    }

    // ---------------------------------------------------------------- str() / repr()

    static String typeName(Object o) {
        if (o == null || o == PyNone.INSTANCE) {
            return "NoneType";
        }
        if (o instanceof String || o instanceof Character) {
            return "str";
        }
        if (o instanceof Boolean) {
            return "bool";
        }
        if (o instanceof Integer || o instanceof Long || o instanceof Short || o instanceof Byte || o instanceof BigInteger) {
            return "int";
        }
        if (o instanceof Number) {
            return "float";
        }
        if (o instanceof Map) {
            return "dict";
        }
        if (o instanceof Collection || o instanceof Object[]) {
            return "list";
        }
        return o.getClass().getSimpleName();
    }

    /**
     * Python {@code str(value)} as Jinja2 prints {@code {{ value }}}, except that Java {@code null}
     * (an undefined variable or a missing key) prints as the empty string, like Jinja2's Undefined.
     */
    static String str(Object o) {
        if (o == null) {
            return "";
        }
        if (o instanceof String s) {
            return s;
        }
        if (o instanceof CharSequence cs) {
            return cs.toString();
        }
        return repr(o, false);
    }

    /** Python {@code repr(value)}; {@code null} is {@code None}. */
    static String repr(Object o) {
        return repr(o, true);
    }

    private static String repr(Object o, boolean quoteStrings) {
        if (o == null) {
            return "None";
        }
        if (o instanceof CharSequence cs) {
            return quoteStrings ? reprString(cs.toString()) : cs.toString();
        }
        if (o instanceof Character c) {
            return quoteStrings ? reprString(c.toString()) : c.toString();
        }
        if (o instanceof Boolean b) {
            return b ? "True" : "False";
        }
        if (o instanceof Double || o instanceof Float) {
            return floatRepr(((Number) o).doubleValue());
        }
        if (o instanceof BigDecimal d) {
            return floatRepr(d.doubleValue());
        }
        if (o instanceof Number n) {
            return n.toString();
        }
        if (o instanceof Map<?, ?> m) {
            StringBuilder b = new StringBuilder("{");
            boolean first = true;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                if (!first) {
                    b.append(", ");
                }
                first = false;
                b.append(repr(e.getKey(), true)).append(": ").append(repr(e.getValue(), true));
            }
            return b.append('}').toString();
        }
        if (o instanceof Iterable<?> || o instanceof Object[]) {
            StringBuilder b = new StringBuilder("[");
            boolean first = true;
            for (Object x : iterable(o)) {
                if (!first) {
                    b.append(", ");
                }
                first = false;
                b.append(repr(x, true));
            }
            return b.append(']').toString();
        }
        return o.toString();
    }

    /** Python's {@code repr(str)}: single quotes unless the text has ' and no ". */
    static String reprString(String s) {
        char q = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
        StringBuilder b = new StringBuilder(s.length() + 2).append(q);
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            if (cp == q || cp == '\\') {
                b.append('\\').appendCodePoint(cp);
            } else if (cp == '\n') {
                b.append("\\n");
            } else if (cp == '\r') {
                b.append("\\r");
            } else if (cp == '\t') {
                b.append("\\t");
            } else if (cp < 0x20 || cp == 0x7f) {
                b.append(String.format("\\x%02x", cp));
            } else if (cp < 0x7f) {
                b.append((char) cp);
            } else if (!isPrintable(cp)) {
                b.append(cp <= 0xff ? String.format("\\x%02x", cp)
                        : cp <= 0xffff ? String.format("\\u%04x", cp) : String.format("\\U%08x", cp));
            } else {
                b.appendCodePoint(cp);
            }
        }
        return b.append(q).toString();
    }

    /** Python's {@code str.isprintable()} for one code point (approximated with Java's Unicode data). */
    private static boolean isPrintable(int cp) {
        if (cp == ' ') {
            return true;
        }
        return switch (Character.getType(cp)) {
            case Character.CONTROL, Character.FORMAT, Character.SURROGATE, Character.PRIVATE_USE,
                 Character.UNASSIGNED, Character.LINE_SEPARATOR, Character.PARAGRAPH_SEPARATOR,
                 Character.SPACE_SEPARATOR -> false;
            default -> true;
        };
    }

    /** Python's {@code repr(float)}: shortest round-trip digits, fixed for 1e-4 <= |x| < 1e16. */
    static String floatRepr(double d) {
        if (Double.isNaN(d)) {
            return "nan";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "inf" : "-inf";
        }
        if (d == 0) {
            return (1 / d < 0) ? "-0.0" : "0.0";
        }
        // Double.toString gives the shortest digits that round-trip (JDK 19+), like Python's repr
        BigDecimal bd = new BigDecimal(Double.toString(Math.abs(d))).stripTrailingZeros();
        String digits = bd.unscaledValue().toString();
        int exp = digits.length() - 1 - bd.scale(); // decimal exponent of the first digit
        StringBuilder b = new StringBuilder(d < 0 ? "-" : "");
        if (exp >= -4 && exp < 16) {
            if (exp < 0) {
                b.append("0.").append("0".repeat(-exp - 1)).append(digits);
            } else if (digits.length() <= exp + 1) {
                b.append(digits).append("0".repeat(exp + 1 - digits.length())).append(".0");
            } else {
                b.append(digits, 0, exp + 1).append('.').append(digits, exp + 1, digits.length());
            }
        } else {
            b.append(digits.charAt(0));
            if (digits.length() > 1) {
                b.append('.').append(digits, 1, digits.length());
            }
            b.append('e').append(exp < 0 ? '-' : '+');
            String e = Integer.toString(Math.abs(exp));
            b.append(e.length() < 2 ? "0" + e : e);
        }
        return b.toString();
    }

    // ---------------------------------------------------------------- json.dumps

    /**
     * Python {@code json.dumps(value, ensure_ascii=False, indent=indent, separators=separators,
     * sort_keys=sortKeys)}, as transformers' {@code tojson} filter calls it.
     *
     * @param indent {@code null} for one line, an Integer (spaces) or a String (the indent unit)
     * @param separators {@code null} for Python's defaults, else {item, key} separators
     */
    static String jsonDumps(Object value, Object indent, String[] separators, boolean sortKeys) {
        String unit = null;
        if (indent instanceof Number n) {
            unit = " ".repeat(Math.max(0, n.intValue()));
        } else if (indent instanceof String s) {
            unit = s;
        } else if (indent != null) {
            throw new PyError("indent must be an int or a str, not " + typeName(indent));
        }
        String itemSep = separators != null ? separators[0] : unit != null ? "," : ", ";
        String keySep = separators != null ? separators[1] : ": ";
        StringBuilder b = new StringBuilder();
        writeJson(b, value, unit, itemSep, keySep, sortKeys, 0);
        return b.toString();
    }

    private static void writeJson(StringBuilder b, Object v, String unit, String itemSep, String keySep,
                                  boolean sortKeys, int level) {
        if (v == null || v == PyNone.INSTANCE) {
            b.append("null");
        } else if (v instanceof Boolean bool) {
            b.append(bool ? "true" : "false");
        } else if (v instanceof CharSequence || v instanceof Character) {
            jsonString(b, v.toString());
        } else if (v instanceof Double || v instanceof Float || v instanceof BigDecimal) {
            double d = ((Number) v).doubleValue();
            b.append(Double.isNaN(d) ? "NaN" : Double.isInfinite(d) ? (d > 0 ? "Infinity" : "-Infinity") : floatRepr(d));
        } else if (v instanceof Number n) {
            b.append(n.toString());
        } else if (v instanceof Map<?, ?> m) {
            if (m.isEmpty()) {
                b.append("{}");
                return;
            }
            List<Map.Entry<?, ?>> entries = new ArrayList<>(m.entrySet());
            if (sortKeys) {
                entries.sort((x, y) -> jsonKey(x.getKey()).compareTo(jsonKey(y.getKey())));
            }
            b.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : entries) {
                if (!first) {
                    b.append(itemSep);
                }
                first = false;
                newline(b, unit, level + 1);
                jsonString(b, jsonKey(e.getKey()));
                b.append(keySep);
                writeJson(b, e.getValue(), unit, itemSep, keySep, sortKeys, level + 1);
            }
            newline(b, unit, level);
            b.append('}');
        } else if (v instanceof Iterable<?> || v instanceof Object[]) {
            List<Object> items = new ArrayList<>();
            iterable(v).forEach(items::add);
            if (items.isEmpty()) {
                b.append("[]");
                return;
            }
            b.append('[');
            boolean first = true;
            for (Object x : items) {
                if (!first) {
                    b.append(itemSep);
                }
                first = false;
                newline(b, unit, level + 1);
                writeJson(b, x, unit, itemSep, keySep, sortKeys, level + 1);
            }
            newline(b, unit, level);
            b.append(']');
        } else {
            throw new PyError("Object of type " + typeName(v) + " is not JSON serializable");
        }
    }

    private static void newline(StringBuilder b, String unit, int level) {
        if (unit != null) {
            b.append('\n').append(unit.repeat(level));
        }
    }

    private static String jsonKey(Object k) {
        if (k instanceof String s) {
            return s;
        }
        if (k == null || k == PyNone.INSTANCE) {
            return "null";
        }
        if (k instanceof Boolean bool) {
            return bool ? "true" : "false";
        }
        if (k instanceof Double || k instanceof Float) {
            return floatRepr(((Number) k).doubleValue());
        }
        if (k instanceof Number n) {
            return n.toString();
        }
        throw new PyError("keys must be str, int, float, bool or None, not " + typeName(k));
    }

    /** A JSON string literal as json.dumps(ensure_ascii=False) writes it. */
    private static void jsonString(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                case '\b' -> b.append("\\b");
                case '\f' -> b.append("\\f");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        b.append('"');
    }
}
