package dev.mlxring.prep.jinja;

import static dev.mlxring.prep.jinja.JinjaValues.truthy;
import static dev.mlxring.prep.jinja.JinjaValues.unwrap;
import static dev.mlxring.prep.jinja.PyOperators.compare;
import static dev.mlxring.prep.jinja.PyOperators.isIntegral;
import static dev.mlxring.prep.jinja.PyOperators.isNumber;
import static dev.mlxring.prep.jinja.PyOperators.toNumber;
import static dev.mlxring.prep.jinja.RenderErrors.pyError;

import com.hubspot.jinjava.el.ext.NamedParameter;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.objects.collections.PyList;
import dev.mlxring.pycompat.PyError;
import dev.mlxring.pycompat.PyJsonDumps;
import dev.mlxring.pycompat.PyStrings;
import dev.mlxring.pycompat.PyValues;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * The Jinja2 filters chat templates use, with Jinja2's (and transformers' {@code tojson}) argument
 * names, defaults and results: {@code tojson}, {@code trim}, {@code string}, {@code upper}, {@code
 * lower}, {@code title}, {@code capitalize}, {@code replace}, {@code join}, {@code length}/{@code
 * count}, {@code sum}, {@code min}/{@code max}, {@code round}, {@code default}/{@code d}, {@code
 * items}, registered over Jinjava's filters of the same names.
 */
final class PyFilters {

    private PyFilters() {}

    /** A filter with Python-style positional + keyword arguments. */
    abstract static class PyFilter implements Filter {
        private final String name;

        PyFilter(String name) {
            this.name = name;
        }

        @Override
        public String getName() {
            return name;
        }

        abstract Object apply(Object value, PyArgs args);

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
            Object[] all = new Object[(args == null ? 0 : args.length) + kwargs.size()];
            int k = 0;
            if (args != null) {
                for (Object a : args) {
                    all[k++] = a;
                }
            }
            for (Map.Entry<String, Object> e : kwargs.entrySet()) {
                all[k++] = new NamedParameter(e.getKey(), e.getValue());
            }
            try {
                return apply(unwrap(var), new PyArgs(name, all));
            } catch (PyError e) {
                throw pyError(e.getMessage());
            }
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
            return filter(var, interpreter, args, Map.of());
        }

