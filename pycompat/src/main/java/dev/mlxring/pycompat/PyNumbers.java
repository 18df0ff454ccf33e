package dev.mlxring.pycompat;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.regex.Pattern;

/**
 * CPython 3.11's numbers: {@code float.__repr__} (which {@code str()}, {@code repr()} and {@code
 * json.dumps} write), {@code float(str)}, {@code int(float)}, and a Python int held as the smallest
 * of Integer / Long / BigInteger (as Jackson gives it).
 */
public final class PyNumbers {
    private PyNumbers() {}

    /** Python's {@code int} conversion limit ({@code sys.get_int_max_str_digits()}, 4300). */
    public static final int INT_MAX_STR_DIGITS = 4300;

    /** A Python int as Jackson would hold it: Integer, else Long, else BigInteger. */
    public static Number pyInt(BigInteger v) {
        if (v.bitLength() < 32) {
            return v.intValue();
        }
        if (v.bitLength() < 64) {
            return v.longValue();
        }
        return v;
    }

    public static BigInteger toBig(Number n) {
        if (n instanceof BigInteger b) {
            return b;
        }
        return BigInteger.valueOf(n.longValue());
    }

    /** {@code int(f)} for a float: truncation; ValueError for NaN, OverflowError for infinities. */
    public static Number intOfFloat(double f) {
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
    public static double parseFloat(String s) {
        StringBuilder ascii = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            if (cp < 127) {
                ascii.append((char) cp);
            } else if (PyUnicode.isSpace(cp)) {
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

    /**
     * Python's {@code repr(float)}: the shortest digits that round-trip, in fixed notation for
     * 1e-4 &lt;= |d| &lt; 1e16 ({@code 0.0001}, {@code 1e+16}, {@code 1e-05}, {@code -0.0}), {@code
     * nan}, {@code inf}, {@code -inf}.
     */
    public static String floatRepr(double d) {
        if (Double.isNaN(d)) {
            return "nan";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "inf" : "-inf";
        }
        StringBuilder out = new StringBuilder(24);
        appendFiniteRepr(d, out);
        return out.toString();
    }

    /** {@link #floatRepr} of a finite {@code d}, appended to {@code out}. */
    static void appendFiniteRepr(double d, StringBuilder out) {
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
            return (exact.subtract(down).compareTo(up.subtract(exact)) <= 0 ? down : up).stripTrailingZeros();
        }
        return (downOk ? down : upOk ? up : twoDigits).stripTrailingZeros();
    }
}
