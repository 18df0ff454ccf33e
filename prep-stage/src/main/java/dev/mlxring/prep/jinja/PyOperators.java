package dev.mlxring.prep.jinja;

import static dev.mlxring.prep.jinja.JinjaValues.truthy;
import static dev.mlxring.prep.jinja.JinjaValues.unwrap;
import static dev.mlxring.prep.jinja.RenderErrors.pyError;

import com.hubspot.jinjava.objects.collections.PyList;
import dev.mlxring.pycompat.PyError;
import dev.mlxring.pycompat.PyValues;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import jinjava.de.odysseus.el.misc.NumberOperations;
import jinjava.de.odysseus.el.tree.Bindings;
import jinjava.de.odysseus.el.tree.impl.ast.AstBinary;
import jinjava.de.odysseus.el.tree.impl.ast.AstNode;
import jinjava.javax.el.ELContext;

/**
 * Python's binary operators, for the expression parser ({@link PyExpressionParser}): {@code +},
 * {@code *} and {@code %} with Python's types and results (no string/number coercion, TypeError
 * otherwise), Jinja2's {@code ~}, Python's {@code and} (returns an operand), {@code ==}/{@code !=}
 * ({@link #pyEquals}) and {@code <} ordering ({@link #compare}); plus the number helpers they share
 * (bool is a number, as in Python).
 */
final class PyOperators {

    private PyOperators() {}

    /** Python {@code +}: numbers add, str+str and list+list concatenate, anything else raises. */
    static final class PyAdd implements AstBinary.Operator {
        static final PyAdd OP = new PyAdd();

        @Override
        public Object eval(Bindings bindings, ELContext context, AstNode left, AstNode right) {
            Object a = unwrap(left.eval(bindings, context));
            Object b = unwrap(right.eval(bindings, context));
            if (a instanceof String x && b instanceof String y) {
                return x + y;
            }
            if (a instanceof Collection<?> x && b instanceof Collection<?> y) {
                List<Object> out = new ArrayList<>(x);
                out.addAll(y);
                return new PyList(out);
            }
            if (isNumber(a) && isNumber(b)) {
                return NumberOperations.add(bindings, a, b);
            }
            if (a == null || b == null) {
                throw pyError("undefined value in '+' (the " + (a == null ? "left" : "right")
                        + " operand is undefined; Jinja2 raises UndefinedError)");
            }
            throw pyError("unsupported operand type(s) for +: '" + PyValues.typeName(a) + "' and '"
                    + PyValues.typeName(b) + "'");
        }

        @Override
        public String toString() {
            return "+";
        }
    }

    /** Python {@code and}: the left operand if it is falsy, else the right one. */
    static final class PyAnd implements AstBinary.Operator {
        static final PyAnd OP = new PyAnd();

        @Override
        public Object eval(Bindings bindings, ELContext context, AstNode left, AstNode right) {
            Object a = left.eval(bindings, context);
            return truthy(a) ? right.eval(bindings, context) : a;
        }

        @Override
        public String toString() {
            return "&&";
        }
    }

    /** Python {@code ==} / {@code !=}: no string/number coercion; 1 == 1.0 == True; deep for lists and dicts. */
    static final class PyEq implements AstBinary.Operator {
        static final PyEq EQ = new PyEq(false);
        static final PyEq NE = new PyEq(true);
        private final boolean negate;

        private PyEq(boolean negate) {
            this.negate = negate;
        }

        @Override
        public Object eval(Bindings bindings, ELContext context, AstNode left, AstNode right) {
            return pyEquals(left.eval(bindings, context), right.eval(bindings, context)) != negate;
        }

        @Override
        public String toString() {
            return negate ? "!=" : "==";
        }
    }

    static boolean pyEquals(Object a, Object b) {
        a = unwrap(a);
        b = unwrap(b);
        if (a == b) {
            return true;
        }
        if (a == null || b == null) {
            return false; // undefined equals only undefined
        }
        if (isNumber(a) && isNumber(b)) {
            return toBigDecimal(a).compareTo(toBigDecimal(b)) == 0;
        }
        if (a instanceof CharSequence x && b instanceof CharSequence y) {
            return x.toString().equals(y.toString());
        }
        if (a instanceof List<?> x && b instanceof List<?> y) {
            if (x.size() != y.size()) {
                return false;
            }
            for (int i = 0; i < x.size(); i++) {
                if (!pyEquals(x.get(i), y.get(i))) {
                    return false;
                }
            }
            return true;
        }
        if (a instanceof Map<?, ?> x && b instanceof Map<?, ?> y) {
            if (x.size() != y.size()) {
                return false;
            }
            for (Map.Entry<?, ?> e : x.entrySet()) {
                if (!y.containsKey(e.getKey()) || !pyEquals(e.getValue(), y.get(e.getKey()))) {
                    return false;
                }
            }
            return true;
        }
        return a.equals(b);
    }

