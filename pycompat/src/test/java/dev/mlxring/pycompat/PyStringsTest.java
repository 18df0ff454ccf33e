package dev.mlxring.pycompat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code str()}, {@code repr()} and truthiness of plain values, as python3 printed them. */
class PyStringsTest {

    /** A host's None stand-in, as a template engine has one. */
    private enum HostNone implements NoneValue {
        NONE;

        @Override
        public String toString() {
            return "None";
        }
    }

    @Test
    void reprOfJsonValuesIsPythons() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("k", 2.5);
        List<Object> values =
                new ArrayList<>(Arrays.asList(1e-05, null, true, "it's", "a\"b", "tab\t", m, HostNone.NONE));
        // python3: repr([1e-05, None, True, "it's", 'a"b', 'tab\t', {'k': 2.5}, None])
        assertEquals("[1e-05, None, True, \"it's\", 'a\"b', 'tab\\t', {'k': 2.5}, None]", PyStrings.repr(values));
        // python3: str(None), str(1e-05), str("it's")
        assertEquals("None", PyStrings.str(null));
        assertEquals("None", PyStrings.str(HostNone.NONE));
        assertEquals("1e-05", PyStrings.str(1e-05));
        assertEquals("it's", PyStrings.str("it's"));
    }

    @Test
    void truthinessIsPythons() {
        for (Object falsy :
                Arrays.asList(null, HostNone.NONE, false, 0, 0L, 0.0, -0.0, "", List.of(), Map.of(), new Object[0])) {
            assertFalse(PyValues.truthy(falsy), String.valueOf(falsy));
        }
        for (Object truthy : Arrays.asList(true, 1, -1L, Double.NaN, 1e-300, " ", List.of(0), Map.of("", 0))) {
            assertTrue(PyValues.truthy(truthy), String.valueOf(truthy));
        }
        assertEquals("NoneType", PyValues.typeName(HostNone.NONE));
    }

    @Test
    void stripAndSplitUsePythonsWhitespace() {
        // python3: '\x1c a\u2003b\x85'.strip(), .split()
        assertEquals("a\u2003b", PyStrings.strip("\u001c a\u2003b\u0085", null));
        assertEquals(List.of("a", "b"), PyStrings.split("\u001c a\u2003b\u0085", null, -1));
        assertThrows(PyError.class, () -> PyStrings.split("a", "", -1));
    }
}
