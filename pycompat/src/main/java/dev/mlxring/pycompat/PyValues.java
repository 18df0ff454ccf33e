package dev.mlxring.pycompat;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * Python's view of plain Java values: which Python type a value is, whether it is true, and how
 * it iterates. Java {@code null} and any {@link NoneValue} are {@code None}; {@link Boolean} is
 * {@code bool}; {@link Integer}, {@link Long}, {@link Short}, {@link Byte} and {@link BigInteger}
 * are {@code int}; other {@link Number}s are {@code float}; {@link CharSequence} and {@link
 * Character} are {@code str}; {@link Map} is {@code dict}; {@link Collection} and arrays are
 * {@code list}.
 */
public final class PyValues {
    private PyValues() {}

    /** Whether {@code o} is Python's None: {@code null} or a {@link NoneValue}. */
    public static boolean isNone(Object o) {
        return o == null || o instanceof NoneValue;
    }

    /** Python's {@code type(o).__name__}; the Java class's simple name for anything else. */
    public static String typeName(Object o) {
        if (isNone(o)) {
            return "NoneType";
        }
        if (o instanceof String || o instanceof Character) {
            return "str";
        }
        if (o instanceof Boolean) {
            return "bool";
        }
        if (o instanceof Integer
                || o instanceof Long
                || o instanceof Short
                || o instanceof Byte
                || o instanceof BigInteger) {
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

    /** Python truthiness: None, False, 0, 0.0, '' and empty containers are false; anything else true. */
    public static boolean truthy(Object o) {
        if (isNone(o)) {
            return false;
        }
        if (o instanceof Boolean b) {
            return b;
        }
        if (o instanceof BigInteger i) {
            return i.signum() != 0;
        }
        if (o instanceof Double || o instanceof Float || o instanceof BigDecimal) {
            return ((Number) o).doubleValue() != 0; // a Python float: NaN is true
        }
        if (o instanceof Number n) {
            return n.longValue() != 0;
        }
        if (o instanceof CharSequence cs) {
            return !cs.isEmpty();
        }
        if (o instanceof Collection<?> c) {
            return !c.isEmpty();
        }
        if (o instanceof Map<?, ?> m) {
            return !m.isEmpty();
        }
        if (o instanceof Object[] a) {
            return a.length > 0;
        }
        return true;
    }

    /**
     * What {@code for x in o} walks: a collection's items, a dict's keys, a str's characters (code
     * points, as one-character strings), an array's elements.
     *
     * @throws PyError if {@code o} is not iterable
     */
    public static Iterable<?> iterable(Object o) {
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
}
