package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.mlx.PythonScript;
import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.Executor;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.TokenDecoder;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import dev.mlxring.sink.DetokenizingSinks;
import dev.mlxring.sink.tools.ToolCallParsers;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Tool calls over HTTP as mlx_lm.server returns them: a scripted executor emits a reply with two
 * json_tools calls, the real sink (tool state, json_tools parser) parses them, and the responses
 * carry {@code tool_calls} ({@code function.name}, {@code function.arguments} as Python's
 * {@code json.dumps(..., ensure_ascii=False)}, {@code type}, {@code id}, and {@code index} when
 * streaming) with finish reason {@code tool_calls}.
 */
class ToolCallHttpTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** One token per string; decode concatenates (the naive detokenizer). */
    private static final List<String> VOCAB = List.of(
            "<eos>",
            "Let me check.",
            "<tool_call>",
            "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\", \"days\": 3, \"ratio\": 0.00001, "
                    + "\"ok\": true, \"tags\": [\"a\\\"b\", null], \"big\": 12345678901234567890, \"f\": 2.0}}\n",
            "</tool_call>",
            "{\"name\": \"lookup\", \"arguments\": {}, \"id\": \"call_9\"}",
            "{\"name\": \"broken\", \"arguments\": ");
    /** The reply: text, a call, a call with its own id, then EOS. */
    private static final int[] SCRIPT = {1, 2, 3, 4, 2, 5, 4};

    private static final String ARGS = "{\"city\": \"Zürich\", \"days\": 3, \"ratio\": 1e-05, \"ok\": true, "
            + "\"tags\": [\"a\\\"b\", null], \"big\": 12345678901234567890, \"f\": 2.0}";

    @RegisterExtension
    final ServedEngine server = ServedEngine.eachTest(this::engine, ServedEngine.mlxLm(), id -> VOCAB.get(id));

    private final List<List<Map<String, Object>>> toolsSeen = new CopyOnWriteArrayList<>();
    private volatile int[] script = SCRIPT;

    private static final TokenDecoder DECODER = new ListDecoder(VOCAB);

    /** Emits the script, then EOS ("stop"); "length" at max_tokens. */
    private final Executor scripted = new ScriptedExecutor(plan -> script);

    /** The stage doubles with the real detokenizing sinks and json_tools parser; the planner records the tools. */
    private Engine.Builder engine() {
        DetokenizingSinks sinks = DetokenizingSinks.builder(DECODER)
                .toolParser(ToolCallParsers.forType("json_tools").orElseThrow())
                .build();
        return Engine.builder()
                .preparer(r -> new PreparedPrompt(new int[] {7, 8}, 2, r.prompt() instanceof Prompt.Chat))
                .planner((r, p) -> {
                    StageDoubles.refuseConstraint(r);
                    List<Map<String, Object>> tools = r.prompt() instanceof Prompt.Chat c ? c.tools() : List.of();
                    toolsSeen.add(tools);
                    return ExecutionPlan.builder()
                            .requestId(r.id())
                            .prompt(p)
                            .sampling(SamplingParams.GREEDY)
                            .maxTokens(r.maxTokens() == null ? 100 : r.maxTokens())
                            .stopTokenIds(new int[] {0})
                            .stopStrings(r.stop())
                            .tools(tools)
                            .build();
                })
                .executor(scripted)
                .sinks(sinks);
    }

    private static final String TOOLS = "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
            + "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}}}}]";

    private static String chat(boolean stream, String extra) {
        return "{\"messages\": [{\"role\": \"user\", \"content\": \"Weather?\"}], \"tools\": " + TOOLS
                + ", \"stream\": " + stream + extra + "}";
    }

    private static List<JsonNode> events(String body) throws Exception {
        List<JsonNode> out = new ArrayList<>();
        for (String l : body.split("\n\n")) {
            assertTrue(l.startsWith("data: "), l);
            if (!l.equals("data: [DONE]")) {
                out.add(JSON.readTree(l.substring(6)));
            }
        }
        return out;
    }

    private static void assertFieldOrder(JsonNode call, String... names) {
        List<String> got = new ArrayList<>();
        call.fieldNames().forEachRemaining(got::add);
        assertEquals(List.of(names), got);
    }

    @Test
    void nonStreamingChatCarriesToolCalls() throws Exception {
        HttpResponse<String> r = server.post("/v1/chat/completions", chat(false, ""));
        assertEquals(200, r.statusCode(), r.body());
        JsonNode c = JSON.readTree(r.body()).get("choices").get(0);
        assertEquals("tool_calls", c.get("finish_reason").asText());
        JsonNode m = c.get("message");
        assertFieldOrder(m, "role", "content", "tool_calls");
        assertEquals("Let me check.", m.get("content").asText());
        JsonNode calls = m.get("tool_calls");
        assertEquals(2, calls.size());
        JsonNode first = calls.get(0);
        assertFieldOrder(first, "function", "type", "id");
        assertFieldOrder(first.get("function"), "name", "arguments");
        assertEquals("get_weather", first.get("function").get("name").asText());
        assertEquals(ARGS, first.get("function").get("arguments").asText(), "Python's json.dumps, ensure_ascii=False");
        assertEquals("function", first.get("type").asText());
        UUID.fromString(first.get("id").asText()); // no id from the model: a random UUID
        assertEquals("lookup", calls.get(1).get("function").get("name").asText());
        assertEquals("{}", calls.get(1).get("function").get("arguments").asText());
        assertEquals("call_9", calls.get(1).get("id").asText());
        assertFalse(first.has("index"), "index only when streaming");
        assertEquals(
                7, JSON.readTree(r.body()).get("usage").get("completion_tokens").asInt());
        assertEquals(JSON.readValue(TOOLS, List.class), toolsSeen.getLast(), "the request's tools reach the plan");
    }

    @Test
    void streamingChatNumbersToolCalls() throws Exception {
        HttpResponse<String> r = server.post("/v1/chat/completions", chat(true, ""));
        assertEquals(200, r.statusCode(), r.body());
        List<JsonNode> events = events(r.body());
        List<JsonNode> calls = new ArrayList<>();
        StringBuilder content = new StringBuilder();
        for (JsonNode e : events.subList(0, events.size() - 1)) {
            JsonNode d = e.get("choices").get(0).get("delta");
            assertEquals("assistant", d.get("role").asText());
            if (d.has("content")) {
                content.append(d.get("content").asText());
            }
            if (d.has("tool_calls")) {
                assertFieldOrder(d, "role", "tool_calls");
                d.get("tool_calls").forEach(calls::add);
            }
            assertTrue(e.get("choices").get(0).get("finish_reason").isNull());
        }
        assertEquals("Let me check.", content.toString());
        assertEquals(2, calls.size());
        assertFieldOrder(calls.get(0), "function", "type", "id", "index");
        assertEquals(0, calls.get(0).get("index").asInt());
        assertEquals(1, calls.get(1).get("index").asInt());
        assertEquals(ARGS, calls.get(0).get("function").get("arguments").asText());
        assertEquals("call_9", calls.get(1).get("id").asText());
        assertEquals(
                "tool_calls",
                events.getLast().get("choices").get(0).get("finish_reason").asText());
    }

    @Test
    void officialOpenAiClientReadsTheCalls() throws Exception {
        // The official SDK, as an agent harness uses it: non-streaming, a raw stream merged by
        // delta index, and the SDK's stream helper, which accumulates and validates the calls.
        JsonNode out = JSON.readTree(PythonScript.run(
                "e2e/openai_tool_calls.py", 120, List.of("--base-url", "http://127.0.0.1:" + server.port() + "/v1")));
        for (String mode : List.of("create", "raw_stream", "stream_helper")) {
            JsonNode r = out.get(mode);
            assertFalse(r.has("error"), mode + ": " + r.path("error").asText());
            assertEquals("tool_calls", r.get("finish_reason").asText(), mode);
            assertEquals("Let me check.", r.get("content").asText(), mode);
            JsonNode calls = r.get("tool_calls");
            assertEquals(2, calls.size(), mode);
            assertEquals("get_weather", calls.get(0).get("name").asText(), mode);
            assertEquals(ARGS, calls.get(0).get("arguments").asText(), mode);
            UUID.fromString(calls.get(0).get("id").asText());
            assertEquals("lookup", calls.get(1).get("name").asText(), mode);
            assertEquals("{}", calls.get(1).get("arguments").asText(), mode);
            assertEquals("call_9", calls.get(1).get("id").asText(), mode);
        }
    }

    @Test
    void tokenLimitParsesWhatTheOpenCallHolds() throws Exception {
        // Cut before the end marker: mlx_lm.server parses the tool text after its loop; here it
        // is complete JSON, so the call is returned, and the finish reason stays length.
        HttpResponse<String> r = server.post("/v1/chat/completions", chat(false, ", \"max_tokens\": 3"));
        JsonNode c = JSON.readTree(r.body()).get("choices").get(0);
        assertEquals("length", c.get("finish_reason").asText());
        assertEquals(
                ARGS,
                c.get("message")
                        .get("tool_calls")
                        .get(0)
                        .get("function")
                        .get("arguments")
                        .asText());
        assertEquals("Let me check.", c.get("message").get("content").asText());
        // Cut inside the JSON: the call is dropped.
        script = new int[] {1, 2, 6, 4};
        JsonNode cut = JSON.readTree(server.post("/v1/chat/completions", chat(false, ", \"max_tokens\": 3"))
                        .body())
                .get("choices")
                .get(0);
        assertEquals("length", cut.get("finish_reason").asText());
        assertFalse(cut.get("message").has("tool_calls"));
    }

    @Test
    void malformedCallIsDroppedButCounts() throws Exception {
        script = new int[] {2, 6, 4};
        HttpResponse<String> r = server.post("/v1/chat/completions", chat(false, ""));
        JsonNode c = JSON.readTree(r.body()).get("choices").get(0);
        assertEquals("tool_calls", c.get("finish_reason").asText(), "mlx_lm.server: a call was made");
        assertFalse(c.get("message").has("tool_calls"));
        assertTrue(c.get("message").get("content").isNull());
    }

    @Test
    void textCompletionsReturnOnlyText() throws Exception {
        // mlx_lm.server's text_completion choice has only "text": the markup is stripped, the
        // calls are not returned, the finish reason still says tool_calls.
        HttpResponse<String> r = server.post("/v1/completions", "{\"prompt\": \"x\"}");
        JsonNode c = JSON.readTree(r.body()).get("choices").get(0);
        assertEquals("Let me check.", c.get("text").asText());
        assertEquals("tool_calls", c.get("finish_reason").asText());
        assertNull(c.get("tool_calls"));
        assertNull(c.get("message"));
        HttpResponse<String> s = server.post("/v1/completions", "{\"prompt\": \"x\", \"stream\": true}");
        List<JsonNode> events = events(s.body());
        for (JsonNode e : events) {
            assertFalse(e.get("choices").get(0).has("tool_calls"));
        }
        assertEquals(
                "tool_calls",
                events.getLast().get("choices").get(0).get("finish_reason").asText());
    }
}