    private static java.math.BigDecimal toBigDecimal(Object o) {
        if (o instanceof Boolean b) {
            return b ? java.math.BigDecimal.ONE : java.math.BigDecimal.ZERO;
        }
        if (o instanceof java.math.BigDecimal d) {
            return d;
        }
        if (o instanceof java.math.BigInteger i) {
            return new java.math.BigDecimal(i);
        }
        if (o instanceof Double || o instanceof Float) {
            double d = ((Number) o).doubleValue();
            return Double.isFinite(d)
                    ? new java.math.BigDecimal(d)
                    : java.math.BigDecimal.valueOf(Long.MAX_VALUE)
                            .multiply(java.math.BigDecimal.TEN.pow(400))
                            .multiply(java.math.BigDecimal.valueOf(Math.signum(d)));
        }
        return java.math.BigDecimal.valueOf(((Number) o).longValue());
    }

    /** Python's {@code <} ordering, for {@code min}/{@code max}: numbers by value, strings, same-class comparables; TypeError otherwise. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static int compare(Object a, Object b) {
        if (isNumber(a) && isNumber(b)) {
            return toBigDecimal(a).compareTo(toBigDecimal(b));
        }
        if (a instanceof String x && b instanceof String y) {
            return x.compareTo(y);
        }
        if (a instanceof Comparable x && b != null && a.getClass() == b.getClass()) {
            return x.compareTo(b);
        }
        throw new PyError("'<' not supported between instances of '" + PyValues.typeName(a) + "' and '"
                + PyValues.typeName(b) + "'");
    }

    /** Python {@code %} on numbers: the result has the sign of the divisor. */
    static final class PyMod implements AstBinary.Operator {
        static final PyMod OP = new PyMod();

        @Override
        public Object eval(Bindings bindings, ELContext context, AstNode left, AstNode right) {
            Object a = unwrap(left.eval(bindings, context));
            Object b = unwrap(right.eval(bindings, context));
            if (!isNumber(a) || !isNumber(b)) {
                throw pyError("unsupported operand type(s) for %: '" + PyValues.typeName(a) + "' and '"
                        + PyValues.typeName(b) + "' (%-formatting is not supported)");
            }
            if (isIntegral(a) && isIntegral(b)) {
                long y = ((Number) toNumber(b)).longValue();
                if (y == 0) {
                    throw pyError("integer modulo by zero");
                }
                return Math.floorMod(((Number) toNumber(a)).longValue(), y);
            }
            double x = ((Number) toNumber(a)).doubleValue();
            double y = ((Number) toNumber(b)).doubleValue();
            if (y == 0) {
                throw pyError("float modulo");
            }
            double m = x % y;
            return m != 0 && (m < 0) != (y < 0) ? m + y : m;
        }

        @Override
        public String toString() {
            return "%";
        }
    }

    static boolean isIntegral(Object o) {
        return o instanceof Boolean
                || o instanceof Integer
                || o instanceof Long
                || o instanceof Short
                || o instanceof Byte
                || o instanceof java.math.BigInteger;
    }

    static Object toNumber(Object o) {
        return o instanceof Boolean b ? (b ? 1L : 0L) : o;
    }

    static boolean isNumber(Object o) {
        return o instanceof Number || o instanceof Boolean;
    }

    /** Jinja2 {@code ~}: {@code str(a) + str(b)} (undefined is ''). */
    static final class PyConcat extends AstBinary.SimpleOperator {
        static final PyConcat OP = new PyConcat();

        @Override
        protected Object apply(jinjava.de.odysseus.el.misc.TypeConverter converter, Object a, Object b) {
            return JinjaValues.str(unwrap(a)) + JinjaValues.str(unwrap(b));
        }

        @Override
        public String toString() {
            return "~";
        }
    }

    /** Python {@code *}: {@code str * int} / {@code list * int} repeat, numbers multiply. */
    static final class PyMul implements AstBinary.Operator {
        static final PyMul OP = new PyMul();

        @Override
        public Object eval(Bindings bindings, ELContext context, AstNode left, AstNode right) {
            Object a = unwrap(left.eval(bindings, context));
            Object b = unwrap(right.eval(bindings, context));
            if (a instanceof String s && isInt(b)) {
                return s.repeat(Math.max(0, ((Number) b).intValue()));
            }
            if (b instanceof String s && isInt(a)) {
                return s.repeat(Math.max(0, ((Number) a).intValue()));
            }
            if (a instanceof Collection<?> c && isInt(b)) {
                List<Object> out = new ArrayList<>();
                for (int i = 0; i < ((Number) b).intValue(); i++) {
                    out.addAll(c);
                }
                return new PyList(out);
            }
            if (isNumber(a) && isNumber(b)) {
                return NumberOperations.mul(bindings, a, b);
            }
            throw pyError("unsupported operand type(s) for *: '" + PyValues.typeName(a) + "' and '"
                    + PyValues.typeName(b) + "'");
        }

        private static boolean isInt(Object o) {
            return o instanceof Integer || o instanceof Long || o instanceof Short || o instanceof Byte;
        }

        @Override
        public String toString() {
            return "*";
        }
    }
}
