package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.ToolChoiceSpec;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The tool choices plan enforces (a forced call, a named tool, strict tools, at most one call) are
 * accepted on all three APIs and reach plan as the request's {@link ToolChoiceSpec}, with
 * {@code strict} kept on the tool for the template and the grammar. Stage doubles: the planner
 * records the request it is given.
 */
class ToolChoiceHttpTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String CHAT = PlaceOrderRequests.CHAT;
    private static final String MESSAGES = PlaceOrderRequests.MESSAGES;
    private static final String RESPONSES = PlaceOrderRequests.RESPONSES;
    private final AtomicReference<GenerationRequest> planned = new AtomicReference<>();

    @RegisterExtension
    final ServedEngine server = ServedEngine.eachTest(
            () -> StageDoubles.engine(ScriptedExecutor.counting()).planner((r, p) -> {
                planned.set(r);
                return ExecutionPlan.builder()
                        .requestId(r.id())
                        .prompt(p)
                        .sampling(SamplingParams.GREEDY)
                        .maxTokens(1)
                        .stopStrings(r.stop())
                        .build();
            }),
            ServedEngine.mlxLm());

    /**
     * Each case: route|body, then the choice plan must see: mode|name|parallel|schemaKey|strict
     * (whether the tool reaches plan with {@code "strict": true}).
     */
    @ParameterizedTest
    @ValueSource(
            strings = {
                CHAT + "}}],\"tool_choice\":\"required\"}|REQUIRED||true|function.parameters|false",
                CHAT + "}}],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"place_order\"}},"
                        + "\"parallel_tool_calls\":false}|NAMED|place_order|false|function.parameters|false",
                CHAT + ",\"strict\":true}}]}|AUTO||true|function.parameters|true",
                CHAT + "}}],\"parallel_tool_calls\":false}|AUTO||false|function.parameters|false",
                CHAT + "}}]}|AUTO||true|function.parameters|false",
                MESSAGES + "}],\"tool_choice\":{\"type\":\"any\"}}|REQUIRED||true|input_schema|false",
                MESSAGES
                        + "}],\"tool_choice\":{\"type\":\"tool\",\"name\":\"place_order\",\"disable_parallel_tool_use\":true}}"
                        + "|NAMED|place_order|false|input_schema|false",
                MESSAGES + "}],\"tool_choice\":{\"type\":\"auto\",\"disable_parallel_tool_use\":true}}"
                        + "|AUTO||false|input_schema|false",
                MESSAGES + ",\"strict\":true}]}|AUTO||true|input_schema|true",
                RESPONSES + "}],\"tool_choice\":\"required\"}|REQUIRED||true|parameters|false",
                RESPONSES
                        + "}],\"tool_choice\":{\"type\":\"function\",\"name\":\"place_order\"}}|NAMED|place_order|true"
                        + "|parameters|false",
                RESPONSES + "}],\"parallel_tool_calls\":false}|AUTO||false|parameters|false",
                RESPONSES + ",\"strict\":true}]}|AUTO||true|parameters|true",
            })
    @SuppressWarnings("unchecked")
    void anEnforcedToolChoiceReachesPlan(String spec) throws Exception {
        String[] p = spec.split("\\|", -1);
        HttpResponse<String> r = server.post(p[0], p[1]);
        assertEquals(200, r.statusCode(), r.body());
        GenerationRequest req = planned.get();
        assertNotNull(req);
        ToolChoiceSpec expected = new ToolChoiceSpec(
                ToolChoiceSpec.Mode.valueOf(p[2]), p[3].isEmpty() ? null : p[3], Boolean.parseBoolean(p[4]), p[5]);
        assertEquals(expected, req.toolChoice(), p[1]);
        List<Map<String, Object>> tools = ((Prompt.Chat) req.prompt()).tools();
        Map<String, Object> fn = (Map<String, Object>) tools.getFirst().get("function");
        assertEquals(Boolean.parseBoolean(p[6]), Boolean.TRUE.equals(fn.get("strict")), fn.toString());
    }

    @Test
    void theResponseEchoesParallelToolCallsAsSent() throws Exception {
        String[] p = (RESPONSES + "}],\"parallel_tool_calls\":false}").split("\\|", 2);
        HttpResponse<String> r = server.post(p[0], p[1]);
        assertEquals(200, r.statusCode(), r.body());
        JsonNode body = JSON.readTree(r.body());
        assertTrue(body.has("parallel_tool_calls"), r.body());
        assertEquals(false, body.get("parallel_tool_calls").booleanValue(), r.body());
    }
}
