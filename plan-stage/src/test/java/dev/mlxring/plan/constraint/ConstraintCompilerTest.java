package dev.mlxring.plan.constraint;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.constraint.ConstraintTokenizer;
import dev.mlxring.constraint.ConstraintVocabulary;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.OutputConstraint;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.TokenConstraint;
import dev.mlxring.tokenizer.HfTokenizer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * plan-stage's side of structured outputs on the default model's tokenizer: what compiles becomes
 * a constraint that masks tokens; what would be ignored or cannot compile is refused naming the
 * request field and the keyword's JSON pointer.
 */
class ConstraintCompilerTest {
    private static DefaultModelTokenizers models;
    private static HfTokenizer hf;
    private static ConstraintTokenizer tokenizer;
    private static ConstraintVocabulary vocabulary;
    private static ConstraintCompiler compiler;
    private static int vocab;

    @BeforeAll
    static void open() throws Exception {
        models = DefaultModelTokenizers.open();
        vocab = models.vocab();
        hf = models.hf();
        vocabulary = models.vocabulary();
        tokenizer = models.tokenizer();
        compiler = new ConstraintCompiler(tokenizer);
    }

    @AfterAll
    static void close() {
        models.close();
    }

    private static RequestException refused(String schema) {
        return assertThrows(
                RequestException.class,
                () -> compiler.compile(new OutputConstraint(
                        OutputConstraint.Kind.JSON_SCHEMA, schema, "response_format.json_schema.schema")));
    }

    private static boolean allowed(int[] words, int token) {
        return (words[token >>> 5] >>> (token & 31) & 1) != 0;
    }

    @Test
    void aSchemaBecomesAMaskThatFollowsTheTokensTaken() throws Exception {
        String schema = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"maxLength\":20},"
                + "\"rank\":{\"type\":\"integer\",\"minimum\":1}},\"required\":[\"city\",\"rank\"],"
                + "\"additionalProperties\":false,\"title\":\"Answer\",\"description\":\"annotations are fine\"}";
        int[] words = new int[(vocab + 31) / 32];
        try (TokenConstraint c =
                compiler.compile(new OutputConstraint(OutputConstraint.Kind.JSON_SCHEMA, schema, "f"))) {
            int[] text = hf.encode("{\"city\": \"Paris\", \"rank\": 1}", false);
            for (int t : text) {
                assertTrue(c.allowedTokens(words), "some token is allowed");
                assertTrue(allowed(words, t), "token " + t + " of a valid answer is allowed");
                c.consume(t);
            }
            assertTrue(c.allowedTokens(words));
            assertTrue(allowed(words, hf.eosTokenIds()[0]), "the object is complete: EOS is allowed");
            assertNull(c.error());
        }
        try (TokenConstraint c =
                compiler.compile(new OutputConstraint(OutputConstraint.Kind.JSON_SCHEMA, schema, "f"))) {
            assertTrue(c.allowedTokens(words));
            int bracket = hf.encode("[", false)[0];
            assertFalse(allowed(words, bracket), "an array cannot start an object");
            assertThrows(IllegalStateException.class, () -> c.consume(bracket));
            assertTrue(c.error() != null && !c.error().isBlank(), "the refusal is kept as the error");
        }
    }

    /** Walks {@code text}'s tokens; returns whether all were allowed and, after them, whether EOS is. */
    private static boolean[] walk(TokenConstraint c, String text) {
        int[] words = new int[(vocab + 31) / 32];
        for (int t : hf.encode(text, false)) {
            if (!c.allowedTokens(words) || !allowed(words, t)) {
                return new boolean[] {false, false};
            }
            c.consume(t);
        }
        return new boolean[] {true, c.allowedTokens(words) && allowed(words, hf.eosTokenIds()[0])};
    }

