package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.ToolChoiceSpec;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
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
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private static final String CHAT = "/v1/chat/completions|{\"max_tokens\":1,\"messages\":[{\"role\":\"user\","
            + "\"content\":\"hi\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"place_order\"";
    private static final String MESSAGES = "/v1/messages|{\"model\":\"tiny\",\"max_tokens\":1,\"messages\":[{\"role\":"
            + "\"user\",\"content\":\"hi\"}],\"tools\":[{\"name\":\"place_order\",\"input_schema\":{\"type\":\"object\"}";
    private static final String RESPONSES = "/v1/responses|{\"max_output_tokens\":1,\"input\":\"hi\",\"tools\":[{\"type\":"
            + "\"function\",\"name\":\"place_order\"";
    private final AtomicReference<GenerationRequest> planned = new AtomicReference<>();
    private Engine engine;
    private HttpServer server;

    @BeforeEach
    void start() {
        engine = StageDoubles.engine(ScriptedExecutor.counting()).planner((r, p) -> {
            planned.set(r);
            return new ExecutionPlan(r.id(), p, null, 1, new int[0], r.stop(), false, 0);
        }).start();
        server = new HttpServer(new HttpServer.Config("127.0.0.1", 0, "tiny", null, ServerDefaults.mlxLm(), "fp"),
                engine, id -> "t" + id).start();
    }

    @AfterEach
    void stop() {
        server.close();
        engine.close();
    }

    private HttpResponse<String> post(String route, String body) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + route))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /**
     * Each case: route|body, then the choice plan must see: mode|name|parallel|schemaKey|strict
     * (whether the tool reaches plan with {@code "strict": true}).
     */
    @ParameterizedTest
    @ValueSource(strings = {
        CHAT + "}}],\"tool_choice\":\"required\"}|REQUIRED||true|function.parameters|false",
        CHAT + "}}],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"place_order\"}},"
                + "\"parallel_tool_calls\":false}|NAMED|place_order|false|function.parameters|false",
        CHAT + ",\"strict\":true}}]}|AUTO||true|function.parameters|true",
        CHAT + "}}],\"parallel_tool_calls\":false}|AUTO||false|function.parameters|false",
        CHAT + "}}]}|AUTO||true|function.parameters|false",
        MESSAGES + "}],\"tool_choice\":{\"type\":\"any\"}}|REQUIRED||true|input_schema|false",
        MESSAGES + "}],\"tool_choice\":{\"type\":\"tool\",\"name\":\"place_order\",\"disable_parallel_tool_use\":true}}"
                + "|NAMED|place_order|false|input_schema|false",
        MESSAGES + "}],\"tool_choice\":{\"type\":\"auto\",\"disable_parallel_tool_use\":true}}"
                + "|AUTO||false|input_schema|false",
        MESSAGES + ",\"strict\":true}]}|AUTO||true|input_schema|true",
        RESPONSES + "}],\"tool_choice\":\"required\"}|REQUIRED||true|parameters|false",
        RESPONSES + "}],\"tool_choice\":{\"type\":\"function\",\"name\":\"place_order\"}}|NAMED|place_order|true"
                + "|parameters|false",
        RESPONSES + "}],\"parallel_tool_calls\":false}|AUTO||false|parameters|false",
        RESPONSES + ",\"strict\":true}]}|AUTO||true|parameters|true",
    })
    @SuppressWarnings("unchecked")
    void anEnforcedToolChoiceReachesPlan(String spec) throws Exception {
        String[] p = spec.split("\\|", -1);
        HttpResponse<String> r = post(p[0], p[1]);
        assertEquals(200, r.statusCode(), r.body());
        GenerationRequest req = planned.get();
        assertNotNull(req);
        ToolChoiceSpec expected = new ToolChoiceSpec(ToolChoiceSpec.Mode.valueOf(p[2]), p[3].isEmpty() ? null : p[3],
                Boolean.parseBoolean(p[4]), p[5]);
        assertEquals(expected, req.toolChoice(), p[1]);
        List<Map<String, Object>> tools = ((Prompt.Chat) req.prompt()).tools();
        Map<String, Object> fn = (Map<String, Object>) tools.getFirst().get("function");
        assertEquals(Boolean.parseBoolean(p[6]), Boolean.TRUE.equals(fn.get("strict")), fn.toString());
    }

    @Test
    void theResponseEchoesParallelToolCallsAsSent() throws Exception {
        String[] p = (RESPONSES + "}],\"parallel_tool_calls\":false}").split("\\|", 2);
        HttpResponse<String> r = post(p[0], p[1]);
        assertEquals(200, r.statusCode(), r.body());
        JsonNode body = JSON.readTree(r.body());
        assertTrue(body.has("parallel_tool_calls"), r.body());
        assertEquals(false, body.get("parallel_tool_calls").booleanValue(), r.body());
    }
}
