package dev.mlxring.prep.jinja;

import static dev.mlxring.prep.jinja.JinjaValues.noneToNull;
import static dev.mlxring.prep.jinja.JinjaValues.unwrap;

import com.hubspot.jinjava.el.ext.NamedParameter;
import dev.mlxring.pycompat.PyError;
import dev.mlxring.pycompat.PyValues;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Positional + keyword arguments of a Python method or filter call, checked like CPython does
 * (arity, required names, argument types); None passed for an optional argument means "not
 * given", as in Python.
 */
final class PyArgs {
    private final String method;
    private final List<Object> positional = new ArrayList<>();
    private final Map<String, Object> named = new LinkedHashMap<>();
    private final List<Object> rawPositional = new ArrayList<>();
    private final Map<String, Object> rawNamed = new LinkedHashMap<>();

    PyArgs(String method, Object[] params) {
        this.method = method;
        for (Object p : params == null ? new Object[0] : params) {
            if (p instanceof NamedParameter np) {
                named.put(np.getName(), noneToNull(np.getValue()));
                rawNamed.put(np.getName(), unwrap(np.getValue()));
            } else {
                positional.add(noneToNull(p));
                rawPositional.add(unwrap(p));
            }
        }
    }

    void none() {
        if (!positional.isEmpty() || !named.isEmpty()) {
            throw new PyError(
                    "str." + method + "() takes no arguments (" + (positional.size() + named.size()) + " given)");
        }
    }

    Object get(int i, String name, int max) {
        if (positional.size() > max) {
            throw new PyError(
                    "str." + method + "() takes at most " + max + " arguments (" + positional.size() + " given)");
        }
        if (i < positional.size()) {
            return positional.get(i);
        }
        return named.get(name);
    }

    /** The argument as passed (None stays None). */
    Object rawGet(int i, String name) {
        return i < rawPositional.size() ? rawPositional.get(i) : rawNamed.get(name);
    }

    Object req(int i, String name, int max) {
        if (i >= positional.size() && !named.containsKey(name)) {
            throw new PyError("str." + method + "() missing required argument '" + name + "'");
        }
        return get(i, name, max);
    }

    String reqStr(int i, String name, int max) {
        Object o = req(i, name, max);
        if (!(o instanceof String s)) {
            throw new PyError("str." + method + "() argument '" + name + "' must be str, not " + PyValues.typeName(o));
        }
        return s;
    }

    String optStr(int i, String name, int max) {
        Object o = get(i, name, max);
        if (o != null && !(o instanceof String)) {
            throw new PyError(
                    "str." + method + "() argument '" + name + "' must be str or None, not " + PyValues.typeName(o));
        }
        return (String) o;
    }

    int optInt(int i, String name, int dflt) {
        Integer v = optInteger(i, name);
        return v == null ? dflt : v;
    }

    Integer optInteger(int i, String name) {
        Object o = get(i, name, Integer.MAX_VALUE);
        if (o == null) {
            return null;
        }
        if (o instanceof Number n && !(o instanceof Double) && !(o instanceof Float)) {
            return n.intValue();
        }
        throw new PyError(
                "str." + method + "() argument '" + name + "' must be an integer, not " + PyValues.typeName(o));
    }

    boolean optBool(int i, String name, boolean dflt, int max) {
        Object o = get(i, name, max);
        return o == null ? dflt : o instanceof Boolean b ? b : o instanceof Number n ? n.doubleValue() != 0 : true;
    }
}
