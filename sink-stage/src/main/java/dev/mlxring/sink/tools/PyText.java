package dev.mlxring.sink.tools;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * CPython 3.11 string and number semantics the tool parsers rely on: {@code str.isspace} /
 * {@code str.strip}, {@code float(str)}, {@code int(float)}, the Python int held as the smallest
 * of Integer / Long / BigInteger (as Jackson gives it), {@code str()} of a JSON value, and the
 * {@code regex} module's {@code \s} and {@code \w} as Java regex fragments.
 */
final class PyText {
    private PyText() {}

    /** The {@code regex} module's {@code \s} for str patterns: the Unicode White_Space property. */
    static final String RX_SPACE_CHARS = "\\t\\n\\x0B\\f\\r\\x20\\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000";

    /** {@code regex}'s {@code \s}. */
    static final String RX_S = "[" + RX_SPACE_CHARS + "]";

    /**
     * Flags for a port of a {@code regex}-module pattern: Unicode {@code \w} (Java's
     * UNICODE_CHARACTER_CLASS is the same Unicode TR18 definition; the tables are Java's Unicode
     * 16, the module's newer) and {@code $} before a final {@code \n} only.
     */
    static final int RX_FLAGS = Pattern.UNICODE_CHARACTER_CLASS | Pattern.UNIX_LINES;

    /** {@code str.isspace()} for one character (CPython 3.11's {@code _PyUnicode_IsWhitespace}). */
    static boolean isSpace(int c) {
        return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680
                || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F
                || c == 0x3000;
    }

    /** {@code str.strip()} with no argument. */
    static String strip(String s) {
        int a = 0;
        int b = s.length();
        while (a < b && isSpace(s.charAt(a))) {
            a++;
        }
        while (b > a && isSpace(s.charAt(b - 1))) {
            b--;
        }
        return s.substring(a, b);
    }

    /** A Python int as Jackson would hold it: Integer, else Long, else BigInteger. */
    static Number pyInt(BigInteger v) {
        if (v.bitLength() < 32) {
            return v.intValue();
        }
        if (v.bitLength() < 64) {
            return v.longValue();
        }
        return v;
    }

    static BigInteger toBig(Number n) {
        if (n instanceof BigInteger b) {
            return b;
        }
        return BigInteger.valueOf(n.longValue());
    }

    /** {@code int(f)} for a float: truncation; ValueError for NaN, OverflowError for infinities. */
    static Number intOfFloat(double f) {
        if (Double.isNaN(f)) {
            throw new IllegalArgumentException("ValueError: cannot convert float NaN to integer");
        }
        if (Double.isInfinite(f)) {
            // OverflowError in Python (not a ValueError: mlx_lm.server does not catch it).
            throw new IllegalArgumentException("OverflowError: cannot convert float infinity to integer");
        }
        return pyInt(new BigDecimal(f).toBigInteger());
    }

    private static final Pattern FLOAT_DEC =
            Pattern.compile("[+-]?(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)(?:[eE][+-]?[0-9]+)?");
    private static final Pattern FLOAT_SPECIAL =
            Pattern.compile("([+-]?)(?:(inf|infinity)|(nan))", Pattern.CASE_INSENSITIVE);