        @Override
        public boolean preserveSafeString() {
            return false;
        }
    }

    static List<Filter> filters() {
        List<Filter> f = new ArrayList<>();
        f.add(new PyFilter("tojson") {
            @Override
            Object apply(Object value, PyArgs a) {
                Object indent = a.get(0, "indent", 4);
                Object seps = a.get(2, "separators", 4);
                String[] separators = null;
                if (seps instanceof List<?> l && l.size() == 2) {
                    separators = new String[] {JinjaValues.str(l.get(0)), JinjaValues.str(l.get(1))};
                }
                Object sort = a.get(3, "sort_keys", 4);
                return PyJsonDumps.dumps(plain(value), indent, separators, Boolean.TRUE.equals(sort));
            }
        });
        f.add(new PyFilter("trim") {
            @Override
            Object apply(Object value, PyArgs a) {
                return PyStrings.strip(JinjaValues.str(value), a.optStr(0, "chars", 1));
            }
        });
        f.add(strFilter("string", s -> s));
        f.add(strFilter("upper", PyStrings::upper));
        f.add(strFilter("lower", PyStrings::lower));
        f.add(strFilter("title", PyStrings::title));
        f.add(strFilter("capitalize", PyStrings::capitalize));
        f.add(new PyFilter("replace") {
            @Override
            Object apply(Object value, PyArgs a) {
                Integer count = a.optInteger(2, "count");
                return PyStrings.replace(
                        JinjaValues.str(value),
                        JinjaValues.str(a.req(0, "old", 3)),
                        JinjaValues.str(a.req(1, "new", 3)),
                        count == null ? -1 : count);
            }
        });
        f.add(new PyFilter("join") {
            @Override
            Object apply(Object value, PyArgs a) {
                String sep = JinjaValues.str(a.get(0, "d", 2));
                Object attribute = a.get(1, "attribute", 2);
                StringBuilder b = new StringBuilder();
                boolean first = true;
                for (Object o : PyValues.iterable(value)) {
                    if (!first) {
                        b.append(sep);
                    }
                    first = false;
                    Object item = itemAttribute(o, attribute);
                    b.append(JinjaValues.str(unwrap(item)));
                }
                return b.toString();
            }
        });
        for (String name : List.of("length", "count")) {
            f.add(new PyFilter(name) {
                @Override
                Object apply(Object value, PyArgs a) {
                    if (value instanceof String s) {
                        return s.codePointCount(0, s.length());
                    }
                    if (value instanceof Map<?, ?> m) {
                        return m.size();
                    }
                    if (value instanceof Collection<?> c) {
                        return c.size();
                    }
                    if (value instanceof Object[] arr) {
                        return arr.length;
                    }
                    if (value == null) {
                        return 0; // Jinja2: len(Undefined) == 0
                    }
                    throw new PyError("object of type '" + PyValues.typeName(value) + "' has no len()");
                }
            });
        }
        f.add(new PyFilter("sum") {
            @Override
            Object apply(Object value, PyArgs a) {
                Object attribute = a.get(0, "attribute", 2);
                Object total = a.get(1, "start", 2);
                total = total == null ? 0L : total;
                boolean integral = isIntegral(total);
                double dsum = ((Number) toNumber(total)).doubleValue();
                long lsum = integral ? ((Number) toNumber(total)).longValue() : 0;
                for (Object o : PyValues.iterable(value)) {
                    Object x = unwrap(itemAttribute(o, attribute));
                    if (!isNumber(x)) {
                        throw new PyError(
                                "unsupported operand type(s) for +: 'int' and '" + PyValues.typeName(x) + "'");
                    }
                    if (integral && isIntegral(x)) {
                        lsum += ((Number) toNumber(x)).longValue();
                        dsum = lsum;
                    } else {
                        integral = false;
                        dsum += ((Number) toNumber(x)).doubleValue();
                    }
                }
                return integral ? (Object) lsum : (Object) dsum;
            }
        });
        for (String name : List.of("min", "max")) {
            f.add(new PyFilter(name) {
                @Override
                Object apply(Object value, PyArgs a) {
                    boolean caseSensitive = Boolean.TRUE.equals(a.get(0, "case_sensitive", 2));
                    Object attribute = a.get(1, "attribute", 2);
                    Object best = null;
                    Object bestKey = null;
                    for (Object o : PyValues.iterable(value)) {
                        Object x = unwrap(itemAttribute(o, attribute));
                        Object key = !caseSensitive && x instanceof String str ? PyStrings.lower(str) : x;
                        if (best == null
                                || (name.equals("min") ? compare(key, bestKey) < 0 : compare(key, bestKey) > 0)) {
                            best = unwrap(o);
                            bestKey = key;
                        }
                    }
                    return best; // empty: undefined, as in Jinja2
                }
            });
        }
        f.add(new PyFilter("round") {
            @Override
            Object apply(Object value, PyArgs a) {
                Object p = a.get(0, "precision", 2);
                int precision = p == null ? 0 : ((Number) p).intValue();
                String method = a.get(1, "method", 2) == null ? "common" : JinjaValues.str(a.get(1, "method", 2));
                Object v = toNumber(value);
                if (!(v instanceof Number n)) {
                    throw new PyError("round() needs a number, not " + PyValues.typeName(value));
                }
                java.math.RoundingMode mode = switch (method) {
                    case "common" -> java.math.RoundingMode.HALF_EVEN; // Python's round()
                    case "floor" -> java.math.RoundingMode.FLOOR;
                    case "ceil" -> java.math.RoundingMode.CEILING;
                    default -> throw new PyError("method must be common, ceil or floor");
                };
                if (isIntegral(v)) {
                    return n.longValue(); // Python: round(int, n) is the int
                }
                return new java.math.BigDecimal(n.doubleValue())
                        .setScale(precision, mode)
                        .doubleValue();
            }
        });
        for (String name : List.of("default", "d")) {
            f.add(new PyFilter(name) {
                @Override
                Object apply(Object value, PyArgs a) {
                    boolean bool = Boolean.TRUE.equals(a.get(1, "boolean", 2));
                    if (value == null || (bool && !truthy(value))) {
                        Object d = a.rawGet(0, "default_value");
                        return d == null ? "" : d;
                    }
                    return value;
                }
            });
        }
        f.add(new PyFilter("items") {
            @Override
            Object apply(Object value, PyArgs a) {
                if (value == null) {
                    return new PyList(new ArrayList<>());
                }
                if (!(value instanceof Map<?, ?> m)) {
                    throw new PyError("Can only get item pairs from a mapping.");
                }
                List<Object> out = new ArrayList<>();
                m.forEach((k, v) -> out.add(new PyList(new ArrayList<>(Arrays.asList(k, v)))));
                return new PyList(out);
            }
        });
        return f;
    }

    /** A filter of {@code str(value)} that takes no arguments (extra ones are not checked). */
    private static PyFilter strFilter(String name, UnaryOperator<String> fn) {
        return new PyFilter(name) {
            @Override
            Object apply(Object value, PyArgs a) {
                return fn.apply(JinjaValues.str(value));
            }
        };
    }

    /** The {@code attribute=} argument of join/sum/min/max applied: the item's key, or the item when not given. */
    private static Object itemAttribute(Object item, Object attribute) {
        return attribute == null ? item : item instanceof Map<?, ?> m ? m.get(JinjaValues.str(attribute)) : null;
    }

    /** Deep copy into plain maps / lists / scalars, for json.dumps. */
    static Object plain(Object o) {
        o = unwrap(o);
        if (o instanceof Map<?, ?> m) {
            Map<Object, Object> out = new LinkedHashMap<>();
            m.forEach((k, v) -> out.put(unwrap(k), plain(v)));
            return out;
        }
        if (o instanceof Map.Entry<?, ?> e) {
            return Arrays.asList(plain(e.getKey()), plain(e.getValue()));
        }
        if (o instanceof Iterable<?> it) {
            List<Object> out = new ArrayList<>();
            it.forEach(x -> out.add(plain(x)));
            return out;
        }
        if (o instanceof Object[] arr) {
            List<Object> out = new ArrayList<>();
            for (Object x : arr) {
                out.add(plain(x));
            }
            return out;
        }
        return o;
    }
}
