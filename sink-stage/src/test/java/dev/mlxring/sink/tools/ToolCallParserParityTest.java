package dev.mlxring.sink.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import dev.mlxring.pipeline.TokenDecoder;
import dev.mlxring.pipeline.ToolCall;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java tool-call parsers and parser inference against mlx-lm's own
 * ({@code scripts/oracle/tool_parse_oracle.py}): the same calls (name, arguments compared as
 * tagged canonical JSON so that int vs float, float bits, key order and big ints all count, id),
 * or an exception where Python raises.
 */
class ToolCallParserParityTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    @TempDir
    Path work;

    private record Case(String type, String text, List<Map<String, Object>> tools) {}

    private static Case c(String type, String text) {
        return new Case(type, text, null);
    }

    private static Case c(String type, String text, List<Map<String, Object>> tools) {
        return new Case(type, text, tools);
    }

    // -----------------------------------------------------------------------------------------
    // json_tools

    @Test
    void jsonTools() {
        String t = "json_tools";
        List<Case> cases = List.of(
                c(t, "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}"),
                c(t, "\n  {\"name\": \"f\",\n \"arguments\": {\"a\": 1}}\n\n"),
                c(t, "[{\"name\":\"a\",\"arguments\":{}},{\"name\":\"b\",\"arguments\":{\"x\":[1,2]}}]"),
                c(t, "{\"name\":\"f\",\"arguments\":{\"o\":{\"p\":[{\"q\":null}],\"r\":true,\"s\":false},\"e\":[]}}"),
                c(
                        t,
                        "{\"name\":\"f\",\"arguments\":{\"t\":\"h\u00e9llo \uD83D\uDE00 \\u00e9 \\ud83d\\ude00 \\ud800 x \\uDC00\\u0041\"}}"),
                c(
                        t,
                        "{\"name\":\"f\",\"arguments\":{\"i\":1,\"f\":1.5,\"e\":1e3,\"E\":-2.5E-3,\"big\":123456789012345678901234567890,"
                                + "\"neg\":-0,\"negf\":-0.0,\"l\":9007199254740993,\"huge\":1e400,\"tiny\":5e-324,\"m\":2147483648,"
                                + "\"x\":0.1,\"y\":9223372036854775808}}"),
                c(t, "{\"name\":\"f\",\"arguments\":{\"a\":NaN,\"b\":Infinity,\"c\":-Infinity}}"),
                c(t, "{\"name\":\"f\",\"arguments\":{\"a\":1,\"b\":2,\"a\":3}}"),
                c(t, "{\"name\":\"f\",\"arguments\":{},\"id\":\"call_1\"}"),
                c(t, "{\"name\":\"f\",\"arguments\":{},\"id\":\"\"}"),
                c(t, "{\"name\":\"f\",\"arguments\":\"{\\\"a\\\": 1}\"}"),
                c(t, "{\"name\":\"f\",\"arguments\":{\"s\":\"a\\\"b\\/c\\b\\f\\n\\r\\t\\\\\"}}"),
                c(t, "\u00a0\u2028{\"name\":\"f\",\"arguments\":{}}\u3000\u0085"),
                // errors
                c(t, "{\"name\": \"f\", \"arguments\": {\"a\": 1"),
                c(t, "{\"name\": 'f', \"arguments\": {}}"),
                c(t, "{\"name\": \"f\", \"arguments\": {\"a\": 1,}}"),
                c(t, "{\"name\":\"f\",\"arguments\":{}} {\"x\":1}"),
                c(t, "\uFEFF{\"name\":\"f\",\"arguments\":{}}"),
                c(t, "{\"name\":\"f\",\"arguments\":{\"a\":\"x\ty\"}}"),
                c(t, "{\"name\":\"f\",\"arguments\":{\"a\":01}}"),
                c(t, "{\"name\":\"f\",\"arguments\":{\"a\":1.}}"),
                c(t, "{\"name\":\"f\",\"arguments\":{\"a\":\"\\x41\"}}"),
                c(t, "{\"name\":\"f\",\"arguments\":{\"a\":\"\\u12\"}}"),
                c(t, "{\"name\":\"f\",\"arguments\":{\"a\":nan}}"),
                c(t, ""),
                c(t, "   "),
                c(t, "{\"name\":\"f\",\"arguments\":{\"a\":" + "7".repeat(4301) + "}}"),
                c(t, "{\"name\":\"f\",\"arguments\":{\"a\":" + "7".repeat(4300) + "}}"),
                // not a call object: mlx_lm.server would crash; the port rejects it
                c(t, "\"just a string\""),
                c(t, "{\"name\":\"f\"}"),
                c(t, "[{\"name\":\"f\",\"arguments\":{}}, 5]"));
        check(cases);
    }

    // -----------------------------------------------------------------------------------------
    // mistral

    @Test
    void mistral() {
        String t = "mistral";
        List<Case> cases = List.of(
                c(t, "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]"),
                c(t, "[{\"name\":\"f\",\"arguments\":\"{\\\"a\\\": 1, \\\"b\\\": [1, 2.5]}\"}]"),
                c(t, "[{\"name\":\"f\",\"arguments\":{},\"id\":\"abc123XYZ\"}]"),
                c(t, "[{\"name\":\"f\",\"arguments\":{},\"id\":\"\"}]"),
                c(t, "[{\"name\":\"f\",\"arguments\":{},\"id\":5}]"),
                c(
                        t,
                        "[{\"name\":\"a\",\"arguments\":{\"x\":1}}, {\"name\":\"b\",\"arguments\":{\"y\":{\"z\":[null,true]}}}]"),
                c(t, "[{\"name\":\"f\"}]"),
                c(t, " \n[{\"name\":\"f\",\"arguments\":{}}]\n "),
                c(t, "get_weather[ARGS]{\"city\": \"Paris\"}"),
                c(t, "a[ARGS]{\"x\":1}b-c[ARGS] {\"y\":[1,2.5]}"),
                c(t, "  f \u00a0[ARGS]\n {\"a\":1}  trailing text"),
                c(t, "wetter_pr\u00fcfen[ARGS]{\"stadt\":\"Z\u00fcrich \uD83C\uDFD4\"}"),
                c(t, "f[ARGS]{\"a\":1e3,\"b\":NaN,\"c\":123456789012345678901234567890,\"d\":-1.5E+2,\"e\":1,\"e\":2}"),
                c(t, "f[ARGS][1, 2]"),
                c(t, "f[ARGS]1.5xyz"),
                c(t, "f[ARGS]\"s\" g[ARGS]null"),
                // errors
                c(t, "f[ARGS]{\"x\": 1"),
                c(t, "f[ARGS]{\"a\":1}g[ARGS]"),
                c(t, "hello"),
                c(t, "[{\"arguments\":{}}]"),
                c(t, "[1]"),
                c(t, "[{\"name\":\"f\",\"arguments\":\"{not json\"}]"),
                c(t, "[{\"name\":\"f\",\"arguments\":[1]}]"),
                c(t, "[]"),
                c(t, "{\"name\":\"f\",\"arguments\":{}}"),
                c(t, "[{\"name\":\"f\",\"arguments\":{}}"),
                c(t, ""));
        check(cases);
    }

    // -----------------------------------------------------------------------------------------
    // qwen3_coder

    private static final String QWEN_TOOLS = """
            [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
              "s": {"type": "string"}, "e": {"type": "enum"}, "i": {"type": "integer"}, "u": {"type": "uint32"},
              "n": {"type": "number"}, "fl": {"type": "float"}, "b": {"type": "boolean"}, "o": {"type": "object"},
              "a": {"type": "array"}, "d": {"type": "dict"}, "l": {"type": "list[int]"}, "any": {"type": "any"},
              "nt": {"description": "no type"}, "empty": {}, "ty": {"type": ["string", "null"]},
              "T": {"type": " INTEGER "}, "nu": {"type": null}}}}},
             {"type": "function", "function": {"name": "g"}},
             {"type": "function", "function": {"name": "h", "parameters": {"type": "object"}}}]
            """;

    private static String qc(String function, String... params) {
        StringBuilder sb = new StringBuilder("\n<function=" + function + ">\n");
        for (int i = 0; i < params.length; i += 2) {
            sb.append("<parameter=")
                    .append(params[i])
                    .append(">\n")
                    .append(params[i + 1])
                    .append("\n</parameter>\n");
        }
        return sb.append("</function>\n").toString();
    }

    @Test
    void qwen3Coder() {
        String t = "qwen3_coder";
        List<Map<String, Object>> tools = tools(QWEN_TOOLS);
        List<Case> cases = new ArrayList<>();
        // strings, enum, null, untyped, empty schema entry
        cases.add(c(t, qc("f", "s", "hello world", "e", "A", "empty", "{\"x\": 1}", "nt", "{\"x\": [1, 2]}"), tools));
        cases.add(c(t, qc("f", "s", "NULL", "i", "null", "nt", "5", "nt", "[1, \"two\"]"), tools));
        cases.add(c(t, qc("f", "nt", "{bad", "nt", "\"str\"", "nt", "{\"a\": NaN}"), tools));
        // integers
        cases.add(c(t, qc("f", "i", "42", "u", " 7 ", "T", "1e3", "i", "-0", "i", "1_000"), tools));
        cases.add(c(t, qc("f", "i", "\u0663\u0664", "u", "1e20", "i", "\u20035\u3000", "i", "+12.0"), tools));
        cases.add(c(t, qc("f", "i", "1.5"), tools));
        cases.add(c(t, qc("f", "i", "abc"), tools));
        cases.add(c(t, qc("f", "i", "nan"), tools));
        cases.add(c(t, qc("f", "i", "inf"), tools));
        cases.add(c(t, qc("f", "i", "1__0"), tools));
        cases.add(c(t, qc("f", "i", "0x10"), tools));
        // numbers
        cases.add(c(
                t,
                qc(
                        "f", "n", "1.5", "fl", "2.0", "n", "1e3", "n", "-0.0", "n", "1e20", "fl", " 3.25 ", "n", ".5",
                        "n", "5.", "n", "1E-5", "n", "0.1"),
                tools));
        cases.add(c(t, qc("f", "n", "NaN"), tools));
        cases.add(c(t, qc("f", "n", "-Infinity"), tools));
        cases.add(c(t, qc("f", "n", "1,5"), tools));
        // booleans
        cases.add(c(t, qc("f", "b", "True", "b", "false", "b", "yes", "b", "TRUE"), tools));
        // objects / arrays / dict / list: json.loads(strict=False), then literal_eval
        cases.add(c(
                t,
                qc(
                        "f",
                        "o",
                        "{\"a\": [1, 2], \"b\": {\"c\": null}}",
                        "a",
                        "[1, 2.5, \"x\", true]",
                        "o",
                        "{\"t\": \"raw\ttab\nnewline\"}"),
                tools));
        cases.add(c(
                t,
                qc(
                        "f",
                        "o",
                        "{'a': 1, 'b': (1, 2), 'c': None, 'd': True}",
                        "l",
                        "(1, 2)",
                        "d",
                        "{'k': -3.5}",
                        "a",
                        "not json",
                        "o",
                        "{\"a\": Infinity}"),
                tools));
        // any other type: literal_eval or the raw string
        cases.add(c(
                t,
                qc(
                        "f",
                        "any",
                        "[1, 'two', 3.0]",
                        "any",
                        "hello",
                        "any",
                        "-5",
                        "any",
                        "0x1F",
                        "any",
                        "1, 2",
                        "any",
                        "'''tri\nple'''",
                        "any",
                        "'\\N{DEGREE SIGN}\\t\\x41\\101\\u00e9'",
                        "any",
                        "r'\\d+'",
                        "any",
                        "true",
                        "any",
                        "None",
                        "any",
                        "1_000.5",
                        "any",
                        "'a' \"b\"",
                        "any",
                        "  (1,)",
                        "any",
                        "()",
                        "any",
                        "{}",
                        "any",
                        "--1",
                        "any",
                        "-(1)",
                        "any",
                        "007",
                        "any",
                        "0o17",
                        "any",
                        "0b101",
                        "any",
                        "1e400"),
                tools));
        cases.add(c(t, qc("f", "ty", "abc", "ty", "12", "nu", "[1]", "nu", "x y"), tools));
        // unknown function / no parameters / parameters without properties / no tools
        cases.add(c(t, qc("zzz", "i", "1", "b", "true"), tools));
        cases.add(c(t, qc("g", "i", "1"), tools));
        cases.add(c(t, qc("h", "i", "1"), tools));
        cases.add(c(t, qc("f", "i", "1", "n", "2.5"), null));
        // layout: value newlines, odd parameter headers, several functions, unicode
        cases.add(c(
                t,
                "<function=f>\n<parameter=s>\n\nline1\nline2\n\n</parameter>\n<parameter= s2 >x</parameter></function>",
                tools));
        cases.add(c(
                t,
                "<function=f><parameter=s>a</parameter></function>\n<function=g><parameter=x>b</parameter></function>",
                tools));
        cases.add(c(t, qc("wetter_pr\u00fcfen", "stadt", "Z\u00fcrich \uD83D\uDE00"), tools));
        cases.add(c(t, "<function=f>\n<parameter=>x</parameter>\n<parameter=s>y</parameter>\n</function>", tools));
        // errors
        cases.add(c(t, "no function here", tools));
        cases.add(c(t, "<function=f><parameter=s>x</parameter>", tools));
        cases.add(c(t, "<function=f></function> trailing", tools));
        cases.add(c(t, "<function=></function>", tools));
        check(cases);
    }

    // -----------------------------------------------------------------------------------------
    // pythonic

    @Test
    void pythonic() {
        String t = "pythonic";
        List<Case> cases = List.of(
                c(t, "[get_weather(city=\"Paris\")]"),
                c(t, "[a(x=1), b.c(y=\"two\", z=[1, 2])]"),
                c(t, "[f(a=true, b=null, c={\"k\": false}, d=[true, None, False])]"),
                c(t, "[f(a={\"x\": (1, 2), \"y\": [{\"z\": -3.5}]}, b=())]"),
                c(
                        t,
                        "[f(i=1, fl=1.5, e=1e3, big=123456789012345678901234567890, neg=-7, h=0xff, u=1_000, inf=1e400, "
                                + "pos=+2, z=-0.0, p=(-1))]"),
                c(
                        t,
                        "[f(s=\"h\u00e9llo \uD83D\uDE00\", t='\\u00e9\\N{DEGREE SIGN}\\x41', r=r'\\d+', q=\"\"\"tri\nple\"\"\")]"),
                c(t, "[pr\u00fcfe(ort=\"Z\u00fcrich\")]"),
                c(t, "\n  [ f( a = 1 ,\n b = \"x\" ,) ,\n ]  \n"),
                c(t, "Sure! [f(a=1)] done"),
                c(t, "[f(a=1  # comment\n, b='a' 'b')]"),
                c(t, "[f()]"),
                c(t, "[f(x=1, x=2)]"),
                c(t, "[pkg.mod.fn(a=1)]"),
                c(t, "[f(a='it\\'s', b=\"\\\"q\\\"\")]"),
                // regex fallback
                c(t, "[f(a=hello world, b=\"x\")]"),
                c(t, "[f(a=\"123\", b='4.5', c=[1, 2)]"),
                c(t, "[f(1, a=2)]"),
                c(t, "[f(**a)]"),
                c(t, "[f(a=-True)]"),
                c(t, "[f(a=x + 1, b=  spaced , c=None)]"),
                c(t, "[f(a=1)][0]"),
                c(t, "[f(a=1), 2]"),
                c(t, "[f(a=undefined_name)]"),
                c(t, "[f(a=1)(b=2)]"),
                c(t, "[f(a=\"x\", b=2)] [g(c=1)]"),
                c(t, "[True(a=1)]"),
                c(t, "[f(class=1)]"),
                c(t, "[my.tool(path='/tmp/a,b', n=3)]"),
                // errors
                c(t, "just text"),
                c(t, "[]"),
                c(t, "[f(a=1"),
                c(t, "f(a=1)"),
                c(t, ""));
        check(cases);
    }

    // -----------------------------------------------------------------------------------------
    // Documented gaps: Python produces a value json.dumps cannot serialise; the port keeps the string.

    @Test
    void gapsAreTheDocumentedOnes() {
        String t = "qwen3_coder";
        List<Map<String, Object>> tools = tools(QWEN_TOOLS);
        List<Case> cases = List.of(
                c(t, qc("f", "any", "{1, 2}"), tools),
                c(t, qc("f", "any", "b'x'"), tools),
                c(t, qc("f", "any", "1+2j"), tools),
                c(t, qc("f", "any", "{1: 'a'}"), tools),
                c(t, qc("f", "any", "..."), tools),
                c("pythonic", "[f(any=b\"x\")] [g(c=1)]"),
                c("pythonic", "[f(any=1j)] x"));
        List<JsonNode> expected = oracle(cases);
        for (int i = 0; i < cases.size(); i++) {
            String where = "case " + i + " " + cases.get(i).text();
            assertTrue(
                    expected.get(i).toString().contains("\"other\"")
                            || expected.get(i).toString().contains("\"dict\":[[{\"int\""),
                    where + ": " + expected.get(i));
            ToolCall call = ToolCallParsers.forType(cases.get(i).type())
                    .orElseThrow()
                    .parse(cases.get(i).text(), tools)
                    .getFirst();
            assertEquals(String.class, ((Map<?, ?>) call.arguments()).get("any").getClass(), where);
        }
    }

    @Test
    void numbersTakeJacksonsJavaTypes() {
        String text = "{\"name\":\"f\",\"arguments\":{\"a\":1,\"b\":2147483648,\"c\":9223372036854775808,\"d\":1.5,"
                + "\"e\":-2147483648,\"f\":1e3}}";
        Map<?, ?> args = (Map<?, ?>)
                new JsonToolsParser().parse(text, List.of()).getFirst().arguments();
        assertEquals(Integer.class, args.get("a").getClass());
        assertEquals(Long.class, args.get("b").getClass());
        assertEquals(BigInteger.class, args.get("c").getClass());
        assertEquals(Double.class, args.get("d").getClass());
        assertEquals(Integer.class, args.get("e").getClass());
        assertEquals(1000.0, args.get("f"));
        assertEquals(List.of("a", "b", "c", "d", "e", "f"), List.copyOf(args.keySet()));
        assertEquals("", new MistralParser().callEnd());
    }

    // -----------------------------------------------------------------------------------------
    // Inference

    private record StubVocab(Set<String> tokens) implements TokenDecoder {
        @Override
        public int vocabSize() {
            return tokens.size();
        }

        @Override
        public String tokenString(int id) {
            throw new UnsupportedOperationException();
        }

        @Override
        public OptionalInt tokenId(String token) {
            return tokens.contains(token) ? OptionalInt.of(0) : OptionalInt.empty();
        }

        @Override
        public String decode(int[] ids, int from, int to) {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean cleanUpTokenizationSpaces() {
            return false;
        }

        @Override
        public Object decoderConfig() {
            return null;
        }
    }

    @Test
    void inferenceMatchesMlxLm() throws IOException {
        List<String> templates = new ArrayList<>();
        List<List<String>> vocabs = new ArrayList<>();
        Map<String, String> realExpected = new LinkedHashMap<>();
        Path dir = ProjectHome.get().resolve("prep-stage/src/test/resources/templates");
        List<Path> configs;
        try (var s = Files.list(dir)) {
            configs = s.filter(p -> Files.isRegularFile(p.resolve("tokenizer_config.json")))
                    .sorted()
                    .toList();
        }
        assertTrue(configs.size() >= 7, "vendored templates: " + configs);
        for (Path p : configs) {
            String name = p.getFileName().toString();
            templates.add(JSON.readTree(p.resolve("tokenizer_config.json").toFile())
                    .get("chat_template")
                    .asText());
            vocabs.add(List.of());
            realExpected.put(
                    name,
                    switch (name) {
                        case "qwen3" -> "json_tools";
                        case "mistral_nemo", "mistral_small3_2" -> "mistral";
                        default -> null;
                    });
        }
        List<String> xtml = List.of("<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>");
        List<String> lfm = List.of("<|tool_call_start|>", "<|tool_call_end|>");
        Object[][] synthetic = {
            {"{{ '<minimax:tool_call>' }}", List.of()},
            {"<|tool_call> x <tool_call|>", List.of()},
            {"<|tool_call> only", List.of()},
            {"<start_function_call>", List.of()},
            {"<longcat_tool_call>", List.of()},
            {"<arg_key>k</arg_key> [TOOL_CALLS]", List.of()},
            {"<|tool_list_start|>", List.of()},
            {"<|tool_call_start|>", List.of()},
            {"<tool_call>\\n<function=", List.of()},
            {"<tool_call>\n<function=", List.of()},
            {"<tool_call> <function=", List.of()},
            {"<|tool_calls_section_begin|>", List.of()},
            {"<function name=\"x\"> <param name=\"y\">", List.of()},
            {"<function name=\"x\">", List.of()},
            {"[TOOL_CALLS] <tool_call> tool_call.name", List.of()},
            {"<atem:function_calls>", List.of()},
            {"<tool_call>{{ tool_call.name }}</tool_call>", List.of()},
            {"<tool_call> only", List.of()},
            {"tool_call.name only", List.of()},
            {"plain template", List.of()},
            {"", List.of()},
            {null, List.of()},
            {null, xtml},
            {"plain", xtml},
            {"plain", xtml.subList(0, 3)},
            {"plain", lfm},
            {"plain", lfm.subList(0, 1)},
            {null, lfm},
            {"[TOOL_CALLS]", xtml},
            {"plain", concat(xtml, lfm)},
        };
        for (Object[] s : synthetic) {
            templates.add((String) s[0]);
            @SuppressWarnings("unchecked")
            List<String> v = (List<String>) s[1];
            vocabs.add(v);
        }
        Map<String, Object> spec = new LinkedHashMap<>();
        spec.put("templates", templates);
        spec.put("vocab_tokens", vocabs);
        JsonNode results = run(List.of("--infer"), spec).get("results");
        assertEquals(templates.size(), results.size());
        for (int i = 0; i < templates.size(); i++) {
            String expected = results.get(i).isNull() ? null : results.get(i).asText();
            String got = ToolCallParsers.inferType(templates.get(i), new StubVocab(Set.copyOf(vocabs.get(i))))
                    .orElse(null);
            String label = i < configs.size()
                    ? configs.get(i).getFileName().toString()
                    : "synthetic " + (i - configs.size()) + " " + templates.get(i) + " " + vocabs.get(i);
            assertEquals(expected, got, label);
            if (i < configs.size()) {
                assertEquals(realExpected.get(label), expected, "mlx-lm's inference for " + label);
            }
            var parser = ToolCallParsers.infer(templates.get(i), new StubVocab(Set.copyOf(vocabs.get(i))));
            boolean implemented = expected != null
                    && Set.of("json_tools", "mistral", "qwen3_coder", "pythonic")
                            .contains(expected);
            assertEquals(implemented, parser.isPresent(), label);
            parser.ifPresent(p -> assertEquals(expected, p.type()));
        }
        assertEquals(
                "qwen3_coder",
                ToolCallParsers.resolveType("qwen3_coder", "[TOOL_CALLS]", null).orElseThrow());
        assertEquals(
                "mistral",
                ToolCallParsers.resolveType(null, "[TOOL_CALLS]", null).orElseThrow());
        assertTrue(ToolCallParsers.forType("kimi_k2").isEmpty());
    }

    private static List<String> concat(List<String> a, List<String> b) {
        List<String> out = new ArrayList<>(a);
        out.addAll(b);
        return out;
    }

    // -----------------------------------------------------------------------------------------
    // Comparison

    private void check(List<Case> cases) {
        check(cases, false);
    }

    /** Returns how many cases were compared; {@code skipGaps}: cases where Python produced a non-JSON value are skipped. */
    private int check(List<Case> cases, boolean skipGaps) {
        List<JsonNode> expected = oracle(cases);
        int compared = 0;
        int pyErrors = 0;
        List<String> failures = new ArrayList<>();
        for (int i = 0; i < cases.size(); i++) {
            Case cs = cases.get(i);
            JsonNode exp = expected.get(i);
            ToolCallParser parser = ToolCallParsers.forType(cs.type()).orElseThrow();
            String where = "case " + i + " " + JSON.valueToTree(cs.text());
            if (exp.has("calls")) {
                assertEquals(exp.get("markers").get(0).asText(), parser.callStart(), "tool_call_start");
                assertEquals(exp.get("markers").get(1).asText(), parser.callEnd(), "tool_call_end");
            }
            if (skipGaps && hasGap(exp)) {
                continue;
            }
            boolean pythonFails = exp.has("error") || !serverReadable(exp.get("calls"));
            pyErrors += pythonFails ? 1 : 0;
            List<ToolCall> got;
            try {
                got = parser.parse(cs.text(), cs.tools() == null ? List.of() : cs.tools());
            } catch (IllegalArgumentException e) {
                if (!pythonFails) {
                    failures.add(where + ": Java threw " + e.getMessage() + ", Python gave " + exp);
                }
                compared++;
                continue;
            }
            if (pythonFails) {
                failures.add(where + ": Java gave " + tagCalls(got) + ", Python " + exp);
                continue;
            }
            JsonNode want = expectedCalls(exp.get("calls"));
            JsonNode have = tagCalls(got);
            if (!want.equals(have)) {
                failures.add(where + ":\n  python " + want + "\n  java   " + have);
            }
            compared++;
        }
        if (!failures.isEmpty()) {
            fail(failures.size() + " of " + cases.size() + " differ:\n"
                    + String.join("\n", failures.subList(0, Math.min(40, failures.size()))));
        }
        if (!skipGaps) {
            assertEquals(cases.size(), compared);
        }
        System.out.printf(
                "%s: %d cases, %d compared (%d raise in Python), %d skipped as documented gaps%n",
                cases.getFirst().type(), cases.size(), compared, pyErrors, cases.size() - compared);
        // Neither side may be trivially all errors or all calls.
        assertTrue(pyErrors > 0 && pyErrors < compared, pyErrors + " Python errors in " + compared + " cases");
        return compared;
    }

    // -----------------------------------------------------------------------------------------
    // Random fragments: literal_eval / float() / json.loads / the pythonic parse on near-miss text.

    private static final String[] FRAGMENTS = {
        "1",
        "0",
        "7",
        "-",
        "+",
        ".",
        "e",
        "E",
        "_",
        "x",
        "j",
        "'",
        "\"",
        "\\",
        "n",
        "u",
        "N{DEGREE SIGN}",
        "[",
        "]",
        "(",
        ")",
        "{",
        "}",
        ":",
        ",",
        " ",
        "\n",
        "\t",
        "#",
        "True",
        "None",
        "true",
        "null",
        "NaN",
        "Infinity",
        "r",
        "b",
        "f",
        "\"\"\"",
        "\u00e9",
        "\uD83D\uDE00",
        "\u00a0",
        "0x",
        "0o",
        "a",
        "=",
        "g(",
        "\r",
        "inf",
        "\u0663",
        "1e5",
        "2.5",
        "\u2028",
        "\\u00e9",
        "\\x4",
        "/",
        "\f",
        "\\\n",
        "1_0",
        "0b1",
        "*",
        "'''"
    };

    private static String fuzz(Random rnd) {
        StringBuilder sb = new StringBuilder();
        int n = 1 + rnd.nextInt(10);
        for (int i = 0; i < n; i++) {
            sb.append(FRAGMENTS[rnd.nextInt(FRAGMENTS.length)]);
        }
        return sb.toString();
    }

    @Test
    void randomFragments() {
        Random rnd = new Random(20261129);
        List<Map<String, Object>> tools = tools(QWEN_TOOLS);
        List<Case> cases = new ArrayList<>();
        String[] params = {"any", "o", "i", "n", "nt", "b"};
        for (int k = 0; k < 1500; k++) {
            String v = fuzz(rnd);
            switch (k % 5) {
                case 0, 1 -> cases.add(c("qwen3_coder", qc("f", params[rnd.nextInt(params.length)], v), tools));
                case 2 -> cases.add(c("json_tools", "{\"name\": \"f\", \"arguments\": {\"a\": " + v + "}}"));
                case 3 -> cases.add(c("pythonic", "[f(a=" + v + ")]"));
                default ->
                    cases.add(c(
                            "mistral",
                            rnd.nextBoolean() ? "f[ARGS]" + v : "[{\"name\": \"f\", \"arguments\": " + v + "}]"));
            }
        }
        int compared = check(cases, true);
        assertTrue(compared > 1400, "compared " + compared);
    }

    private static final String[] NUMBERS = {
        "0",
        "1",
        "-7",
        "42",
        "1.5",
        "-0.0",
        "1e3",
        "2.5E-3",
        "1e400",
        "0.1",
        "123456789012345678901234567890",
        "9223372036854775808",
        "2147483648",
        "5e-324",
        "1_000",
        "0x1F",
        "0o17",
        "0b101",
        ".5",
        "5.",
        "007",
        "00",
        "1E+05",
        "NaN",
        "Infinity",
        "-Infinity",
        "+3",
        "- 4"
    };
    private static final String[] STRINGS = {
        "\"plain\"",
        "'single'",
        "\"esc\\n\\t\\\\\"",
        "\"\\u00e9\\ud83d\\ude00\"",
        "\"h\u00e9llo \uD83D\uDE00\"",
        "'\\x41\\101\\N{DEGREE SIGN}'",
        "r'\\d+'",
        "\"\"\"tri\nple\"\"\"",
        "''",
        "\"\"",
        "u'u'",
        "'a' 'b'",
        "\"\\/\"",
        "\"\\ud800\"",
        "'it\\'s'",
        "\"tab\there\"",
        "\"\\q\""
    };
    private static final String[] CONSTS = {"True", "False", "None", "true", "false", "null"};

    private static String literal(Random rnd, int depth) {
        int kind = depth > 2 ? rnd.nextInt(3) : rnd.nextInt(7);
        switch (kind) {
            case 0:
                return NUMBERS[rnd.nextInt(NUMBERS.length)];
            case 1:
                return STRINGS[rnd.nextInt(STRINGS.length)];
            case 2:
                return CONSTS[rnd.nextInt(CONSTS.length)];
            case 3:
            case 4: {
                StringBuilder sb = new StringBuilder(kind == 3 ? "[" : "(");
                int n = rnd.nextInt(4);
                for (int i = 0; i < n; i++) {
                    sb.append(i == 0 ? "" : rnd.nextBoolean() ? ", " : ",\n ").append(literal(rnd, depth + 1));
                }
                if (rnd.nextInt(4) == 0 || (kind == 4 && n == 1)) {
                    sb.append(',');
                }
                return sb.append(kind == 3 ? "]" : ")").toString();
            }
            default: {
                StringBuilder sb = new StringBuilder("{");
                int n = rnd.nextInt(4);
                for (int i = 0; i < n; i++) {
                    String key = rnd.nextInt(8) == 0 ? "\"k\"" : rnd.nextBoolean() ? "\"k" + i + "\"" : "'k" + i + "'";
                    sb.append(i == 0 ? "" : ", ")
                            .append(key)
                            .append(rnd.nextBoolean() ? ": " : ":")
                            .append(literal(rnd, depth + 1));
                }
                return sb.append('}').toString();
            }
        }
    }

    private static String mutate(Random rnd, String s) {
        if (s.isEmpty() || rnd.nextInt(3) != 0) {
            return s;
        }
        int at = rnd.nextInt(s.length());
        return rnd.nextBoolean()
                ? s.substring(0, at) + s.substring(at + 1)
                : s.substring(0, at) + FRAGMENTS[rnd.nextInt(FRAGMENTS.length)] + s.substring(at);
    }

    @Test
    void randomLiterals() {
        Random rnd = new Random(4242);
        List<Map<String, Object>> tools = tools(QWEN_TOOLS);
        List<Case> cases = new ArrayList<>();
        String[] params = {"any", "o", "a", "l", "nt", "i", "n"};
        for (int k = 0; k < 2000; k++) {
            String v = mutate(rnd, literal(rnd, 0));
            switch (k % 4) {
                case 0 -> cases.add(c("qwen3_coder", qc("f", params[rnd.nextInt(params.length)], v), tools));
                case 1 -> cases.add(c("json_tools", "{\"name\": \"f\", \"arguments\": {\"a\": " + v + "}}"));
                case 2 -> cases.add(c("pythonic", "[f(a=" + v + ", b=" + mutate(rnd, literal(rnd, 1)) + ")]"));
                default ->
                    cases.add(c(
                            "mistral",
                            rnd.nextBoolean()
                                    ? "f[ARGS]" + v
                                    : "[{\"name\": \"f\", \"arguments\": {\"a\": " + v + "}}]"));
            }
        }
        int compared = check(cases, true);
        assertTrue(compared > 1800, "compared " + compared);
    }

    /** A value outside JSON (set, bytes, complex: {"other": ...}) or a dict key that is not a str. */
    private static boolean hasGap(JsonNode n) {
        if (n.isObject() && n.has("other")) {
            return true;
        }
        if (n.isObject() && n.has("dict")) {
            for (JsonNode pair : n.get("dict")) {
                if (!pair.get(0).isTextual()) {
                    return true;
                }
            }
        }
        for (JsonNode child : n) {
            if (hasGap(child)) {
                return true;
            }
        }
        return false;
    }

    /** Whether mlx_lm.server's ToolCallFormatter could format every call (a dict with "arguments"). */
    private static boolean serverReadable(JsonNode calls) {
        for (JsonNode call : calls) {
            if (!call.has("arguments")) {
                return false; // not a dict, or KeyError on tc["arguments"]
            }
            if (call.has("name") && !call.get("name").isTextual()) {
                return false;
            }
        }
        return true;
    }

    /** The oracle's calls as the ToolCall record holds them: id only when a non-empty string. */
    private static JsonNode expectedCalls(JsonNode calls) {
        ArrayNode out = F.arrayNode();
        for (JsonNode call : calls) {
            ObjectNode o = F.objectNode();
            o.set("name", call.has("name") ? call.get("name") : F.nullNode());
            o.set("arguments", call.get("arguments"));
            JsonNode id = call.get("id");
            o.set("id", id != null && id.isTextual() && !id.asText().isEmpty() ? id : F.nullNode());
            out.add(o);
        }
        return out;
    }

    private static JsonNode tagCalls(List<ToolCall> calls) {
        ArrayNode out = F.arrayNode();
        for (ToolCall call : calls) {
            ObjectNode o = F.objectNode();
            o.set("name", call.name() == null ? F.nullNode() : F.textNode(call.name()));
            o.set("arguments", tag(call.arguments()));
            o.set("id", call.id() == null ? F.nullNode() : F.textNode(call.id()));
            out.add(o);
        }
        return out;
    }

    /** The oracle's tagged form of a plain JSON value. */
    static JsonNode tag(Object v) {
        if (v == null) {
            return F.nullNode();
        }
        if (v instanceof Boolean b) {
            return F.booleanNode(b);
        }
        if (v instanceof String s) {
            return F.textNode(s);
        }
        if (v instanceof Integer || v instanceof Long || v instanceof BigInteger) {
            return F.objectNode().put("int", v.toString());
        }
        if (v instanceof Double d) {
            return F.objectNode().put("float", d.isNaN() ? "nan" : Long.toString(Double.doubleToRawLongBits(d)));
        }
        if (v instanceof List<?> l) {
            ArrayNode a = F.arrayNode();
            l.forEach(x -> a.add(tag(x)));
            return a;
        }
        if (v instanceof Map<?, ?> m) {
            ArrayNode pairs = F.arrayNode();
            m.forEach((k, x) -> pairs.add(F.arrayNode().add(tag(k)).add(tag(x))));
            ObjectNode o = F.objectNode();
            o.set("dict", pairs);
            return o;
        }
        return F.objectNode().put("java", v.getClass().getName() + ": " + v);
    }

    private List<JsonNode> oracle(List<Case> cases) {
        List<Map<String, Object>> spec = new ArrayList<>();
        for (Case cs : cases) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("type", cs.type());
            m.put("text", cs.text());
            m.put("tools", cs.tools());
            spec.add(m);
        }
        JsonNode results = run(List.of(), Map.of("cases", spec)).get("results");
        assertEquals(cases.size(), results.size());
        List<JsonNode> out = new ArrayList<>();
        results.forEach(out::add);
        return out;
    }

    private JsonNode run(List<String> mode, Object spec) {
        try {
            Files.createDirectories(work);
            Path f = Files.createTempFile(work, "spec", ".json");
            JSON.writeValue(f.toFile(), spec);
            List<String> args = new ArrayList<>(mode);
            args.add(f.toString());
            String stdout = PythonScript.run("oracle/tool_parse_oracle.py", 600, args);
            return JSON.readTree(stdout);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static List<Map<String, Object>> tools(String json) {
        try {
            return JSON.readValue(json, new TypeReference<>() {});
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
