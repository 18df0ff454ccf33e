package dev.mlxring.plan.constraint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.constraint.ConstraintTokenizer;
import dev.mlxring.constraint.ConstraintVocabulary;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.pipeline.OutputConstraint;
import dev.mlxring.pipeline.TokenConstraint;
import dev.mlxring.pipeline.ToolCall;
import dev.mlxring.sink.tools.ToolCallParser;
import dev.mlxring.sink.tools.ToolCallParsers;
import dev.mlxring.tokenizer.HfTokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Tool-call grammars over real tokenizers: the default model's, where every marker is plain text,
 * and the same with the markers added as tokens (as Qwen's {@code <tool_call>}, Mistral's
 * {@code [TOOL_CALLS]}). A call in the model's syntax walks through the masks to an accepting end
 * and the sink's own parser reads it back; a wrong name or argument is masked out at its first
 * token; a reasoning block is free before the call.
 *
 * <p>It reads plan-stage's grammars back with sink-stage's parsers, so it lives in {@code
 * ingress}, the composition root (stage modules do not depend on each other).
 */
class ToolCallGrammarTest {
    private static final Path DIR = ProjectHome.get().resolve("models/smollm2-135m-instruct");
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<String> ADDED =
            List.of("<tool_call>", "</tool_call>", "<think>", "</think>", "[TOOL_CALLS]", "[ARGS]");
    private static final String WEATHER = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},"
            + "\"days\":{\"type\":\"integer\",\"minimum\":1}},\"required\":[\"city\",\"days\"],"
            + "\"additionalProperties\":false}";
    private static final String TIME =
            "{\"type\":\"object\",\"properties\":{\"zone\":{\"enum\":[\"UTC\",\"CET\"]}}," + "\"required\":[\"zone\"]}";

    @TempDir
    static Path tmp;

    private static Model plain;
    private static Model special;

    /** One tokenizer with its llguidance view and a compiler. */
    record Model(
            String name,
            HfTokenizer hf,
            ConstraintVocabulary vocabulary,
            ConstraintTokenizer tokenizer,
            ConstraintCompiler compiler) {
        ToolSyntax syntax(String format, boolean thinks) {
            return ToolSyntax.of(
                    format,
                    thinks ? "<think>" : null,
                    thinks ? "</think>" : null,
                    text -> hf.encode(text, false),
                    vocabulary);
        }

        int[] encode(String text) {
            return hf.encode(text, false);
        }

        @Override
        public String toString() {
            return name;
        }
    }

    @BeforeAll
    static void open() throws Exception {
        int vocab = JSON.readTree(DIR.resolve("config.json").toFile())
                .path("vocab_size")
                .intValue();
        plain = model("plain markers", DIR, vocab);
        ObjectNode json =
                (ObjectNode) JSON.readTree(DIR.resolve("tokenizer.json").toFile());
        ArrayNode added = (ArrayNode) json.get("added_tokens");
        for (int i = 0; i < ADDED.size(); i++) {
            added.addObject()
                    .put("id", vocab + i)
                    .put("content", ADDED.get(i))
                    .put("single_word", false)
                    .put("lstrip", false)
                    .put("rstrip", false)
                    .put("normalized", false)
                    .put("special", false);
        }
        Path dir = Files.createDirectories(tmp.resolve("added"));
        JSON.writeValue(dir.resolve("tokenizer.json").toFile(), json);
        Files.copy(DIR.resolve("tokenizer_config.json"), dir.resolve("tokenizer_config.json"));
        special = model("markers as added tokens", dir, vocab + ADDED.size());
    }

    private static Model model(String name, Path dir, int vocab) throws Exception {
        HfTokenizer hf = HfTokenizer.load(dir);
        ConstraintVocabulary v = ConstraintVocabulary.fromTokenizerJson(dir.resolve("tokenizer.json"), vocab);
        ConstraintTokenizer t = ConstraintTokenizer.create(v, hf.eosTokenIds(), text -> hf.encode(text, false));
        return new Model(name, hf, v, t, new ConstraintCompiler(t));
    }

    @AfterAll
    static void close() {
        for (Model m : new Model[] {plain, special}) {
            if (m != null) {
                m.tokenizer().close();
                m.hf().close();
            }
        }
    }

    static Stream<Model> models() {
        return Stream.of(plain, special);
    }

    private static Map<String, Object> tool(String name, String parameters, boolean strict) throws Exception {
        return Map.of(
                "type",
                "function",
                "function",
                Map.of("name", name, "parameters", JSON.readValue(parameters, Map.class), "strict", strict));
    }

    private static List<Map<String, Object>> tools() throws Exception {
        return List.of(tool("get_weather", WEATHER, false), tool("get_time", TIME, false));
    }

    private static boolean allowed(int[] words, int token) {
        return (words[token >>> 5] >>> (token & 31) & 1) != 0;
    }

    /**
     * Feeds {@code text}'s tokens through the constraint: the index of the first token the mask
     * does not allow (which consume then refuses); when all pass, -1 if EOS is allowed at the end
     * (the output may stop there), else the token count.
     */
    private static int walk(Model m, OutputConstraint grammar, String text) throws Exception {
        int[] words = new int[(m.vocabulary().size() + 31) / 32];
        try (TokenConstraint c = m.compiler().compile(grammar)) {
            int[] ids = m.encode(text);
            for (int i = 0; i < ids.length; i++) {
                if (!c.allowedTokens(words) || !allowed(words, ids[i])) {
                    int t = ids[i];
                    assertThrows(IllegalStateException.class, () -> c.consume(t), "the mask and consume agree");
                    return i;
                }
                c.consume(ids[i]);
            }
            assertTrue(c.allowedTokens(words), "something is allowed at the end of " + text);
            return allowed(words, m.hf().eosTokenIds()[0]) ? -1 : ids.length;
        }
    }

    /**
     * The index of the first token where {@code wrong}'s tokens leave {@code right}'s. The wrong
     * texts are chosen so that this token is already wrong (not, say, a space that could still
     * precede a right value).
     */
    private static int divergence(Model m, String right, String wrong) {
        int[] a = m.encode(right);
        int[] b = m.encode(wrong);
        int i = Arrays.mismatch(a, b);
        assertTrue(i >= 0 && i < b.length, "the texts differ within the wrong one");
        return i;
    }

    /** The calls the sink's parser reads from each tool-state segment of {@code text}. */
    private static List<ToolCall> parse(ToolCallParser parser, String text, List<Map<String, Object>> tools) {
        List<ToolCall> calls = new java.util.ArrayList<>();
        int at = text.indexOf(parser.callStart());
        assertTrue(at >= 0, "a call start in " + text);
        while (at >= 0) {
            int from = at + parser.callStart().length();
            int end = parser.callEnd().isEmpty() ? -1 : text.indexOf(parser.callEnd(), from);
            calls.addAll(parser.parse(text.substring(from, end < 0 ? text.length() : end), tools));
            at = end < 0 ? -1 : text.indexOf(parser.callStart(), end);
        }
        return calls;
    }

    private static String jsonCall(String name, String arguments) {
        return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + arguments + "}\n</tool_call>";
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void aForcedJsonToolsCallPassesAndTheSinkParsesItBack(Model m) throws Exception {
        OutputConstraint g = ToolCallGrammar.forTools(
                tools(), ToolChoice.named("get_weather", true), m.syntax("json_tools", false), false);
        assertEquals(OutputConstraint.Kind.LARK, g.kind());
        String text = jsonCall("get_weather", "{\"city\": \"Paris\", \"days\": 3}");
        assertEquals(-1, walk(m, g, text), g.source());
        List<ToolCall> calls = parse(ToolCallParsers.forType("json_tools").orElseThrow(), text, tools());
        assertEquals(List.of(new ToolCall("get_weather", Map.of("city", "Paris", "days", 3), null)), calls);
        String compact =
                "<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\",\"days\":1}}</tool_call>";
        assertEquals(-1, walk(m, g, compact), "json.loads' whitespace is optional");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void anotherFunctionOrBadArgumentsAreMaskedAtTheFirstWrongToken(Model m) throws Exception {
        OutputConstraint g = ToolCallGrammar.forTools(
                tools(), ToolChoice.named("get_weather", true), m.syntax("json_tools", false), false);
        String right = jsonCall("get_weather", "{\"city\": \"Paris\", \"days\": 3}");
        for (String wrong : List.of(
                jsonCall("get_time", "{\"zone\": \"UTC\"}"),
                jsonCall("get_weather", "{\"city\": \"Paris\", \"days\": \"three\"}"),
                jsonCall("get_weather", "{\"city\": \"Paris\", \"days\": 0}"),
                jsonCall("get_weather", "{\"city\": \"Paris\", \"days\": 3, \"x\": 1}"),
                "The weather in Paris is fine.")) {
            assertEquals(divergence(m, right, wrong), walk(m, g, wrong), wrong);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void requiredAcceptsACallOfEachToolAndSeveralCallsOnlyWhenParallel(Model m) throws Exception {
        ToolSyntax syntax = m.syntax("json_tools", false);
        OutputConstraint parallel = ToolCallGrammar.forTools(tools(), ToolChoice.required(true), syntax, false);
        String weather = jsonCall("get_weather", "{\"city\": \"Rome\", \"days\": 2}");
        String time = jsonCall("get_time", "{\"zone\": \"CET\"}");
        assertEquals(-1, walk(m, parallel, weather));
        assertEquals(-1, walk(m, parallel, time));
        assertEquals(-1, walk(m, parallel, weather + "\n" + time));
        assertEquals(
                List.of("get_weather", "get_time"),
                parse(ToolCallParsers.forType("json_tools").orElseThrow(), weather + "\n" + time, tools()).stream()
                        .map(ToolCall::name)
                        .toList());
        assertEquals(
                divergence(m, time, jsonCall("get_time", "{\"zone\": \"PST\"}")),
                walk(m, parallel, jsonCall("get_time", "{\"zone\": \"PST\"}")),
                "the enum is enforced");
        OutputConstraint single = ToolCallGrammar.forTools(tools(), ToolChoice.required(false), syntax, false);
        assertEquals(-1, walk(m, single, weather));
        assertEquals(
                m.encode(weather).length,
                walk(m, single, weather + "\n" + time),
                "nothing but the end may follow the one call");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void aReasoningBlockIsFreeBeforeTheCall(Model m) throws Exception {
        OutputConstraint g =
                ToolCallGrammar.forTools(tools(), ToolChoice.required(true), m.syntax("json_tools", true), false);
        String call = jsonCall("get_time", "{\"zone\": \"UTC\"}");
        String thought = "The user wants the time: {\"zone\"?} <b>tags</b> and </thin are fine.\n";
        assertEquals(-1, walk(m, g, call), "the block is optional");
        assertEquals(-1, walk(m, g, "<think>\n" + thought + "</think>\n\n" + call));
        assertEquals(
                List.of(new ToolCall("get_time", Map.of("zone", "UTC"), null)),
                parse(
                        ToolCallParsers.forType("json_tools").orElseThrow(),
                        "<think>\n" + thought + "</think>\n\n" + call,
                        tools()));
        String early = "<think>\nnow <tool_call>";
        int refused = walk(m, g, early + " {}</think>" + call);
        assertTrue(
                refused >= m.encode("<think>\nnow ").length && refused < m.encode(early).length,
                "a call start inside the block is refused (the sink would leave the block there): " + refused);

        OutputConstraint open =
                ToolCallGrammar.forTools(tools(), ToolChoice.required(true), m.syntax("json_tools", true), true);
        assertEquals(-1, walk(m, open, thought + "</think>\n" + call), "the prompt opened the block");
        assertEquals(m.encode(thought).length, walk(m, open, thought), "the open block must be closed");
        refused = walk(m, open, call);
        assertTrue(
                refused >= 0 && refused < m.encode("<tool_call>").length,
                "a call cannot start inside the open block: " + refused);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void strictToolsUnderAutoLeaveTextFreeAndHoldCallsToTheSchema(Model m) throws Exception {
        List<Map<String, Object>> tools = List.of(tool("get_weather", WEATHER, true), tool("get_time", TIME, false));
        OutputConstraint g =
                ToolCallGrammar.forTools(tools, ToolChoice.auto(true), m.syntax("json_tools", false), false);
        String call = jsonCall("get_weather", "{\"city\": \"Paris\", \"days\": 3}");
        assertEquals(-1, walk(m, g, "It is sunny in Paris < 30 degrees."));
        assertEquals(-1, walk(m, g, "Let me check.\n" + call + "\nDone."));
        assertEquals(-1, walk(m, g, jsonCall("get_time", "{\"anything\": [1, 2]}")), "get_time is not strict");
        String bad = "Let me check.\n" + jsonCall("get_weather", "{\"city\": \"Paris\", \"days\": \"3\"}");
        assertEquals(divergence(m, "Let me check.\n" + call, bad), walk(m, g, bad));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void autoWithoutParallelCallsAllowsTextAndAtMostOneCallOfAnyArguments(Model m) throws Exception {
        OutputConstraint g =
                ToolCallGrammar.forTools(tools(), ToolChoice.auto(false), m.syntax("json_tools", false), false);
        String call = jsonCall("get_time", "{\"anything\": [1, 2]}");
        assertEquals(-1, walk(m, g, "No call needed."));
        assertEquals(-1, walk(m, g, "Checking.\n" + call + "\nDone."), "no tool is strict: any arguments");
        String twice = call + "\n" + call;
        int refused = walk(m, g, twice);
        assertTrue(
                refused >= m.encode(call).length && refused < m.encode(twice).length,
                "a second call is masked out within its start marker: " + refused);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void mistralListAndHeaderCallsPassAndTheSinkParsesThem(Model m) throws Exception {
        OutputConstraint g = ToolCallGrammar.forTools(
                tools(), ToolChoice.named("get_time", true), m.syntax("mistral", false), false);
        ToolCallParser parser = ToolCallParsers.forType("mistral").orElseThrow();
        ToolCall expected = new ToolCall("get_time", Map.of("zone", "CET"), null);
        String list = "[TOOL_CALLS] [{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}]";
        String header = "[TOOL_CALLS]get_time[ARGS]{\"zone\": \"CET\"}";
        for (String text : List.of(list, header)) {
            assertEquals(-1, walk(m, g, text), text + "\n" + g.source());
            assertEquals(List.of(expected), parse(parser, text, tools()));
        }
        assertEquals(-1, walk(m, g, header + "[TOOL_CALLS]get_time[ARGS]{\"zone\": \"UTC\"}"));
        String wrong = "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {}}]";
        assertEquals(divergence(m, list, wrong), walk(m, g, wrong));
        String wrongHeader = "[TOOL_CALLS]get_weather[ARGS]{}";
        assertEquals(divergence(m, header, wrongHeader), walk(m, g, wrongHeader));
    }

    private static String xmlCall(String name, String... keyValues) {
        StringBuilder b = new StringBuilder("<tool_call>\n<function=" + name + ">\n");
        for (int i = 0; i < keyValues.length; i += 2) {
            b.append("<parameter=")
                    .append(keyValues[i])
                    .append(">\n")
                    .append(keyValues[i + 1])
                    .append("\n</parameter>\n");
        }
        return b.append("</function>\n</tool_call>").toString();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void qwen3CoderXmlCallsPassWithRawValuesHeldToTheirTypes(Model m) throws Exception {
        ToolSyntax syntax = m.syntax("qwen3_coder", true);
        OutputConstraint g = ToolCallGrammar.forTools(tools(), ToolChoice.required(true), syntax, false);
        ToolCallParser parser = ToolCallParsers.forType("qwen3_coder").orElseThrow();
        String weather = xmlCall("get_weather", "city", "New York\nNY", "days", "3");
        String time = xmlCall("get_time", "zone", "CET");
        assertEquals(-1, walk(m, g, weather), g.source());
        assertEquals(-1, walk(m, g, "<think>\nWeather first.\n</think>\n\n" + weather + "\n" + time));
        assertEquals(
                List.of(
                        new ToolCall("get_weather", Map.of("city", "New York\nNY", "days", 3), null),
                        new ToolCall("get_time", Map.of("zone", "CET"), null)),
                parse(parser, weather + "\n" + time, tools()));
        for (String wrong : List.of(
                xmlCall("get_weather", "city", "Paris", "days", "three"),
                xmlCall("get_weather", "city", "Paris", "days", "0"),
                xmlCall("get_weather", "city", "Paris"),
                xmlCall("get_time", "zone", "PST"),
                xmlCall("get_date", "zone", "UTC"))) {
            String right = wrong.contains("get_weather") ? xmlCall("get_weather", "city", "Paris", "days", "3") : time;
            assertEquals(divergence(m, right, wrong), walk(m, g, wrong), wrong);
        }
        String early = xmlCall("get_weather", "city", "Paris </tool_call> x", "days", "3");
        int refused = walk(m, g, early);
        assertTrue(
                refused > m.encode(early.substring(0, early.indexOf("Paris"))).length
                        && refused < m.encode(early.substring(0, early.indexOf(" x"))).length,
                "a value cannot end the call early: " + refused);
        List<Map<String, Object>> loose = List.of(tool("get_weather", WEATHER, true), tool("get_time", TIME, false));
        OutputConstraint auto = ToolCallGrammar.forTools(loose, ToolChoice.auto(true), syntax, false);
        assertEquals(-1, walk(m, auto, "No call needed."));
        assertEquals(
                -1, walk(m, auto, "Checking.\n" + xmlCall("get_time", "anything", "goes")), "get_time is not strict");
    }

    @Test
    void qwen3CoderValuesTheRawTextCannotHoldAreRefused() throws Exception {
        ToolSyntax syntax = plain.syntax("qwen3_coder", false);
        for (String[] c : new String[][] {
            {
                "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"pattern\":\"^x\"}}}",
                "tools[0].function.parameters /properties/a: keyword 'pattern'"
            },
            {
                "{\"type\":\"object\",\"properties\":{\"a\":{\"enum\":[1,2]}}}",
                "tools[0].function.parameters /properties/a: qwen3_coder's raw-text values hold an enum"
            },
            {
                "{\"type\":\"object\",\"properties\":{\"a\":{\"anyOf\":[{\"type\":\"string\"}]}}}",
                "tools[0].function.parameters /properties/a: qwen3_coder converts a value by its property's"
            },
            {
                "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":[\"string\",\"null\"]}}}",
                "tools[0].function.parameters /properties/a: qwen3_coder converts"
            },
            {
                "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[\"NULL\"]}}}",
                "reads the value 'NULL' as null"
            },
            {
                "{\"type\":\"object\",\"properties\":{},\"required\":[\"b\"]}",
                "tools[0].function.parameters /required: 'b' is not in properties"
            }
        }) {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> ToolCallGrammar.forTools(
                            List.of(tool("f", c[0], false)), ToolChoice.required(true), syntax, false));
            assertTrue(e.getMessage().startsWith(c[1]) || e.getMessage().contains(c[1]), e.getMessage());
        }
    }

    @Test
    void formatsNotCoveredAreRefusedNamingTheFormat() {
        for (String format : List.of("pythonic", "gemma4", "glm47")) {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> ToolCallGrammar.forTools(
                            tools(), ToolChoice.required(true), plain.syntax(format, false), false));
            assertEquals(
                    "tool_choice \"required\" is not supported for this model's tool format " + format
                            + " (supported: json_tools, mistral, qwen3_coder)",
                    e.getMessage());
        }
        IllegalArgumentException strict = assertThrows(
                IllegalArgumentException.class,
                () -> ToolCallGrammar.forTools(
                        List.of(tool("get_time", TIME, true)),
                        ToolChoice.auto(true),
                        plain.syntax("pythonic", false),
                        false));
        assertTrue(
                strict.getMessage()
                        .startsWith("tool_choice \"auto\" with strict tools is not supported for this "
                                + "model's tool format pythonic"),
                strict.getMessage());
        IllegalArgumentException none = assertThrows(
                IllegalArgumentException.class,
                () -> ToolCallGrammar.forTools(
                        tools(), ToolChoice.named("get_time", true), plain.syntax(null, false), false));
        assertTrue(none.getMessage().contains("this model has none"), none.getMessage());
    }

    @Test
    void whatCannotBeEnforcedIsRefusedNamingIt() throws Exception {
        ToolSyntax syntax = plain.syntax("json_tools", false);
        List<Map<String, Object>> unique = List.of(
                tool("get_time", TIME, false),
                tool(
                        "tags",
                        "{\"type\":\"object\",\"properties\":{\"t\":{\"type\":\"array\",\"uniqueItems\":true}}}",
                        false));
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> ToolCallGrammar.forTools(unique, ToolChoice.required(true), syntax, false));
        assertTrue(
                e.getMessage()
                        .startsWith("tools[1].function.parameters: keyword 'uniqueItems' at /properties/t "
                                + "is not supported"),
                e.getMessage());
        // a choice naming another tool leaves that schema out: nothing to refuse
        assertEquals(
                -1,
                walk(
                        plain,
                        ToolCallGrammar.forTools(unique, ToolChoice.named("get_time", true), syntax, false),
                        jsonCall("get_time", "{\"zone\": \"UTC\"}")));
        e = assertThrows(
                IllegalArgumentException.class,
                () -> ToolCallGrammar.forTools(tools(), ToolChoice.named("get_date", true), syntax, false));
        assertTrue(
                e.getMessage().contains("'get_date'") && e.getMessage().contains("no such function"), e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class,
                () -> ToolCallGrammar.forTools(tools(), ToolChoice.auto(true), syntax, false));
        assertTrue(e.getMessage().contains("no tool is strict and calls may be parallel"), e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class,
                () -> ToolCallGrammar.forTools(tools(), ToolChoice.required(true), syntax, true));
        assertTrue(e.getMessage().contains("no think markers"), e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class,
                () -> ToolCallGrammar.forTools(List.of(), ToolChoice.required(true), syntax, false));
        assertTrue(e.getMessage().contains("at least one tool"), e.getMessage());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void aMarkerOfASpecialTokenAndTextIsWrittenPieceByPiece(Model m) throws Exception {
        ToolSyntax syntax =
                ToolSyntax.of("json_tools", "<think>\n", "</think>", text -> m.encode(text), m.vocabulary());
        List<MarkerPiece> pieces = syntax.pieces().apply("<think>\n");
        assertEquals(String.join("", pieces.stream().map(MarkerPiece::text).toList()), "<think>\n");
        assertEquals(m == special, pieces.getFirst().isSpecial(), pieces.toString());
        OutputConstraint g = ToolCallGrammar.forTools(tools(), ToolChoice.required(true), syntax, false);
        String call = jsonCall("get_time", "{\"zone\": \"UTC\"}");
        assertEquals(-1, walk(m, g, "<think>\nShort.</think>" + call), g.source());
        assertEquals(
                m.encode("<think>\nShort.</think>").length,
                walk(m, g, "<think>\nShort.</think>Sure! " + call),
                "after the block only calls");
    }

    @Test
    void aMarkerThatFreeTextCannotEndAtIsRefused() {
        ToolSyntax syntax = ToolSyntax.of(
                "json_tools", "<think>", "\n</think>", text -> special.encode(text), special.vocabulary());
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> ToolCallGrammar.forTools(tools(), ToolChoice.required(true), syntax, false));
        assertTrue(e.getMessage().startsWith("marker \n</think> starts with text"), e.getMessage());
    }

    @Test
    void markersThatAreAddedTokensAreWrittenAsThoseTokens() throws Exception {
        String source = ToolCallGrammar.forTools(
                        tools(), ToolChoice.required(true), special.syntax("json_tools", true), false)
                .source();
        int start = special.hf().tokenId("<tool_call>").orElseThrow();
        assertTrue(source.contains("<[" + start + "]>"), source);
        assertFalse(source.contains("\"<tool_call>\""), source);
        String plainSource = ToolCallGrammar.forTools(
                        tools(), ToolChoice.required(true), plain.syntax("json_tools", true), false)
                .source();
        assertTrue(plainSource.contains("\"<tool_call>\""), plainSource);
    }
}
