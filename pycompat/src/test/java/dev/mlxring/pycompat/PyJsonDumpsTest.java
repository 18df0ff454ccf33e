package dev.mlxring.pycompat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.mlx.PythonScript;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link PyJsonDumps} against Python's own {@code json.dumps(value, ensure_ascii=False, ...)}. */
class PyJsonDumpsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path work;

    @Test
    void matchesPythonJsonDumps() throws Exception {
        List<Object> values = new ArrayList<>();
        // Floats: repr's fixed/exponent boundaries, shortest digits, extremes, specials.
        double[] floats = {
            0.0,
            -0.0,
            0.1,
            0.2 + 0.1,
            1.0,
            -1.5,
            100.0,
            2.5,
            1.0 / 3,
            1e15,
            1e16,
            9999999999999998.0,
            1234567890123456.0,
            12345678901234567.0,
            1e17,
            1e22,
            1e100,
            1.5e300,
            0.001,
            0.0001,
            0.00012345,
            0.00001,
            1.5e-5,
            1e-7,
            5e-324,
            2.2250738585072014e-308,
            Double.MAX_VALUE,
            Double.MIN_NORMAL,
            123.456,
            1e7,
            1e-3,
            4.35,
            0.3,
            2.675,
            1e23,
            8.41e21,
            5e-5,
            123456.789e3,
            Double.NaN,
            Double.POSITIVE_INFINITY,
            Double.NEGATIVE_INFINITY
        };
        for (double d : floats) {
            values.add(d);
            values.add(-d);
        }
        Random rnd = new Random(42);
        for (int i = 0; i < 300; i++) {
            double d = Double.longBitsToDouble(rnd.nextLong());
            values.add(d);
            values.add(rnd.nextDouble() * Math.pow(10, rnd.nextInt(40) - 20));
        }
        for (int i = 0; i < 200; i++) {
            // One significant digit (where Double.toString may pick a closer two-digit form), subnormals.
            values.add(Double.parseDouble((rnd.nextInt(9) + 1) + "e" + (rnd.nextInt(640) - 324)));
            values.add(Double.longBitsToDouble(rnd.nextLong() & 0x000fffffffffffffL) * (rnd.nextBoolean() ? 1 : -1));
        }
        for (int k = 1; k <= 64; k++) {
            values.add(k * Double.MIN_VALUE); // the smallest subnormals, where one or two digits round-trip
        }
        values.add(1.5f);
        // Ints, bools, null.
        values.addAll(List.of(
                0,
                -1,
                42,
                Long.MAX_VALUE,
                Long.MIN_VALUE,
                new BigInteger("123456789012345678901234567890"),
                true,
                false));
        values.add(null);
        // Strings: escapes, controls, non-ASCII kept raw.
        StringBuilder controls = new StringBuilder();
        for (char c = 0; c < 0x20; c++) {
            controls.append(c);
        }
        values.addAll(List.of(
                "",
                "plain",
                "quote \" backslash \\ slash /",
                controls.toString(),
                "\u007f\u0080\u00ff",
                "é 日本語 😀 \u2028\u2029 \ufeff",
                "tab\there\nnew line\r\n",
                "<tool_call>{\"a\": 1}</tool_call>"));
        // Containers: nesting, empties, key order, non-string keys.
        Map<Object, Object> nested = new LinkedHashMap<>();
        nested.put("z", 1);
        nested.put("a", List.of(1, 2.5, "x", List.of(), Map.of()));
        nested.put("m", new LinkedHashMap<>(Map.of("k", Arrays.asList(null, true, false))));
        nested.put("empty_str", "");
        nested.put("ünï", Map.of("deep", List.of(List.of(List.of(1e-9)))));
        values.add(nested);
        values.add(List.of());
        values.add(Map.of());
        Map<Object, Object> keys = new LinkedHashMap<>();
        keys.put(7, "int");
        keys.put(2.5, "float");
        keys.put(true, "bool");
        keys.put(null, "none");
        keys.put(1e20, "big float");
        values.add(keys);
        values.add(Map.of("location", "San Francisco, CA", "unit", "celsius"));

        Map<String, Object> spec =
                Map.of("values", values.stream().map(PyJsonDumpsTest::tag).toList());
        Path f = work.resolve("spec.json");
        Files.writeString(f, JSON.writeValueAsString(spec));
        JsonNode out = JSON.readTree(PythonScript.run("oracle/json_dumps_oracle.py", 120, List.of(f.toString())));
        JsonNode dumps = out.get("dumps");
        assertEquals(values.size(), dumps.size());
        List<String> diffs = new ArrayList<>();
        for (int i = 0; i < values.size(); i++) {
            String ours = PyJsonDumps.dumps(values.get(i));
            String python = dumps.get(i).asText();
            if (!ours.equals(python)) {
                diffs.add(i + ": python " + python + " / ours " + ours);
            }
        }
        assertTrue(diffs.isEmpty(), diffs.size() + " differences:\n" + String.join("\n", diffs));
    }

    @Test
    void rejectsWhatPythonCannotEncode() {
        assertThrows(PyError.class, () -> PyJsonDumps.dumps(new Object()));
        assertThrows(PyError.class, () -> PyJsonDumps.dumps(Map.of(List.of(1), 2)));
        assertThrows(PyError.class, () -> PyJsonDumps.dumps(1, List.of(), null, false)); // indent=[]: TypeError
    }

    @Test
    void indentSeparatorsAndSortKeysAsPythonWritesThem() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("b", Arrays.asList(1, null));
        m.put("a", 1e-05);
        // python3: json.dumps({'b': [1, None], 'a': 1e-05}, indent=2, sort_keys=True)
        assertEquals("{\n  \"a\": 1e-05,\n  \"b\": [\n    1,\n    null\n  ]\n}", PyJsonDumps.dumps(m, 2, null, true));
        m.put("a", "é");
        // python3: json.dumps({'b': [1, None], 'a': 'é'}, separators=(',', ':'), ensure_ascii=False)
        assertEquals("{\"b\":[1,null],\"a\":\"é\"}", PyJsonDumps.dumps(m, null, new String[] {",", ":"}, false));
        // python3: json.dumps([[], {}], indent='\t')
        assertEquals("[\n\t[],\n\t{}\n]", PyJsonDumps.dumps(List.of(List.of(), Map.of()), "\t", null, false));
    }

    /** The oracle's tagged form, which rebuilds the value in Python exactly. */
    private static Object tag(Object v) {
        Map<String, Object> t = new LinkedHashMap<>();
        switch (v) {
            case null -> t.put("t", "null");
            case Boolean b -> {
                t.put("t", "bool");
                t.put("v", b);
            }
            case Integer i -> {
                t.put("t", "int");
                t.put("v", i.toString());
            }
            case Long l -> {
                t.put("t", "int");
                t.put("v", l.toString());
            }
            case BigInteger b -> {
                t.put("t", "int");
                t.put("v", b.toString());
            }
            case Number n -> {
                double d = n.doubleValue();
                t.put("t", "float");
                t.put(
                        "v",
                        Double.isNaN(d)
                                ? "nan"
                                : Double.isInfinite(d) ? (d > 0 ? "inf" : "-inf") : Double.toHexString(d));
            }
            case String s -> {
                t.put("t", "str");
                t.put("v", s);
            }
            case List<?> l -> {
                t.put("t", "list");
                t.put("v", l.stream().map(PyJsonDumpsTest::tag).toList());
            }
            case Map<?, ?> m -> {
                t.put("t", "dict");
                List<Object> entries = new ArrayList<>();
                m.forEach((k, x) -> entries.add(Arrays.asList(tag(k), tag(x))));
                t.put("v", entries);
            }
            default -> throw new IllegalArgumentException(v.getClass().getName());
        }
        return t;
    }
}
