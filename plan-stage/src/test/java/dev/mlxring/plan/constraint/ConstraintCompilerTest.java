package dev.mlxring.plan.constraint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.constraint.ConstraintTokenizer;
import dev.mlxring.constraint.ConstraintVocabulary;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.OutputConstraint;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.TokenConstraint;
import dev.mlxring.prep.HfTokenizer;
import java.nio.file.Path;
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
    private static final Path DIR = ProjectHome.get().resolve("models/smollm2-135m-instruct");
    private static HfTokenizer hf;
    private static ConstraintTokenizer tokenizer;
    private static ConstraintCompiler compiler;
    private static int vocab;

    @BeforeAll
    static void open() throws Exception {
        vocab = new ObjectMapper().readTree(DIR.resolve("config.json").toFile()).path("vocab_size").intValue();
        hf = HfTokenizer.load(DIR);
        tokenizer = ConstraintTokenizer.create(ConstraintVocabulary.fromTokenizerJson(DIR.resolve("tokenizer.json"),
                vocab), hf.eosTokenIds(), text -> hf.encode(text, false));
        compiler = new ConstraintCompiler(tokenizer);
    }

    @AfterAll
    static void close() {
        tokenizer.close();
    }

    private static RequestException refused(String schema) {
        return assertThrows(RequestException.class, () -> compiler.compile(
                new OutputConstraint(OutputConstraint.Kind.JSON_SCHEMA, schema, "response_format.json_schema.schema")));
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
        try (TokenConstraint c = compiler.compile(new OutputConstraint(OutputConstraint.Kind.JSON_SCHEMA, schema, "f"))) {
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
        try (TokenConstraint c = compiler.compile(new OutputConstraint(OutputConstraint.Kind.JSON_SCHEMA, schema, "f"))) {
            assertTrue(c.allowedTokens(words));
            int bracket = hf.encode("[", false)[0];
            assertFalse(allowed(words, bracket), "an array cannot start an object");
            assertThrows(IllegalStateException.class, () -> c.consume(bracket));
            assertTrue(c.error() != null && !c.error().isBlank(), "the refusal is kept as the error");
        }
    }

    @Test
    void regexAndLarkCompileToo() throws Exception {
        int[] words = new int[(vocab + 31) / 32];
        try (TokenConstraint c = compiler.compile(new OutputConstraint(OutputConstraint.Kind.REGEX, "(yes|no)", "g"))) {
            assertTrue(c.allowedTokens(words));
            assertFalse(allowed(words, hf.encode("maybe", false)[0]));
        }
        try (TokenConstraint c = compiler.compile(new OutputConstraint(OutputConstraint.Kind.LARK,
                "start: \"A\" | \"B\"", "g"))) {
            assertTrue(c.allowedTokens(words));
            assertTrue(allowed(words, hf.encode("A", false)[0]));
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
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
            "[1,2]| response_format.json_schema.schema must be a JSON Schema object"})
    void whatWouldBeIgnoredOrCannotCompileIsRefusedNamingTheField(String schema, String expected) {
        RequestException e = refused(schema);
        assertEquals(ErrorType.INVALID_REQUEST, e.type());
        assertTrue(e.getMessage().startsWith("response_format.json_schema.schema"), e.getMessage());
        assertTrue(e.getMessage().contains(expected.strip()), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), "one line: " + e.getMessage());
    }

    @Test
    void aBadGrammarIsRefusedWithLlguidancesReason() {
        RequestException e = assertThrows(RequestException.class, () -> compiler.compile(
                new OutputConstraint(OutputConstraint.Kind.LARK, "start: foo", "structured_outputs.grammar")));
        assertTrue(e.getMessage().startsWith("structured_outputs.grammar: "), e.getMessage());
        assertTrue(e.getMessage().contains("foo"), e.getMessage());
    }
}
