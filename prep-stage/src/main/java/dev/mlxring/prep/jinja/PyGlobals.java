package dev.mlxring.prep.jinja;

import static dev.mlxring.prep.jinja.RenderErrors.pyError;

import com.hubspot.jinjava.el.ext.NamedParameter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import dev.mlxring.pycompat.PyError;
import dev.mlxring.pycompat.PyStrftime;
import dev.mlxring.pycompat.PyValues;
import java.time.ZonedDateTime;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The global functions transformers gives chat templates: {@code raise_exception(msg)} (aborts the
 * render with the template's message), {@code strftime_now(format)} (Python's {@code
 * datetime.now().strftime(format)}), and Jinja2's {@code dict(...)}.
 */
final class PyGlobals {

    private PyGlobals() {}

    /** Clock for {@code strftime_now}; replaceable for tests. */
    static volatile Supplier<ZonedDateTime> clock = ZonedDateTime::now;

    static List<ELFunctionDefinition> functions() {
        return List.of(
                function("raise_exception", "raiseException", Object.class),
                function("strftime_now", "strftimeNow", Object.class),
                function("dict", "dict", Object[].class));
    }

    /** A global function backed by a static method here (made accessible: this class is package-private). */
    private static ELFunctionDefinition function(String name, String method, Class<?>... params) {
        try {
            java.lang.reflect.Method m = PyGlobals.class.getDeclaredMethod(method, params);
            m.setAccessible(true);
            return new ELFunctionDefinition("", name, m);
        } catch (NoSuchMethodException e) {
            throw new AssertionError(e);
        }
    }

    /** {@code raise_exception(message)}: aborts the render with the template's message. */
    public static Object raiseException(Object message) {
        throw RenderErrors.raise(JinjaValues.str(message));
    }

    /** {@code strftime_now(format)}: the local time, formatted like Python's {@code strftime}. */
    public static String strftimeNow(Object format) {
        try {
            return PyStrftime.format(JinjaValues.str(format), clock.get());
        } catch (PyError e) {
            throw pyError(e.getMessage());
        }
    }

    /** {@code dict(k=v, ...)} / {@code dict(mapping)}. */
    public static Object dict(Object... args) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Object a : args == null ? new Object[0] : args) {
            if (a instanceof NamedParameter p) {
                out.put(p.getName(), p.getValue());
            } else if (a instanceof Map<?, ?> m) {
                m.forEach((k, v) -> out.put(String.valueOf(k), v));
            } else if (a != null) {
                throw pyError("dict() positional argument must be a mapping, not " + PyValues.typeName(a));
            }
        }
        return out;
    }
}
