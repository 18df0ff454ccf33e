package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * On all three APIs every request field that promises what generation does not enforce is refused
 * with a 400 naming the field and saying why, rather than answered with free text as if it held
 * ({@code tool_choice} none with tools, a cap on tool calls, several choices; a JSON schema on an
 * engine without a compiler, as these stage doubles are); what generation does honour is accepted.
 * Forced and strict tool choices reach plan: ToolChoiceHttpTest. Stage doubles, no model.
 */
class UnenforcedConstraintsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String CHAT = PlaceOrderRequests.CHAT + "}}]";
    private static final String MESSAGES = PlaceOrderRequests.MESSAGES + "}]";
    private static final String RESPONSES = PlaceOrderRequests.RESPONSES + "}]";

    @RegisterExtension
    final ServedEngine server =
            ServedEngine.eachTest(() -> StageDoubles.engine(ScriptedExecutor.counting()), ServedEngine.mlxLm());

    private HttpResponse<String> post(String spec) throws Exception {
        String[] p = spec.split("\\|", 2);
        return server.post(p[0], p[1]);
    }

    /** Each case: a route and body prefix, the fields that make it a constraint, and the field named. */
    @ParameterizedTest
    @ValueSource(
            strings = {
                CHAT + ",\"tool_choice\":\"none\"}|tool_choice",
                MESSAGES + ",\"tool_choice\":{\"type\":\"none\"}}|tool_choice",
                MESSAGES
                        + ",\"output_format\":{\"type\":\"json_schema\",\"schema\":{\"type\":\"object\"}}}|output_format.schema",
                MESSAGES
                        + ",\"output_config\":{\"format\":{\"type\":\"json_schema\",\"schema\":{}}}}|output_config.format.schema",
                RESPONSES + ",\"tool_choice\":\"none\"}|tool_choice",
                "/v1/responses|{\"input\":\"hi\",\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"x\",\"schema\":{}}}}"
                        + "|text.format.schema",
                "/v1/responses|{\"input\":\"hi\",\"text\":{\"format\":{\"type\":\"json_object\"}}}|text.format",
                "/v1/responses|{\"input\":\"hi\",\"n\":2}|n",
                "/v1/responses|{\"input\":\"hi\",\"top_logprobs\":5}|top_logprobs",
                "/v1/responses|{\"input\":\"hi\",\"max_tool_calls\":1}|max_tool_calls",
            })
    void aConstraintThatIsNotEnforcedIsRefusedNamingItsField(String spec) throws Exception {
        int cut = spec.lastIndexOf('|');
        String field = spec.substring(cut + 1);
        HttpResponse<String> r = post(spec.substring(0, cut));
        assertEquals(400, r.statusCode(), r.body());
        JsonNode body = JSON.readTree(r.body());
        String message = body.at("/error/message").asText();
        if (spec.startsWith("/v1/messages")) {
            assertEquals("invalid_request_error", body.at("/error/type").asText(), r.body());
        } else {
            assertEquals(field, body.at("/error/param").asText(), r.body());
        }
        assertTrue(message.startsWith(field), "the message leads with the field: " + r.body());
        assertTrue(message.contains("not supported"), "the message says why: " + r.body());
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                CHAT + ",\"tool_choice\":\"auto\",\"parallel_tool_calls\":true}",
                "/v1/chat/completions|{\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                        + "\"tool_choice\":\"none\",\"parallel_tool_calls\":false}",
                "/v1/chat/completions|{\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"type\":"
                        + "\"function\",\"function\":{\"name\":\"f\",\"strict\":false}}]}",
                MESSAGES + ",\"tool_choice\":{\"type\":\"auto\",\"disable_parallel_tool_use\":false}}",
                "/v1/messages|{\"model\":\"tiny\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                        + "\"tool_choice\":{\"type\":\"none\"},\"output_config\":{\"effort\":\"low\"}}",
                RESPONSES + ",\"tool_choice\":\"auto\",\"parallel_tool_calls\":true}",
                "/v1/responses|{\"max_output_tokens\":1,\"input\":\"hi\",\"tool_choice\":\"none\",\"n\":1,\"top_logprobs\":0}",
                "/v1/responses|{\"max_output_tokens\":1,\"input\":\"hi\",\"tools\":[{\"type\":\"function\",\"name\":\"f\","
                        + "\"strict\":false}]}",
            })
    void whatGenerationHonoursIsAccepted(String spec) throws Exception {
        HttpResponse<String> r = post(spec);
        assertEquals(200, r.statusCode(), r.body());
    }
}