    /**
     * {@code float(s)} for a str (CPython 3.11 {@code PyFloat_FromString}): Unicode decimal digits
     * become ASCII and Unicode whitespace a space, surrounding whitespace is stripped, underscores
     * are allowed between digits only, then decimal / inf / infinity / nan with an optional sign.
     *
     * @throws IllegalArgumentException (ValueError: could not convert string to float)
     */
    static double parseFloat(String s) {
        StringBuilder ascii = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            if (cp < 127) {
                ascii.append((char) cp);
            } else if (isSpace(cp)) {
                ascii.append(' ');
            } else if (Character.getType(cp) == Character.DECIMAL_DIGIT_NUMBER) {
                ascii.append((char) ('0' + Character.digit(cp, 10)));
            } else {
                throw notFloat(s);
            }
        }
        int a = 0;
        int b = ascii.length();
        while (a < b && isAsciiSpace(ascii.charAt(a))) {
            a++;
        }
        while (b > a && isAsciiSpace(ascii.charAt(b - 1))) {
            b--;
        }
        String t = ascii.substring(a, b);
        if (t.indexOf('_') >= 0) {
            t = dropUnderscores(t, s);
        }
        if (FLOAT_DEC.matcher(t).matches()) {
            return Double.parseDouble(t);
        }
        var m = FLOAT_SPECIAL.matcher(t);
        if (m.matches()) {
            double v = m.group(3) != null ? Double.NaN : Double.POSITIVE_INFINITY;
            return m.group(1).equals("-") ? -v : v;
        }
        throw notFloat(s);
    }

    private static boolean isAsciiSpace(char c) {
        return c == ' ' || (c >= '\t' && c <= '\r');
    }

    /** CPython's {@code _Py_string_to_number_with_underscores}. */
    private static String dropUnderscores(String t, String original) {
        if (t.isEmpty() || t.charAt(0) == '_') {
            throw notFloat(original);
        }
        StringBuilder out = new StringBuilder(t.length());
        char prev = t.charAt(0);
        out.append(prev);
        for (int i = 1; i < t.length(); i++) {
            char c = t.charAt(i);
            if (c == '_') {
                if (!(prev >= '0' && prev <= '9')) {
                    throw notFloat(original);
                }
            } else {
                out.append(c);
                if (prev == '_' && !(c >= '0' && c <= '9')) {
                    throw notFloat(original);
                }
            }
            prev = c;
        }
        if (prev == '_') {
            throw notFloat(original);
        }
        return out.toString();
    }

    private static IllegalArgumentException notFloat(String s) {
        return new IllegalArgumentException("ValueError: could not convert string to float: '" + s + "'");
    }

    /** {@code str(v)} of a JSON value (exact for strings, ints, bools and None; close for the rest). */
    static String str(Object v) {
        return v instanceof String s ? s : repr(v);
    }

    static String repr(Object v) {
        if (v == null) {
            return "None";
        }
        if (v instanceof Boolean b) {
            return b ? "True" : "False";
        }
        if (v instanceof String s) {
            return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'";
        }
        if (v instanceof Double d) {
            if (d.isNaN()) {
                return "nan";
            }
            if (d.isInfinite()) {
                return d > 0 ? "inf" : "-inf";
            }
            return d.toString();
        }
        if (v instanceof List<?> l) {
            StringBuilder sb = new StringBuilder("[");
            for (int i = 0; i < l.size(); i++) {
                sb.append(i == 0 ? "" : ", ").append(repr(l.get(i)));
            }
            return sb.append(']').toString();
        }
        if (v instanceof Map<?, ?> m) {
            StringBuilder sb = new StringBuilder("{");
            boolean first = true;
            for (var e : m.entrySet()) {
                sb.append(first ? "" : ", ").append(repr(e.getKey())).append(": ").append(repr(e.getValue()));
                first = false;
            }
            return sb.append('}').toString();
        }
        return String.valueOf(v);
    }

    /** Python truthiness of a JSON value. */
    static boolean truthy(Object v) {
        if (v == null) {
            return false;
        }
        if (v instanceof Boolean b) {
            return b;
        }
        if (v instanceof String s) {
            return !s.isEmpty();
        }
        if (v instanceof Map<?, ?> m) {
            return !m.isEmpty();
        }
        if (v instanceof List<?> l) {
            return !l.isEmpty();
        }
        if (v instanceof Double d) {
            return d != 0.0;
        }
        if (v instanceof BigInteger b) {
            return b.signum() != 0;
        }
        if (v instanceof Number n) {
            return n.longValue() != 0;
        }
        return true;
    }
}
