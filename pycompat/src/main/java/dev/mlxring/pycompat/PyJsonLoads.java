package dev.mlxring.pycompat;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A port of CPython 3.11's {@code json} decoder (the C scanner {@code _json.c}, which
 * {@code json.loads} and {@code JSONDecoder.raw_decode} use), so the tool parsers accept exactly
 * what mlx-lm accepts: {@code NaN}, {@code Infinity}, {@code -Infinity}; duplicate keys keep the
 * first key's position and the last value (a Python dict); lone {@code \\uD800} escapes stay lone
 * surrogates; only space, tab, CR and LF are whitespace; {@code strict=False} lets raw control
 * characters into strings. Values: LinkedHashMap, ArrayList, String, Integer / Long / BigInteger,
 * Double, Boolean, null.
 *
 * <p>Known differences: Python raises RecursionError (not a JSONDecodeError) past about 1000
 * levels of nesting; here any depth past {@link #MAX_DEPTH} is a decode error. Error messages
 * follow Python's wording but positions count UTF-16 units, not code points.
 */
public final class PyJsonLoads {
    private PyJsonLoads() {}

    /** The deepest nesting decoded; deeper input is a {@link DecodeError}. */
    public static final int MAX_DEPTH = 2000;

    /** {@code json.JSONDecodeError} (a ValueError). */
    public static final class DecodeError extends IllegalArgumentException {
        private final int pos;

        DecodeError(String msg, int pos) {
            super("JSONDecodeError: " + msg + " (char " + pos + ")");
            this.pos = pos;
        }

        /** The index in the input (UTF-16 units) that Python's error names. */
        public int pos() {
            return pos;
        }
    }

    /** A value and the index just past it ({@code raw_decode}'s pair). */
    public record Decoded(Object value, int end) {}

    /** {@code json.loads(s)} or {@code json.loads(s, strict=False)}. */
    public static Object loads(String s, boolean strict) {
        if (!s.isEmpty() && s.charAt(0) == '\uFEFF') {
            throw new DecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0);
        }
        Scanner sc = new Scanner(s, strict);
        Decoded d = sc.rawDecode(sc.ws(0));
        int end = sc.ws(d.end());
        if (end != s.length()) {
            throw new DecodeError("Extra data", end);
        }
        return d.value();
    }

    /** {@code json.JSONDecoder().raw_decode(s, idx)}: one value starting exactly at idx. */
    public static Decoded rawDecode(String s, int idx) {
        return new Scanner(s, true).rawDecode(idx);
    }

    private static final class Scanner {
        private final String s;
        private final boolean strict;
        private final int len;
        private int depth;

        Scanner(String s, boolean strict) {
            this.s = s;
            this.strict = strict;
            this.len = s.length();
        }

        int ws(int i) {
            while (i < len) {
                char c = s.charAt(i);
                if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                    break;
                }
                i++;
            }
            return i;
        }

        Decoded rawDecode(int idx) {
            return scanOnce(idx);
        }

        private Decoded scanOnce(int idx) {
            if (idx < 0 || idx >= len) {
                throw new DecodeError("Expecting value", idx);
            }
            char c = s.charAt(idx);
            switch (c) {
                case '"':
                    return scanString(idx + 1);
                case '{':
                    return enter(() -> parseObject(idx + 1));
                case '[':
                    return enter(() -> parseArray(idx + 1));
                case 'n':
                    if (s.startsWith("null", idx)) {
                        return new Decoded(null, idx + 4);
                    }
                    break;
                case 't':
                    if (s.startsWith("true", idx)) {
                        return new Decoded(Boolean.TRUE, idx + 4);
                    }
                    break;
                case 'f':
                    if (s.startsWith("false", idx)) {
                        return new Decoded(Boolean.FALSE, idx + 5);
                    }
                    break;
                case 'N':
                    if (s.startsWith("NaN", idx)) {
                        return new Decoded(Double.NaN, idx + 3);
                    }
                    break;
                case 'I':
                    if (s.startsWith("Infinity", idx)) {
                        return new Decoded(Double.POSITIVE_INFINITY, idx + 8);
                    }
                    break;
                case '-':
                    if (s.startsWith("-Infinity", idx)) {
                        return new Decoded(Double.NEGATIVE_INFINITY, idx + 9);
                    }
                    break;
                default:
                    break;
            }
            return matchNumber(idx);
        }

        private Decoded enter(java.util.function.Supplier<Decoded> body) {
            if (++depth > MAX_DEPTH) {
                throw new DecodeError("nesting too deep (Python: RecursionError)", 0);
            }
            try {
                return body.get();
            } finally {
                depth--;
            }
        }

        private static boolean digit(char c) {
            return c >= '0' && c <= '9';
        }

        /** {@code _match_number_unicode}. */
        private Decoded matchNumber(int start) {
            int endIdx = len - 1;
            int idx = start;
            if (s.charAt(idx) == '-') {
                idx++;
                if (idx > endIdx) {
                    throw new DecodeError("Expecting value", start);
                }
            }
            char c = s.charAt(idx);
            if (c >= '1' && c <= '9') {
                idx++;
                while (idx <= endIdx && digit(s.charAt(idx))) {
                    idx++;
                }
            } else if (c == '0') {
                idx++;
            } else {
                throw new DecodeError("Expecting value", start);
            }
            boolean isFloat = false;
            if (idx < endIdx && s.charAt(idx) == '.' && digit(s.charAt(idx + 1))) {
                isFloat = true;
                idx += 2;
                while (idx <= endIdx && digit(s.charAt(idx))) {
                    idx++;
                }
            }
            if (idx < endIdx && (s.charAt(idx) == 'e' || s.charAt(idx) == 'E')) {
                int eStart = idx;
                idx++;
                if (idx < endIdx && (s.charAt(idx) == '-' || s.charAt(idx) == '+')) {
                    idx++;
                }
                while (idx <= endIdx && digit(s.charAt(idx))) {
                    idx++;
                }
                if (digit(s.charAt(idx - 1))) {
                    isFloat = true;
                } else {
                    idx = eStart;
                }
            }
            String num = s.substring(start, idx);
            if (isFloat) {
                return new Decoded(Double.parseDouble(num), idx);
            }
            int digits = num.length() - (num.charAt(0) == '-' ? 1 : 0);
            if (digits > PyNumbers.INT_MAX_STR_DIGITS) {
                // A plain ValueError from int(), not a JSONDecodeError.
                throw new IllegalArgumentException("ValueError: Exceeds the limit (" + PyNumbers.INT_MAX_STR_DIGITS
                        + " digits) for integer string conversion: value has " + digits + " digits");
            }
            return new Decoded(PyNumbers.pyInt(new BigInteger(num)), idx);
        }

        private static int hex(char c) {
            if (c >= '0' && c <= '9') {
                return c - '0';
            }
            if (c >= 'a' && c <= 'f') {
                return c - 'a' + 10;
            }
            if (c >= 'A' && c <= 'F') {
                return c - 'A' + 10;
            }
            return -1;
        }

        /** {@code scanstring_unicode}; {@code end} is just past the opening quote. */
        private Decoded scanString(int end) {
            int begin = end - 1;
            StringBuilder out = null;
            while (true) {
                int next = end;
                char c = 0;
                for (; next < len; next++) {
                    c = s.charAt(next);
                    if (c == '"' || c == '\\') {
                        break;
                    } else if (c <= 0x1f && strict) {
                        throw new DecodeError("Invalid control character at", next);
                    }
                }
                if (!(c == '"' || c == '\\') || next >= len) {
                    throw new DecodeError("Unterminated string starting at", begin);
                }
                if (out == null && c == '"') {
                    return new Decoded(s.substring(end, next), next + 1);
                }
                if (out == null) {
                    out = new StringBuilder();
                }
                out.append(s, end, next);
                next++;
                if (c == '"') {
                    end = next;
                    break;
                }
                if (next == len) {
                    throw new DecodeError("Unterminated string starting at", begin);
                }
                c = s.charAt(next);
                if (c != 'u') {
                    end = next + 1;
                    switch (c) {
                        case '"', '\\', '/' -> {}
                        case 'b' -> c = '\b';
                        case 'f' -> c = '\f';
                        case 'n' -> c = '\n';
                        case 'r' -> c = '\r';
                        case 't' -> c = '\t';
                        default -> throw new DecodeError("Invalid \\escape", end - 2);
                    }
                    out.append(c);
                } else {
                    int cp = 0;
                    next++;
                    end = next + 4;
                    if (end >= len) {
                        throw new DecodeError("Invalid \\uXXXX escape", next - 1);
                    }
                    for (; next < end; next++) {
                        int h = hex(s.charAt(next));
                        if (h < 0) {
                            throw new DecodeError("Invalid \\uXXXX escape", end - 5);
                        }
                        cp = (cp << 4) | h;
                    }
                    if (Character.isHighSurrogate((char) cp)
                            && end + 6 < len
                            && s.charAt(next++) == '\\'
                            && s.charAt(next++) == 'u') {
                        int c2 = 0;
                        end += 6;
                        for (; next < end; next++) {
                            int h = hex(s.charAt(next));
                            if (h < 0) {
                                throw new DecodeError("Invalid \\uXXXX escape", end - 5);
                            }
                            c2 = (c2 << 4) | h;
                        }
                        if (Character.isLowSurrogate((char) c2)) {
                            out.append((char) cp).append((char) c2);
                            continue;
                        }
                        end -= 6;
                    }
                    out.append((char) cp);
                }
            }
            return new Decoded(out.toString(), end);
        }

        /** {@code _parse_object_unicode}; idx is just past the brace. */
        private Decoded parseObject(int idx) {
            Map<String, Object> rval = new LinkedHashMap<>();
            int endIdx = len - 1;
            idx = ws(idx);
            if (idx > endIdx || s.charAt(idx) != '}') {
                while (true) {
                    if (idx > endIdx || s.charAt(idx) != '"') {
                        throw new DecodeError("Expecting property name enclosed in double quotes", idx);
                    }
                    Decoded key = scanString(idx + 1);
                    idx = ws(key.end());
                    if (idx > endIdx || s.charAt(idx) != ':') {
                        throw new DecodeError("Expecting ':' delimiter", idx);
                    }
                    idx = ws(idx + 1);
                    Decoded val = scanOnce(idx);
                    rval.put((String) key.value(), val.value());
                    idx = ws(val.end());
                    if (idx <= endIdx && s.charAt(idx) == '}') {
                        break;
                    }
                    if (idx > endIdx || s.charAt(idx) != ',') {
                        throw new DecodeError("Expecting ',' delimiter", idx);
                    }
                    idx = ws(idx + 1);
                }
            }
            return new Decoded(rval, idx + 1);
        }

        /** {@code _parse_array_unicode}; idx is just past the bracket. */
        private Decoded parseArray(int idx) {
            List<Object> rval = new ArrayList<>();
            int endIdx = len - 1;
            idx = ws(idx);
            if (idx > endIdx || s.charAt(idx) != ']') {
                while (true) {
                    Decoded val = scanOnce(idx);
                    rval.add(val.value());
                    idx = ws(val.end());
                    if (idx <= endIdx && s.charAt(idx) == ']') {
                        break;
                    }
                    if (idx > endIdx || s.charAt(idx) != ',') {
                        throw new DecodeError("Expecting ',' delimiter", idx);
                    }
                    idx = ws(idx + 1);
                }
            }
            return new Decoded(rval, idx + 1);
        }
    }
}
