package dev.mlxring.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.constraint.ConstraintTokenizer;
import dev.mlxring.constraint.ConstraintVocabulary;
import dev.mlxring.pipeline.ChatMessage;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.OutputConstraint;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.TokenConstraint;
import dev.mlxring.pipeline.ToolChoiceSpec;
import dev.mlxring.plan.constraint.ConstraintCompiler;
import dev.mlxring.plan.constraint.DefaultModelTokenizers;
import dev.mlxring.plan.constraint.ModelTools;
import dev.mlxring.plan.constraint.ToolSyntax;
import dev.mlxring.tokenizer.HfTokenizer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The planner turns a request's tool choice into a tool-call grammar in the model's syntax (the
 * default model's tokenizer, with json_tools as its format): forced, strict and single-call
 * choices are masked, plain {@code auto} is not, and what cannot be honoured is refused naming the
 * field.
 */
class RequestPlannerToolChoiceTest {
    private static final String WEATHER = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},"
            + "\"required\":[\"city\"],\"additionalProperties\":false}";
    private static DefaultModelTokenizers models;
    private static HfTokenizer hf;
    private static ConstraintVocabulary vocabulary;
    private static ConstraintTokenizer tokenizer;
    private static int vocab;
    private final PreparedPrompt prompt = new PreparedPrompt(new int[] {1, 2, 3}, 3);

    @BeforeAll
    static void open() throws Exception {
        models = DefaultModelTokenizers.open();
        vocab = models.vocab();
        hf = models.hf();
        vocabulary = models.vocabulary();
        tokenizer = models.tokenizer();
    }

    @AfterAll
    static void close() {
        models.close();
    }

    private static RequestPlanner planner(String format, java.util.function.Predicate<int[]> openInPrompt) {
        ModelTools tools =
                new ModelTools(ToolSyntax.of(format, null, null, t -> hf.encode(t, false), vocabulary), openInPrompt);
        return new RequestPlanner(
                RequestPlanner.Defaults.mlxLm(4096),
                hf.eosTokenIds(),
                new int[0],
                vocab,
                new ConstraintCompiler(tokenizer),
                tools);
    }

    private static Map<String, Object> tool(String name, boolean strict) throws Exception {
        return Map.of(
                "type",
                "function",
                "function",
                Map.of("name", name, "parameters", new ObjectMapper().readValue(WEATHER, Map.class), "strict", strict));
    }

    private static GenerationRequest request(List<Map<String, Object>> tools, ToolChoiceSpec choice) {
        Prompt.Chat chat = new Prompt.Chat(List.of(ChatMessage.of("user", "weather?")), tools, null);
        return GenerationRequest.builder()
                .id("r")
                .model("m")
                .prompt(chat)
                .maxTokens(64)
                .toolChoice(choice)
                .build();
    }

    private static ToolChoiceSpec choice(ToolChoiceSpec.Mode mode, String name, boolean parallel) {
        return new ToolChoiceSpec(mode, name, parallel, "function.parameters");
    }

    /** Walks {@code text}'s tokens through the plan's mask; true when all pass and EOS may follow. */
    private static boolean accepts(TokenConstraint c, String text) {
        int[] words = new int[(vocab + 31) / 32];
        for (int t : hf.encode(text, false)) {
            if (!c.allowedTokens(words) || (words[t >>> 5] >>> (t & 31) & 1) == 0) {
                return false;
            }
            c.consume(t);
        }
        int eos = hf.eosTokenIds()[0];
        return c.allowedTokens(words) && (words[eos >>> 5] >>> (eos & 31) & 1) != 0;
    }

    @Test
    void aForcedChoiceBecomesTheToolCallGrammarOfTheModel() throws Exception {
        RequestPlanner planner = planner("json_tools", p -> false);
        String call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
        for (ToolChoiceSpec c : List.of(
                choice(ToolChoiceSpec.Mode.REQUIRED, null, true),
                choice(ToolChoiceSpec.Mode.NAMED, "get_weather", false))) {
            ExecutionPlan p = planner.plan(request(List.of(tool("get_weather", false)), c), prompt);
            try (TokenConstraint mask = p.constraint()) {
                assertNotNull(mask, c.toString());
                assertTrue(accepts(mask, call), c + ": a call of the tool passes");
            }
            try (TokenConstraint mask = planner.plan(request(List.of(tool("get_weather", false)), c), prompt)
                    .constraint()) {
                assertFalse(accepts(mask, "Sunny."), c + ": text instead of a call is masked out");
            }
        }
        ExecutionPlan wrongArgs = planner.plan(
                request(List.of(tool("get_weather", false)), choice(ToolChoiceSpec.Mode.REQUIRED, null, true)), prompt);
        try (TokenConstraint mask = wrongArgs.constraint()) {
            assertFalse(accepts(mask, call.replace("\"city\"", "\"town\"")), "arguments are held to the schema");
        }
    }

    @Test
    void autoIsLeftFreeUnlessATooIsStrictOrCallsAreSingle() throws Exception {
        RequestPlanner planner = planner("json_tools", p -> false);
        assertNull(
                planner.plan(request(List.of(tool("get_weather", false)), null), prompt)
                        .constraint(),
                "plain auto: no mask");
        try (TokenConstraint strict = planner.plan(request(List.of(tool("get_weather", true)), null), prompt)
                .constraint()) {
            assertNotNull(strict, "a strict tool is enforced under auto");
            assertTrue(accepts(strict, "No call."));
        }
        try (TokenConstraint single = planner.plan(
                        request(List.of(tool("get_weather", false)), choice(ToolChoiceSpec.Mode.AUTO, null, false)),
                        prompt)
                .constraint()) {
            assertNotNull(single, "parallel_tool_calls false is enforced");
        }
        assertNull(
                planner.plan(request(List.of(), choice(ToolChoiceSpec.Mode.AUTO, null, false)), prompt)
                        .constraint(),
                "no tools: nothing to enforce");
    }

    @Test
    void aForcedChoiceAndAResponseFormatAreRefusedTogether() throws Exception {
        GenerationRequest both = request(
                        List.of(tool("get_weather", false)), choice(ToolChoiceSpec.Mode.REQUIRED, null, true))
                .withConstraint(OutputConstraint.jsonObject("response_format"));
        RequestException e = assertThrows(
                RequestException.class, () -> planner("json_tools", p -> false).plan(both, prompt));
        assertEquals(ErrorType.INVALID_REQUEST, e.type());
        assertTrue(
                e.getMessage().startsWith("tool_choice: required cannot be combined with response_format"),
                e.getMessage());
    }

    @Test
    void whatCannotBeHonouredIsRefusedNamingTheField() throws Exception {
        ToolChoiceSpec required = choice(ToolChoiceSpec.Mode.REQUIRED, null, true);
        RequestException none = assertThrows(
                RequestException.class,
                () -> planner(null, p -> false).plan(request(List.of(tool("get_weather", false)), required), prompt));
        assertTrue(
                none.getMessage()
                        .startsWith("tool_choice: \"required\" needs a tool-call format, and " + "this model has none"),
                none.getMessage());
        RequestException pythonic = assertThrows(
                RequestException.class,
                () -> planner("pythonic", p -> false)
                        .plan(request(List.of(tool("get_weather", false)), required), prompt));
        assertTrue(
                pythonic.getMessage().contains("not supported for this model's tool format pythonic"),
                pythonic.getMessage());

        Map<String, Object> unique = Map.of(
                "type",
                "function",
                "function",
                Map.of(
                        "name",
                        "f",
                        "parameters",
                        Map.of(
                                "type",
                                "object",
                                "properties",
                                Map.of("t", Map.of("type", "array", "uniqueItems", true)))));
        ToolChoiceSpec anthropicAny = new ToolChoiceSpec(ToolChoiceSpec.Mode.REQUIRED, null, true, "input_schema");
        RequestException schema = assertThrows(
                RequestException.class,
                () -> planner("json_tools", p -> false).plan(request(List.of(unique), anthropicAny), prompt));
        assertEquals(ErrorType.INVALID_REQUEST, schema.type());
        assertTrue(
                schema.getMessage().startsWith("tools[0].input_schema: keyword 'uniqueItems' at /properties/t"),
                schema.getMessage());

        RequestException noneWithTools = assertThrows(
                RequestException.class,
                () -> planner("json_tools", p -> false)
                        .plan(
                                request(
                                        List.of(tool("get_weather", false)),
                                        choice(ToolChoiceSpec.Mode.NONE, null, true)),
                                prompt));
        assertEquals(ErrorType.UNSUPPORTED, noneWithTools.type());
        assertTrue(noneWithTools.getMessage().startsWith("tool_choice: none is not supported with tools"));

        RequestPlanner without = new RequestPlanner(
                RequestPlanner.Defaults.mlxLm(4096),
                hf.eosTokenIds(),
                new int[0],
                vocab,
                new ConstraintCompiler(tokenizer));
        RequestException noGrammar = assertThrows(
                RequestException.class,
                () -> without.plan(request(List.of(tool("get_weather", false)), required), prompt));
        assertTrue(
                noGrammar.getMessage().startsWith("tool_choice: required is not supported by this engine"),
                noGrammar.getMessage());
    }

    @Test
    void thePromptsTokensDecideWhetherTheReasoningBlockIsOpen() throws Exception {
        AtomicReference<int[]> seen = new AtomicReference<>();
        RequestPlanner planner = planner("json_tools", p -> {
            seen.set(p);
            return true;
        });
        RequestException e = assertThrows(
                RequestException.class,
                () -> planner.plan(
                        request(List.of(tool("get_weather", false)), choice(ToolChoiceSpec.Mode.REQUIRED, null, true)),
                        prompt));
        assertTrue(e.getMessage().contains("no think markers"), e.getMessage());
        assertEquals(
                List.of(1, 2, 3), java.util.Arrays.stream(seen.get()).boxed().toList());
    }
}
