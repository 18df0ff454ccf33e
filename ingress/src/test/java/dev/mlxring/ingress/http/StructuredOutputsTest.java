package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.pipeline.OutputConstraint;
import dev.mlxring.pipeline.OutputConstraint.Kind;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Every API's structured-output field read into one constraint, with the field it came from. */
class StructuredOutputsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static JsonNode json(String s) throws Exception {
        return JSON.readTree(s);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "{\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"a\",\"strict\":true,\"schema\":{\"type\":\"integer\"}}}}"
                        + "|JSON_SCHEMA|response_format.json_schema.schema|{\"type\":\"integer\"}",
                "{\"response_format\":{\"type\":\"json_object\"}}|JSON_SCHEMA|response_format|{\"type\":\"object\"}",
                "{\"structured_outputs\":{\"regex\":\"[0-9]+\"}}|REGEX|structured_outputs.regex|[0-9]+",
                "{\"structured_outputs\":{\"grammar\":\"start: \\\"x\\\"\"}}|LARK|structured_outputs.grammar|start: \"x\"",
                "{\"structured_outputs\":{\"json\":{\"type\":\"string\"}}}|JSON_SCHEMA|structured_outputs.json|{\"type\":\"string\"}",
                "{\"structured_outputs\":{\"json\":\"{\\\"type\\\":\\\"string\\\"}\"}}|JSON_SCHEMA|structured_outputs.json|{\"type\":\"string\"}",
                "{\"structured_outputs\":{\"json_object\":true}}|JSON_SCHEMA|structured_outputs.json_object|{\"type\":\"object\"}",
                "{\"guided_regex\":\"x+\"}|REGEX|guided_regex|x+",
                "{\"guided_json\":{\"type\":\"null\"},\"response_format\":{\"type\":\"text\"}}|JSON_SCHEMA|guided_json|{\"type\":\"null\"}"
            })
    void openAiShapes(String body, Kind kind, String field, String source) throws Exception {
        OutputConstraint c = StructuredOutputs.openAi(json(body));
        assertEquals(kind, c.kind());
        assertEquals(field, c.field());
        assertEquals(source, c.source());
    }

    @Test
    void otherApisAndFreeText() throws Exception {
        assertNull(StructuredOutputs.openAi(
                json("{\"response_format\":{\"type\":\"text\"},\"structured_outputs\":null}")));
        OutputConstraint choice = StructuredOutputs.openAi(json("{\"guided_choice\":[\"a.b\",\"c|d\"]}"));
        assertEquals(Kind.REGEX, choice.kind());
        assertEquals("(a\\.b)|(c\\|d)", choice.source(), "each choice a literal");
        OutputConstraint r = StructuredOutputs.responses(json(
                "{\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"n\",\"schema\":{\"type\":\"object\"}}}}"));
        assertEquals("text.format.schema", r.field());
        assertEquals(
                "text.format",
                StructuredOutputs.responses(json("{\"text\":{\"format\":{\"type\":\"json_object\"}}}"))
                        .field());
        assertNull(StructuredOutputs.responses(json("{\"text\":{\"format\":{\"type\":\"text\"}}}")));
        assertEquals(
                "output_format.schema",
                StructuredOutputs.anthropic(
                                json("{\"output_format\":{\"type\":\"json_schema\",\"schema\":{\"type\":\"object\"}}}"))
                        .field());
        assertEquals(
                "output_config.format.schema",
                StructuredOutputs.anthropic(
                                json(
                                        "{\"output_config\":{\"effort\":\"low\",\"format\":{\"type\":\"json_schema\",\"schema\":{}}}}"))
                        .field());
        assertNull(StructuredOutputs.anthropic(json("{\"output_config\":{\"effort\":\"low\"}}")));
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "{\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"a\"}}}|response_format.json_schema.schema is required",
                "{\"response_format\":{\"type\":\"json_schema\"}}|response_format.json_schema must be an object",
                "{\"response_format\":{\"type\":\"grammar\"}}|response_format type 'grammar' is not supported",
                "{\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{},\"strict\":\"yes\"}}}|strict must be a boolean",
                "{\"structured_outputs\":{\"regex\":\"a\",\"choice\":[\"b\"]}}|both constrain the output",
                "{\"structured_outputs\":{\"whitespace_pattern\":\" \"}}|structured_outputs.whitespace_pattern is not supported",
                "{\"structured_outputs\":{\"choice\":[]}}|non-empty array",
                "{\"structured_outputs\":{\"regex\":\"\"}}|non-empty string",
                "{\"guided_json\":{},\"response_format\":{\"type\":\"json_object\"}}|both constrain the output",
                "{\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":[1]}}}|must be a JSON Schema object",
                "{\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{},\"description\":\"d\"}}}"
                        + "|response_format.json_schema.description is not supported"
            })
    void badShapesAre400sNamingTheField(String body, String expected) throws Exception {
        ApiError e = assertThrows(ApiError.class, () -> StructuredOutputs.openAi(json(body)));
        assertEquals(400, e.status());
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }

    @Test
    void anthropicAndResponsesRefuseOtherTypes() throws Exception {
        ApiError a = assertThrows(
                ApiError.class, () -> StructuredOutputs.anthropic(json("{\"output_format\":{\"type\":\"xml\"}}")));
        assertTrue(a.getMessage().contains("output_format type 'xml'"), a.getMessage());
        ApiError extra = assertThrows(
                ApiError.class,
                () -> StructuredOutputs.anthropic(
                        json("{\"output_format\":{\"type\":\"json_schema\",\"schema\":{},\"x\":1}}")));
        assertTrue(extra.getMessage().startsWith("output_format.x is not supported"), extra.getMessage());
        ApiError described = assertThrows(
                ApiError.class,
                () -> StructuredOutputs.responses(json(
                        "{\"text\":{\"format\":{\"type\":\"json_schema\",\"schema\":{},\"description\":\"d\"}}}")));
        assertTrue(
                described.getMessage().startsWith("text.format.description is not supported"), described.getMessage());
        assertEquals(
                "text.format.schema",
                StructuredOutputs.responses(json(
                                "{\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"n\",\"strict\":true,\"schema\":{},"
                                        + "\"description\":null}}}"))
                        .field(),
                "null means absent");
        ApiError r = assertThrows(
                ApiError.class, () -> StructuredOutputs.responses(json("{\"text\":{\"format\":{\"type\":\"lark\"}}}")));
        assertTrue(r.getMessage().contains("text.format type 'lark'"), r.getMessage());
    }
}
