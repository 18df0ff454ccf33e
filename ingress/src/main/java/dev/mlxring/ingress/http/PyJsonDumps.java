package dev.mlxring.ingress.http;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;

/**
 * Python's {@code json.dumps(value, ensure_ascii=False)} with the default separators ({@code ", "}
 * and {@code ": "}), character for character: what mlx_lm.server puts in a tool call's {@code
 * arguments}. Values are plain JSON data as a parser holds them: {@link Map} (insertion order),
 * {@link List}, {@link CharSequence}, {@link Boolean}, null, integers ({@link Integer}, {@link
 * Long}, {@link Short}, {@link Byte}, {@link BigInteger}: Python ints) and other {@link Number}s
 * (Python floats, written as {@code float.__repr__}: shortest round-trip digits, exponent form
 * below 1e-4 and from 1e16, {@code NaN} / {@code Infinity} as Python writes them).
 */
public final class PyJsonDumps {
    private PyJsonDumps() {}

    /**
     * @throws IllegalArgumentException for a value Python's encoder rejects (TypeError): anything
     *     that is not JSON data, or a map key that is not a string, number, boolean or null
     */
    public static String dumps(Object value) {
        StringBuilder out = new StringBuilder();
        write(value, out);
        return out.toString();
    }

    private static void write(Object v, StringBuilder out) {
        if (v == null) {
            out.append("null");
        } else if (v instanceof CharSequence s) {
            string(s, out);
        } else if (v instanceof Boolean b) {
            out.append(b ? "true" : "false");
        } else if (v instanceof Number n) {
            number(n, out);
        } else if (v instanceof Map<?, ?> m) {
            if (m.isEmpty()) {
                out.append("{}");
                return;
            }
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                if (!first) {
                    out.append(", ");
                }
                first = false;
                string(key(e.getKey()), out);
                out.append(": ");
                write(e.getValue(), out);
            }
            out.append('}');
        } else if (v instanceof List<?> l) {
            if (l.isEmpty()) {
                out.append("[]");
                return;
            }
            out.append('[');
            for (int i = 0; i < l.size(); i++) {
                if (i > 0) {
                    out.append(", ");
                }
                write(l.get(i), out);
            }
            out.append(']');
        } else {
            throw new IllegalArgumentException("Object of type " + v.getClass().getSimpleName()
                    + " is not JSON serializable");
        }
    }

    /** Python's key coercion: str as is; float, int, bool and None as their JSON text. */
    private static CharSequence key(Object k) {
        if (k instanceof CharSequence s) {
            return s;
        }
        if (k == null || k instanceof Boolean || k instanceof Number) {
            StringBuilder b = new StringBuilder();
            write(k, b);
            return b;
        }
        throw new IllegalArgumentException("keys must be str, int, float, bool or None, not "
                + k.getClass().getSimpleName());
    }

    private static void number(Number n, StringBuilder out) {
        if (n instanceof Integer || n instanceof Long || n instanceof Short || n instanceof Byte
                || n instanceof BigInteger) {
            out.append(n);
        } else { // Double, Float, BigDecimal: what json.loads makes a float
            floatRepr(n.doubleValue(), out);
        }
    }

    /** {@code float.__repr__} as json writes it ({@code NaN}, {@code Infinity}, {@code -Infinity}). */
    static void floatRepr(double d, StringBuilder out) {
        if (Double.isNaN(d)) {
            out.append("NaN");
            return;
        }
        if (Double.isInfinite(d)) {
            out.append(d > 0 ? "Infinity" : "-Infinity");
            return;
        }
        if (d == 0) {
            out.append(1 / d < 0 ? "-0.0" : "0.0");
            return;
        }
        if (d < 0) {
            out.append('-');
            d = -d;
        }
        // Double.toString gives the shortest decimal that rounds to d (JDK 19+), as Python's repr,
        // except that where one digit would do it may pick a closer two-digit one (4.9E-324).
        BigDecimal b = new BigDecimal(Double.toString(d)).stripTrailingZeros();
        if (b.precision() == 2) {
            b = oneDigit(d, b);
        }
        String digits = b.unscaledValue().toString();
        int n = digits.length();
        int decpt = n - b.scale(); // d = 0.DIGITS * 10^decpt
        if (decpt <= -4 || decpt > 16) {
            out.append(digits.charAt(0));
            if (n > 1) {
                out.append('.').append(digits, 1, n);
            }
            int exp = decpt - 1;
            out.append('e').append(exp < 0 ? '-' : '+');
            int a = Math.abs(exp);
            if (a < 10) {
                out.append('0');
            }
            out.append(a);
        } else if (decpt <= 0) {
            out.append("0.");
            for (int i = decpt; i < 0; i++) {
                out.append('0');
            }
            out.append(digits);
        } else if (decpt < n) {
            out.append(digits, 0, decpt).append('.').append(digits, decpt, n);
        } else {
            out.append(digits);
            for (int i = n; i < decpt; i++) {
                out.append('0');
            }
            out.append(".0");
        }
    }

    /** The closest one-digit decimal that rounds to {@code d}, if any; else {@code twoDigits}. */
    private static BigDecimal oneDigit(double d, BigDecimal twoDigits) {
        BigDecimal down = twoDigits.setScale(twoDigits.scale() - 1, java.math.RoundingMode.FLOOR);
        BigDecimal up = twoDigits.setScale(twoDigits.scale() - 1, java.math.RoundingMode.CEILING);
        boolean downOk = down.signum() != 0 && down.doubleValue() == d;
        boolean upOk = up.doubleValue() == d;
        if (downOk && upOk) {
            BigDecimal exact = new BigDecimal(d);
            return exact.subtract(down).compareTo(up.subtract(exact)) <= 0 ? down : up;
        }
        return (downOk ? down : upOk ? up : twoDigits).stripTrailingZeros();
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
                        out.append("\\u00").append(Character.forDigit(c >> 4, 16)).append(Character.forDigit(c & 15, 16));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
