package dev.mlxring.prep.jinja;

import static dev.mlxring.prep.jinja.JinjaValues.unwrap;
import static dev.mlxring.prep.jinja.PyOperators.isNumber;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.exptest.ExpTest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Jinja2's tests ({@code x is test}), registered over Jinjava's own: {@code none} (only Python's
 * None, not undefined), {@code iterable} and {@code sequence} (undefined is both, as Jinja2's
 * Undefined iterates and has a length), {@code number} (bool is a number, as in Python).
 */
final class PyTests {

    private PyTests() {}

    abstract static class PyTest implements ExpTest {
        private final String name;

        PyTest(String name) {
            this.name = name;
        }

        @Override
        public String getName() {
            return name;
        }
    }

    static List<ExpTest> tests() {
        List<ExpTest> t = new ArrayList<>();
        for (String name : List.of("iterable", "sequence")) {
            t.add(new PyTest(name) {
                @Override
                public boolean evaluate(Object var, JinjavaInterpreter interpreter, Object... args) {
                    Object v = unwrap(var);
                    // Jinja2's Undefined iterates as empty and has len(), so it is iterable and a sequence
                    return v == null
                            || v instanceof String
                            || v instanceof Map
                            || v instanceof Iterable
                            || v instanceof Object[];
                }
            });
        }
        t.add(new PyTest("none") {
            @Override
            public boolean evaluate(Object var, JinjavaInterpreter interpreter, Object... args) {
                return var == PyNone.INSTANCE;
            }
        });
        t.add(new PyTest("number") {
            @Override
            public boolean evaluate(Object var, JinjavaInterpreter interpreter, Object... args) {
                return isNumber(unwrap(var));
            }
        });
        return t;
    }
}
