package dev.mlxring.pycompat;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * Python 3's {@code str} in plain Java: the {@code str} methods ({@code strip}, {@code split},
 * {@code startswith}, ...) and {@code str()} / {@code repr()} of plain values (types as {@link
 * PyValues} reads them). Everything here is pure and stateless; what Python raises is a {@link
 * PyError}.
 *
 * <p>Strings are Java strings (UTF-16); methods that walk characters walk code points, so a
 * surrogate pair counts as one character as in Python. Whitespace is Python's {@code str.isspace}
 * set, not Java's {@link Character#isWhitespace}.
 */
public final class PyStrings {

    private PyStrings() {}

    // ---------------------------------------------------------------- whitespace / case

    public static boolean isCased(int cp) {
        return Character.isUpperCase(cp) || Character.isLowerCase(cp) || Character.isTitleCase(cp);
    }

    public static String upper(String s) {
        return s.toUpperCase(java.util.Locale.ROOT);
    }

    public static String lower(String s) {
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
            return Character.toString(first)
                    + up.substring(Character.charCount(first)).toLowerCase(java.util.Locale.ROOT);
        }
        return up;
    }

    /** {@code str.title()}: a cased char after a cased char is lowered, otherwise titlecased. */
    public static String title(String s) {
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
    public static String capitalize(String s) {
        if (s.isEmpty()) {
            return s;
        }
        int cp = s.codePointAt(0);
        return titleCase(cp) + s.substring(Character.charCount(cp)).toLowerCase(java.util.Locale.ROOT);
    }

    public static String swapcase(String s) {
        StringBuilder b = new StringBuilder(s.length());
        s.codePoints().forEach(cp -> {
            String c = Character.toString(cp);
            b.append(
                    Character.isUpperCase(cp)
                            ? c.toLowerCase(java.util.Locale.ROOT)
                            : Character.isLowerCase(cp) ? c.toUpperCase(java.util.Locale.ROOT) : c);
        });
        return b.toString();
    }

    // ---------------------------------------------------------------- strip

    /** {@code str.strip(chars)}; {@code chars == null} strips whitespace. */
    public static String strip(String s, String chars) {
        return rstrip(lstrip(s, chars), chars);
    }

    public static String lstrip(String s, String chars) {
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

    public static String rstrip(String s, String chars) {
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
        return chars == null ? PyUnicode.isSpace(cp) : chars.indexOf(Character.toString(cp)) >= 0;
    }

    // ---------------------------------------------------------------- split

    /** {@code str.split(sep, maxsplit)}: {@code sep == null} splits on whitespace runs. */
    public static List<String> split(String s, String sep, int maxsplit) {
        List<String> out = new ArrayList<>();
        if (sep == null) {
            int i = 0;
            int n = s.length();
            while (true) {
                while (i < n && PyUnicode.isSpace(s.codePointAt(i))) {
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
                while (i < n && !PyUnicode.isSpace(s.codePointAt(i))) {
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
    public static List<String> rsplit(String s, String sep, int maxsplit) {
        if (maxsplit < 0) {
            return split(s, sep, -1);
        }
        List<String> rev = new ArrayList<>();
        if (sep == null) {
            int i = s.length();
            while (true) {
                while (i > 0 && PyUnicode.isSpace(s.codePointBefore(i))) {
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
                while (i > 0 && !PyUnicode.isSpace(s.codePointBefore(i))) {
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
    public static List<String> splitlines(String s, boolean keepends) {
        List<String> out = new ArrayList<>();
        int start = 0;
        int i = 0;
        while (i < s.length()) {
            char c = s.charAt(i);
            int eol;
            if (c == '\r' && i + 1 < s.length() && s.charAt(i + 1) == '\n') {
                eol = 2;
            } else if (c == '\n'
                    || c == '\r'
                    || c == 0x0b
                    || c == 0x0c
                    || c == 0x1c
                    || c == 0x1d
                    || c == 0x1e
                    || c == 0x85
                    || c == 0x2028
                    || c == 0x2029) {
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
    public static String replace(String s, String old, String rep, int count) {
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

    public static boolean startswith(String s, Object prefix, Integer start, Integer end) {
        return tailmatch(s, prefix, start, end, false, "startswith");
    }

    public static boolean endswith(String s, Object suffix, Integer start, Integer end) {
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
                    throw new PyError("tuple for " + method + " must only contain str, not " + PyValues.typeName(o));
                }
                out.add(str);
            }
            return out;
        }
        throw new PyError(method + " first arg must be str or a tuple of str, not " + PyValues.typeName(arg));
    }

    /** {@code str.find}/{@code rfind} in code points; -1 when absent. */
    public static int find(String s, String sub, Integer start, Integer end, boolean reverse) {
        int[] r = bounds(s, start, end);
        if (r[0] > r[1]) {
            return -1;
        }
        String region = cpSubstring(s, r[0], r[1]);
        int at = reverse ? region.lastIndexOf(sub) : region.indexOf(sub);
        return at < 0 ? -1 : r[0] + region.codePointCount(0, at);
    }

    public static int count(String s, String sub, Integer start, Integer end) {
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

    public static boolean allCodePoints(String s, java.util.function.IntPredicate p) {
        return !s.isEmpty() && s.codePoints().allMatch(p);
    }

    /** {@code str.islower()} / {@code isupper()}: at least one cased char, none of the other case. */
    public static boolean isLower(String s) {
        return isCase(s, Character::isLowerCase, Character::isUpperCase);
    }

    public static boolean isUpper(String s) {
        return isCase(s, Character::isUpperCase, Character::isLowerCase);
    }

    /** At least one code point that is {@code cased}, and none that is {@code other} or titlecase. */
    private static boolean isCase(
            String s, java.util.function.IntPredicate cased, java.util.function.IntPredicate other) {
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
    public static String join(String sep, Object items) {
        StringBuilder b = new StringBuilder();
        int i = 0;
        for (Object o : PyValues.iterable(items)) {
            if (!(o instanceof String str)) {
                throw new PyError("sequence item " + i + ": expected str instance, " + PyValues.typeName(o) + " found");
            }
            if (i++ > 0) {
                b.append(sep);
            }
            b.append(str);
        }
        return b.toString();
    }

    // ---------------------------------------------------------------- str() / repr()

    /** Python {@code str(value)}: a string as it is, anything else as {@link #repr(Object)}. */
    public static String str(Object o) {
        if (o instanceof String s) {
            return s;
        }
        if (o instanceof CharSequence cs) {
            return cs.toString();
        }
        return repr(o, false);
    }

    /** Python {@code repr(value)}; {@code null} and {@link NoneValue}s are {@code None}. */
    public static String repr(Object o) {
        return repr(o, true);
    }

    private static String repr(Object o, boolean quoteStrings) {
        if (PyValues.isNone(o)) {
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
        if (o instanceof Double || o instanceof Float || o instanceof BigDecimal) {
            return PyNumbers.floatRepr(((Number) o).doubleValue());
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
            for (Object x : PyValues.iterable(o)) {
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
    public static String reprString(String s) {
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
                b.append(
                        cp <= 0xff
                                ? String.format("\\x%02x", cp)
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
            case Character.CONTROL,
                    Character.FORMAT,
                    Character.SURROGATE,
                    Character.PRIVATE_USE,
                    Character.UNASSIGNED,
                    Character.LINE_SEPARATOR,
                    Character.PARAGRAPH_SEPARATOR,
                    Character.SPACE_SEPARATOR -> false;
            default -> true;
        };
    }
}
