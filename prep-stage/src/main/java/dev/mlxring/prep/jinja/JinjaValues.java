package dev.mlxring.prep.jinja;

import com.hubspot.jinjava.objects.SafeString;
import com.hubspot.jinjava.util.HasObjectTruthValue;
import dev.mlxring.pycompat.PyStrings;
import dev.mlxring.pycompat.PyValues;

/**
 * Template values as Jinja2 sees them, on top of {@link PyValues}: Java {@code null} is Jinja2's
 * undefined (which prints as the empty string), {@link PyNone} is Python's None, and Jinjava's own
 * wrappers ({@link SafeString}, its null placeholder) are taken off before Python semantics apply.
 */
final class JinjaValues {

    private JinjaValues() {}

    /** Python truthiness: None/undefined, False, 0, '' and empty containers are false. */
    static boolean truthy(Object o) {
        o = unwrap(o);
        return o instanceof HasObjectTruthValue t ? t.getObjectTruthValue() : PyValues.truthy(o);
    }

    /**
     * Python {@code str(value)} as Jinja2 prints {@code {{ value }}}, except that Java {@code null}
     * (an undefined variable or a missing key) prints as the empty string, like Jinja2's Undefined.
     */
    static String str(Object o) {
        return o == null ? "" : PyStrings.str(o);
    }

    /** For arguments where Python accepts None as "not given" ({@code split(None)}, {@code s[None:2]}). */
    static Object noneToNull(Object o) {
        o = unwrap(o);
        return o == PyNone.INSTANCE ? null : o;
    }

    /** Jinjava's wrappers off: a {@link SafeString} as its text, Jinjava's null placeholder as undefined. */
    static Object unwrap(Object o) {
        if (o instanceof SafeString s) {
            return s.toString();
        }
        if (o == com.hubspot.jinjava.interpret.NullValue.INSTANCE) {
            return null;
        }
        return o;
    }
}
