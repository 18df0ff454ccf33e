package dev.mlxring.pycompat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link PyNumbers#floatRepr} against {@code repr(float)} and {@code json.dumps(float)} as python3 printed them. */
class PyNumbersTest {

    /** {value, repr(value), json.dumps(value)}, each pair printed by python3. */
    private static final Object[][] FLOATS = {
        {Double.MIN_VALUE, "5e-324", "5e-324"}, // Double.toString: 4.9E-324
        {1e-323, "1e-323", "1e-323"}, // Double.toString: 9.9E-324
        {1e16, "1e+16", "1e+16"},
        {1e-5, "1e-05", "1e-05"},
        {-0.0, "-0.0", "-0.0"},
        {0.0, "0.0", "0.0"},
        {Double.NaN, "nan", "NaN"},
        {Double.POSITIVE_INFINITY, "inf", "Infinity"},
        {Double.NEGATIVE_INFINITY, "-inf", "-Infinity"},
        {0.0001, "0.0001", "0.0001"},
        {9999999999999998.0, "9999999999999998.0", "9999999999999998.0"},
        {123456789012345678.0, "1.2345678901234568e+17", "1.2345678901234568e+17"},
        {0.1 + 0.2, "0.30000000000000004", "0.30000000000000004"},
        {1.5, "1.5", "1.5"},
        {Double.MIN_NORMAL, "2.2250738585072014e-308", "2.2250738585072014e-308"},
    };

    @Test
    void floatReprAndJsonDumpsWriteWhatPythonWrites() {
        List<String> diffs = new ArrayList<>();
        for (Object[] row : FLOATS) {
            double d = (Double) row[0];
            if (!PyNumbers.floatRepr(d).equals(row[1])) {
                diffs.add("repr: python " + row[1] + " / ours " + PyNumbers.floatRepr(d));
            }
            if (!PyJsonDumps.dumps(d).equals(row[2])) {
                diffs.add("json.dumps: python " + row[2] + " / ours " + PyJsonDumps.dumps(d));
            }
        }
        assertEquals(List.of(), diffs);
    }

    @Test
    void strAndReprOfAFloatAreItsRepr() {
        assertEquals("5e-324", PyStrings.str(Double.MIN_VALUE));
        assertEquals("[1e-05, nan]", PyStrings.repr(List.of(1e-5, Double.NaN)));
    }
}