    @Test
    void aReasoningBlockStaysFreeAheadOfTheConstraint() throws Exception {
        ToolSyntax thinking = ToolSyntax.of(null, "<think>", "</think>", t -> hf.encode(t, false), vocabulary);
        OutputConstraint schema = new OutputConstraint(
                OutputConstraint.Kind.JSON_SCHEMA,
                "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},\"required\":[\"a\"]}",
                "f");
        OutputConstraint free = ConstraintCompiler.afterReasoning(schema, thinking, false);
        try (TokenConstraint c = compiler.compile(free)) {
            assertArrayEquals(new boolean[] {true, true}, walk(c, "<think>hmm [1, 2] is not it</think>{\"a\": 1}"));
        }
        try (TokenConstraint c = compiler.compile(free)) {
            assertArrayEquals(new boolean[] {true, true}, walk(c, "{\"a\": 1}"), "the block is optional");
        }
        try (TokenConstraint c = compiler.compile(free)) {
            assertArrayEquals(
                    new boolean[] {false, false}, walk(c, "<think>x</think>[1]"), "after it, the schema holds");
        }
        OutputConstraint open = ConstraintCompiler.afterReasoning(schema, thinking, true);
        try (TokenConstraint c = compiler.compile(open)) {
            assertArrayEquals(new boolean[] {true, true}, walk(c, "so {b}</think>{\"a\": 2}"));
        }
        try (TokenConstraint c = compiler.compile(open)) {
            assertArrayEquals(
                    new boolean[] {true, false},
                    walk(c, "{\"a\": 2}"),
                    "an open block must close before the answer counts");
        }
        OutputConstraint regex = ConstraintCompiler.afterReasoning(
                new OutputConstraint(OutputConstraint.Kind.REGEX, "[0-9]+/[0-9]+", "g"), thinking, false);
        try (TokenConstraint c = compiler.compile(regex)) {
            assertArrayEquals(new boolean[] {true, true}, walk(c, "<think>a fraction</think>3/4"));
        }
        assertSame(
                schema,
                ConstraintCompiler.afterReasoning(
                        schema, ToolSyntax.of(null, null, null, t -> hf.encode(t, false), vocabulary), false),
                "no markers: as it is");
        RequestException e = assertThrows(
                RequestException.class,
                () -> ConstraintCompiler.afterReasoning(
                        new OutputConstraint(
                                OutputConstraint.Kind.JSON_SCHEMA,
                                "{\"not\":{}}",
                                "response_format.json_schema.schema"),
                        thinking,
                        false));
        assertTrue(e.getMessage().startsWith("response_format.json_schema.schema: keyword 'not'"), e.getMessage());
    }

    @Test
    void regexAndLarkCompileToo() throws Exception {
        int[] words = new int[(vocab + 31) / 32];
        try (TokenConstraint c = compiler.compile(new OutputConstraint(OutputConstraint.Kind.REGEX, "(yes|no)", "g"))) {
            assertTrue(c.allowedTokens(words));
            assertFalse(allowed(words, hf.encode("maybe", false)[0]));
        }
        try (TokenConstraint c =
                compiler.compile(new OutputConstraint(OutputConstraint.Kind.LARK, "start: \"A\" | \"B\"", "g"))) {
            assertTrue(c.allowedTokens(words));
            assertTrue(allowed(words, hf.encode("A", false)[0]));
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "{\"type\":\"array\",\"uniqueItems\":true}| keyword 'uniqueItems' at / is not supported",
                "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"contentEncoding\":\"base64\"}}}"
                        + "| keyword 'contentEncoding' at /properties/a is not supported",
                "{\"anyOf\":[{\"type\":\"string\"},{\"not\":{\"type\":\"null\"}}]}| keyword 'not' at /anyOf/1 is not supported",
                "{\"$defs\":{\"a/b\":{\"type\":\"object\",\"minProperties\":1}},\"$ref\":\"#/$defs/a~1b\"}"
                        + "| keyword 'minProperties' at /$defs/a~1b is not supported",
                "{\"type\":\"object\",\"x-guidance\":{}}| extension keyword 'x-guidance' at /x-guidance is not supported",
                "{\"type\":\"strin\"}| response_format.json_schema.schema: ",
                "{\"$ref\":\"#/$defs/missing\"}| response_format.json_schema.schema: ",
                "not json| response_format.json_schema.schema is not valid JSON",
                "[1,2]| response_format.json_schema.schema must be a JSON Schema object"
            })
    void whatWouldBeIgnoredOrCannotCompileIsRefusedNamingTheField(String schema, String expected) {
        RequestException e = refused(schema);
        assertEquals(ErrorType.INVALID_REQUEST, e.type());
        assertTrue(e.getMessage().startsWith("response_format.json_schema.schema"), e.getMessage());
        assertTrue(e.getMessage().contains(expected.strip()), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), "one line: " + e.getMessage());
    }

    @Test
    void aBadGrammarIsRefusedWithLlguidancesReason() {
        RequestException e = assertThrows(
                RequestException.class,
                () -> compiler.compile(
                        new OutputConstraint(OutputConstraint.Kind.LARK, "start: foo", "structured_outputs.grammar")));
        assertTrue(e.getMessage().startsWith("structured_outputs.grammar: "), e.getMessage());
        assertTrue(e.getMessage().contains("foo"), e.getMessage());
    }
}
