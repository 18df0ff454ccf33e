package dev.mlxring.prep.jinja;

import static dev.mlxring.prep.jinja.RenderErrors.pyError;

import com.hubspot.jinjava.objects.SafeString;
import com.hubspot.jinjava.objects.collections.PyList;
import dev.mlxring.pycompat.PyError;
import dev.mlxring.pycompat.PyStrings;
import dev.mlxring.pycompat.PyUnicode;
import java.beans.FeatureDescriptor;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.Map;
import java.util.function.Supplier;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;

/**
 * Python's methods and indexing on template values, first in the EL resolver chain: {@code
 * "text".method(args)} resolves to Python's {@code str} methods ({@code startswith}, {@code split},
 * {@code strip}, ...), shadowing Java's methods of the same name ({@code split} is not a regex);
 * {@code s[i]} indexes a string by code point; {@code dict.get(key, default=None)} returns None for
 * a missing key. Anything else is left to the next resolver.
 */
final class PyMethodResolver extends ELResolver {

    @Override
    public Object invoke(ELContext context, Object base, Object method, Class<?>[] paramTypes, Object[] params) {
        if (!(method instanceof String name)) {
            return null;
        }
        Object b = base instanceof SafeString ss ? ss.toString() : base;
        if (b instanceof Map<?, ?> map && name.equals("get")) {
            // dict.get(key, default=None): Python's None for a missing key, not undefined
            PyArgs args = new PyArgs(name, params);
            Object key = args.req(0, "key", 2);
            Object v = map.get(key);
            if (v == null && key != null && !(key instanceof String)) {
                v = map.get(String.valueOf(key));
            }
            context.setPropertyResolved(true);
            if (v != null) {
                return v;
            }
            Object dflt = args.get(1, "default", 2);
            return dflt != null ? dflt : PyNone.INSTANCE;
        }
        if (!(b instanceof String s)) {
            return null;
        }
        PyArgs args = new PyArgs(name, params);
        Object result;
        try {
            result = stringMethod(s, name, args);
        } catch (PyError e) {
            throw pyError(e.getMessage());
        }
        if (result == NOT_A_METHOD) {
            return null;
        }
        context.setPropertyResolved(true);
        return result;
    }

    private static final Object NOT_A_METHOD = new Object();

    private static Object stringMethod(String s, String name, PyArgs a) {
        return switch (name) {
            case "strip" -> PyStrings.strip(s, a.optStr(0, "chars", 1));
            case "lstrip" -> PyStrings.lstrip(s, a.optStr(0, "chars", 1));
            case "rstrip" -> PyStrings.rstrip(s, a.optStr(0, "chars", 1));
            case "split" ->
                new PyList(new ArrayList<>(PyStrings.split(s, a.optStr(0, "sep", 2), a.optInt(1, "maxsplit", -1))));
            case "rsplit" ->
                new PyList(new ArrayList<>(PyStrings.rsplit(s, a.optStr(0, "sep", 2), a.optInt(1, "maxsplit", -1))));
            case "splitlines" ->
                new PyList(new ArrayList<>(PyStrings.splitlines(s, a.optBool(0, "keepends", false, 1))));
            case "startswith" ->
                PyStrings.startswith(s, a.req(0, "prefix", 3), a.optInteger(1, "start"), a.optInteger(2, "end"));
            case "endswith" ->
                PyStrings.endswith(s, a.req(0, "suffix", 3), a.optInteger(1, "start"), a.optInteger(2, "end"));
            case "upper" -> noArgs(a, () -> PyStrings.upper(s));
            case "lower", "casefold" -> noArgs(a, () -> PyStrings.lower(s));
            case "title" -> noArgs(a, () -> PyStrings.title(s));
            case "capitalize" -> noArgs(a, () -> PyStrings.capitalize(s));
            case "swapcase" -> noArgs(a, () -> PyStrings.swapcase(s));
            case "replace" ->
                PyStrings.replace(s, a.reqStr(0, "old", 3), a.reqStr(1, "new", 3), a.optInt(2, "count", -1));
            case "find" ->
                PyStrings.find(s, a.reqStr(0, "sub", 3), a.optInteger(1, "start"), a.optInteger(2, "end"), false);
            case "rfind" ->
                PyStrings.find(s, a.reqStr(0, "sub", 3), a.optInteger(1, "start"), a.optInteger(2, "end"), true);
            case "index", "rindex" -> {
                int i = PyStrings.find(
                        s,
                        a.reqStr(0, "sub", 3),
                        a.optInteger(1, "start"),
                        a.optInteger(2, "end"),
                        name.equals("rindex"));
                if (i < 0) {
                    throw new PyError("substring not found");
                }
                yield i;
            }
            case "count" -> PyStrings.count(s, a.reqStr(0, "sub", 3), a.optInteger(1, "start"), a.optInteger(2, "end"));
            case "join" -> PyStrings.join(s, a.req(0, "iterable", 1));
            case "removeprefix" -> {
                String p = a.reqStr(0, "prefix", 1);
                yield s.startsWith(p) ? s.substring(p.length()) : s;
            }
            case "removesuffix" -> {
                String p = a.reqStr(0, "suffix", 1);
                yield !p.isEmpty() && s.endsWith(p) ? s.substring(0, s.length() - p.length()) : s;
            }
            case "isspace" -> noArgs(a, () -> PyStrings.allCodePoints(s, PyUnicode::isSpace));
            case "isdigit", "isdecimal", "isnumeric" -> noArgs(a, () -> PyStrings.allCodePoints(s, Character::isDigit));
            case "isalpha" -> noArgs(a, () -> PyStrings.allCodePoints(s, Character::isLetter));
            case "isalnum" -> noArgs(a, () -> PyStrings.allCodePoints(s, Character::isLetterOrDigit));
            case "islower" -> noArgs(a, () -> PyStrings.isLower(s));
            case "isupper" -> noArgs(a, () -> PyStrings.isUpper(s));
            default -> NOT_A_METHOD;
        };
    }

    /** A method that takes no arguments ({@code s.upper()}): raises if any are given, else computes. */
    private static Object noArgs(PyArgs a, Supplier<Object> method) {
        a.none();
        return method.get();
    }

    @Override
    public Class<?> getCommonPropertyType(ELContext context, Object base) {
        return null;
    }

    @Override
    public Iterator<FeatureDescriptor> getFeatureDescriptors(ELContext context, Object base) {
        return null;
    }

    @Override
    public Class<?> getType(ELContext context, Object base, Object property) {
        return null;
    }

    /** {@code 'abc'[1]}, {@code 'abc'[-1]} by code point; other attributes of a str are undefined. */
    @Override
    public Object getValue(ELContext context, Object base, Object property) {
        Object b = base instanceof SafeString ss ? ss.toString() : base;
        if (!(b instanceof String s)) {
            return null;
        }
        context.setPropertyResolved(true);
        String p = String.valueOf(property);
        if (!p.matches("-?\\d{1,9}")) {
            return null;
        }
        int i = Integer.parseInt(p);
        int n = s.codePointCount(0, s.length());
        if (i < 0) {
            i += n;
        }
        if (i < 0 || i >= n) {
            return null;
        }
        int at = s.offsetByCodePoints(0, i);
        return new String(Character.toChars(s.codePointAt(at)));
    }

    @Override
    public boolean isReadOnly(ELContext context, Object base, Object property) {
        return false;
    }

    @Override
    public void setValue(ELContext context, Object base, Object property, Object value) {
        // read-only: nothing to set
    }
}
