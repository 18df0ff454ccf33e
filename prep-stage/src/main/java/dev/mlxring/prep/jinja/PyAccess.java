package dev.mlxring.prep.jinja;

import static dev.mlxring.prep.jinja.JinjaValues.noneToNull;
import static dev.mlxring.prep.jinja.JinjaValues.unwrap;
import static dev.mlxring.prep.jinja.RenderErrors.pyError;

import com.hubspot.jinjava.el.ext.AstRangeBracket;
import com.hubspot.jinjava.objects.collections.PyList;
import dev.mlxring.pycompat.PyValues;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import jinjava.de.odysseus.el.tree.Bindings;
import jinjava.de.odysseus.el.tree.impl.ast.AstBracket;
import jinjava.de.odysseus.el.tree.impl.ast.AstDot;
import jinjava.de.odysseus.el.tree.impl.ast.AstNode;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.PropertyNotFoundException;

/**
 * Jinja2's attribute, item and slice access: {@code x.attr} and {@code x[key]} raise UndefinedError
 * on an undefined base and are undefined on None; {@code x[start:stop:step]} has Python's slice
 * semantics, for strings (by code point) and sequences.
 */
final class PyAccess {

    private PyAccess() {}

    /**
     * {@code base.attr} / {@code base[key]} as in Jinja2: on an undefined base it raises
     * (UndefinedError); on None it is undefined; otherwise the EL resolvers decide.
     */
    static Object getItem(AstNode prefix, Object base, Object property, boolean strict, ELContext context) {
        if (base == null) {
            throw pyError("'" + prefix + "' is undefined");
        }
        if (base == PyNone.INSTANCE || (property == null && strict)) {
            return null;
        }
        context.setPropertyResolved(false);
        Object result = context.getELResolver().getValue(context, base, property);
        if (!context.isPropertyResolved()) {
            throw new PropertyNotFoundException(
                    "Cannot resolve property '" + property + "' of " + PyValues.typeName(base));
        }
        return result;
    }

    static final class PyDot extends AstDot {
        PyDot(AstNode base, String property, boolean lvalue) {
            super(base, property, lvalue);
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            Object base = prefix.eval(bindings, context);
            return getItem(prefix, base, base == null ? null : getProperty(bindings, context), strict, context);
        }
    }

    static final class PyBracket extends AstBracket {
        PyBracket(AstNode base, AstNode property, boolean lvalue, boolean strict, boolean ignoreReturnType) {
            super(base, property, lvalue, strict, ignoreReturnType);
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            Object base = prefix.eval(bindings, context);
            return getItem(prefix, base, base == null ? null : getProperty(bindings, context), strict, context);
        }
    }

    /** {@code base[start:stop:step]} with Python semantics, for strings (by code point) and sequences. */
    static final class PySlice extends AstRangeBracket {
        private final AstNode step;

        PySlice(AstNode base, AstNode start, AstNode stop, AstNode step, boolean lvalue, boolean strict) {
            super(base, start, stop, lvalue, strict, false);
            this.step = step;
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            Object base = unwrap(prefix.eval(bindings, context));
            if (base == null) {
                throw pyError("cannot slice an undefined value (" + prefix + ")");
            }
            Integer a = index(property, bindings, context);
            Integer b = index(rangeMax, bindings, context);
            Integer s = index(step, bindings, context);
            int st = s == null ? 1 : s;
            if (st == 0) {
                throw pyError("slice step cannot be zero");
            }
            if (base instanceof String str) {
                int[] cps = str.codePoints().toArray();
                StringBuilder out = new StringBuilder();
                for (int i : indices(cps.length, a, b, st)) {
                    out.appendCodePoint(cps[i]);
                }
                return out.toString();
            }
            List<Object> items = new ArrayList<>();
            if (base instanceof Iterable<?> it) {
                it.forEach(items::add);
            } else if (base instanceof Object[] arr) {
                items.addAll(Arrays.asList(arr));
            } else {
                throw pyError("'" + PyValues.typeName(base) + "' object is not subscriptable");
            }
            List<Object> out = new ArrayList<>();
            for (int i : indices(items.size(), a, b, st)) {
                out.add(items.get(i));
            }
            return new PyList(out);
        }

        private static Integer index(AstNode node, Bindings bindings, ELContext context) {
            if (node == null) {
                return null;
            }
            Object v = noneToNull(node.eval(bindings, context));
            if (v == null) {
                return null;
            }
            if (v instanceof Number n && !(v instanceof Double) && !(v instanceof Float)) {
                return n.intValue();
            }
            throw pyError("slice indices must be integers or None, not " + PyValues.typeName(v));
        }

        /** Python's slice.indices(len) walked: the selected positions, in order. */
        static int[] indices(int len, Integer start, Integer stop, int step) {
            int lo;
            int hi;
            if (step > 0) {
                lo = start == null ? 0 : clamp(start, len, 0, len);
                hi = stop == null ? len : clamp(stop, len, 0, len);
            } else {
                lo = start == null ? len - 1 : clamp(start, len, -1, len - 1);
                hi = stop == null ? -1 : clamp(stop, len, -1, len - 1);
            }
            List<Integer> out = new ArrayList<>();
            for (int i = lo; step > 0 ? i < hi : i > hi; i += step) {
                out.add(i);
            }
            return out.stream().mapToInt(Integer::intValue).toArray();
        }

        private static int clamp(int i, int len, int min, int max) {
            if (i < 0) {
                i += len;
            }
            return Math.max(min, Math.min(max, i));
        }
    }
}
