package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.mlx.PythonScript;
import java.net.http.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Structured outputs on the real server and the default model, through the official SDKs
 * unchanged (scripts/e2e/structured_outputs_check.py): openai's {@code .parse()} with pydantic
 * models on chat and Responses, 64 objects over eight schemas from 8 concurrent clients all
 * valid (jsonschema), regex and choice through {@code structured_outputs}, a cut output reported
 * as "length" (and {@code .parse()} refusing it), Anthropic's {@code output_format}. Then the
 * fail-closed rules over raw HTTP: what cannot be honoured is a 400 naming the field.
 */
class StructuredOutputsServerTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @RegisterExtension
    static final ServedModel SERVER = ServedModel.serve();

    private static HttpResponse<String> post(String path, String body) throws Exception {
        return SERVER.post(path, body);
    }

    @Test
    void theOfficialClientsGetValidObjects() throws Exception {
        String out = PythonScript.run(
                "e2e/structured_outputs_check.py",
                900,
                List.of("--base-url", SERVER.base(), "--objects", "64", "--concurrency", "8"));
        JsonNode checks = JSON.readTree(out).get("checks");
        assertEquals(6, checks.size(), out);
        for (JsonNode c : checks) {
            assertTrue(c.get("ok").asBoolean(), c.get("name").asText() + ": " + c.get("detail"));
        }
        assertEquals(0, checks.get(1).at("/detail/invalid").size(), out);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":{\"type\":\"array\",\"uniqueItems\":true}}}"
                        + "|response_format.json_schema.schema|keyword 'uniqueItems' at / is not supported",
                "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":{\"type\":\"strin\"}}}"
                        + "|response_format.json_schema.schema|strin",
                "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":{\"$ref\":\"#/$defs/none\"}}}"
                        + "|response_format.json_schema.schema|none",
                "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\"}}|response_format.json_schema.schema|is required"
            })
    void aSchemaThatCannotBeHonouredIsRefusedBeforeAnyWork(String format, String param, String why) throws Exception {
        HttpResponse<String> r = post(
                "/v1/chat/completions",
                "{\"max_tokens\":8,\"messages\":[{\"role\":\"user\"," + "\"content\":\"hi\"}],\"response_format\":"
                        + format + "}");
        assertEquals(400, r.statusCode(), r.body());
        JsonNode error = JSON.readTree(r.body()).get("error");
        assertEquals(param, error.get("param").asText(), r.body());
        assertTrue(error.get("message").asText().contains(why), r.body());
    }

    @Test
    void aBadGrammarOrRegexIsRefusedNamingItsField() throws Exception {
        HttpResponse<String> g = post(
                "/v1/chat/completions",
                "{\"max_tokens\":8,\"messages\":[{\"role\":\"user\","
                        + "\"content\":\"hi\"}],\"structured_outputs\":{\"grammar\":\"start: undefined_rule\"}}");
        assertEquals(400, g.statusCode(), g.body());
        assertEquals(
                "structured_outputs.grammar",
                JSON.readTree(g.body()).at("/error/param").asText(),
                g.body());
        HttpResponse<String> re =
                post("/v1/completions", "{\"max_tokens\":8,\"prompt\":\"x\",\"guided_regex\":\"(a\"}");
        assertEquals(400, re.statusCode(), re.body());
        assertEquals("guided_regex", JSON.readTree(re.body()).at("/error/param").asText(), re.body());
    }

    @Test
    void jsonObjectModeAnswersAnObjectOnTheLegacyRouteToo() throws Exception {
        HttpResponse<String> r = post(
                "/v1/completions",
                "{\"max_tokens\":120,\"prompt\":\"A JSON object about a cat:\","
                        + "\"response_format\":{\"type\":\"json_object\"}}");
        assertEquals(200, r.statusCode(), r.body());
        JsonNode choice = JSON.readTree(r.body()).at("/choices/0");
        if (choice.get("finish_reason").asText().equals("stop")) {
            assertTrue(JSON.readTree(choice.get("text").asText()).isObject(), r.body());
        } else {
            assertEquals("length", choice.get("finish_reason").asText(), r.body());
        }
    }
}
