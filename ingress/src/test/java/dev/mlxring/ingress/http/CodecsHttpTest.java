package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.mlx.PythonScript;
import dev.mlxring.pipeline.ChatMessage;
import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.EngineConfig;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.Executor;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import dev.mlxring.sink.DetokenizingSinks;
import dev.mlxring.sink.ThinkMarkers;
import dev.mlxring.sink.tools.ToolCallParsers;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The Anthropic and Responses codecs over a scripted model (no MLX): the real sink (think
 * markers, json_tools parser, stop strings) turns a scripted reply into reasoning, text and a
 * tool call, and the official {@code anthropic} and {@code openai} clients run tool-use round
 * trips against it; bad input per route, the API key, overload and disconnects.
 */
class CodecsHttpTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private static final List<String> VOCAB = List.of(
            "<eos>",
            "<think>",
            "Hmm, weather.",
            "</think>",
            "Let me check.",
            "<tool_call>",
            "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\", \"days\": 3}}\n",
            "</tool_call>",
            "It is sunny",
            " in Zürich.",
            " STOP here",
            " and on");
    /** Before a tool result: reasoning, text, a call. */
    private static final int[] ASKS = {1, 2, 3, 4, 5, 6, 7};
    /** After one: the answer. */
    private static final int[] ANSWERS = {8, 9, 10};

    /** The chat messages each request's prompt held, by request id (what the template would render). */
    private final Map<String, Prompt.Chat> prompts = new ConcurrentHashMap<>();

    private Engine engine;
    private HttpServer server;
    private HttpServer keyed;

    private void start(EngineConfig config, Executor executor) {
        DetokenizingSinks sinks = DetokenizingSinks.builder(new ListDecoder(VOCAB))
                .thinkMarkers(new ThinkMarkers("<think>", "</think>", new int[] {1}, new int[] {3}))
                .toolParser(ToolCallParsers.forType("json_tools").orElseThrow())
                .tokenLevelStops(false)
                .build();
        engine = Engine.builder()
                .config(config)
                // one prompt token per message: count_tokens has something to count
                .preparer(r -> {
                    int n = r.prompt() instanceof Prompt.Chat c ? c.messages().size() : 1;
                    return new PreparedPrompt(new int[n], n, r.prompt() instanceof Prompt.Chat);
                })
                .planner((r, p) -> {
                    StageDoubles.refuseConstraint(r);
                    List<Map<String, Object>> tools = List.of();
                    if (r.prompt() instanceof Prompt.Chat c) {
                        prompts.put(r.id(), c);
                        tools = c.tools();
                    }
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
                .executor(executor)
                .sinks(sinks)
                .start();
        server = new HttpServer(
                        new HttpServer.Config("127.0.0.1", 0, "tiny", null, ServerDefaults.mlxLm(), "fp"),
                        engine,
                        VOCAB::get)
                .start();
        keyed = new HttpServer(
                        new HttpServer.Config("127.0.0.1", 0, "tiny", "sekret", ServerDefaults.mlxLm(), "fp"),
                        engine,
                        VOCAB::get)
                .start();
    }

    /** The reply depends on whether the conversation ends with a tool result. */
    private int[] script(ExecutionPlan plan) {
        Prompt.Chat c = prompts.get(plan.requestId());
        return c != null && c.messages().getLast().role().equals("tool") ? ANSWERS : ASKS;
    }

    private void startScripted() {
        start(EngineConfig.defaults(), new ScriptedExecutor(this::script));
    }

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
            keyed.close();
            engine.close();
        }
    }

    private HttpResponse<String> send(HttpServer s, String method, String path, String body, String... headers)
            throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + path))
                .method(
                        method,
                        body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (headers.length > 0) {
            b.headers(headers);
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> post(String path, String body) throws Exception {
        return send(server, "POST", path, body);
    }

    /** Anthropic's error: status, {"type": "error", "error": {"type", "message"}}, the message naming the field. */
    private static void assertAnthropicError(HttpResponse<String> r, int status, String type, String part)
            throws Exception {
        assertEquals(status, r.statusCode(), r.body());
        JsonNode b = JSON.readTree(r.body());
        assertEquals("error", b.get("type").asText(), r.body());
        assertEquals(type, b.get("error").get("type").asText(), r.body());
        assertTrue(b.get("error").get("message").asText().contains(part), r.body());
    }

    private static void assertOpenAiError(HttpResponse<String> r, int status, String param, String part)
            throws Exception {
        assertEquals(status, r.statusCode(), r.body());
        JsonNode e = JSON.readTree(r.body()).get("error");
        assertTrue(e != null && e.has("type"), r.body());
        if (param != null) {
            assertEquals(param, e.get("param").asText(), r.body());
        }
        assertTrue(e.get("message").asText().contains(part), r.body());
    }

    @Test
    void officialClientsRoundTripToolCalls() throws Exception {
        startScripted();
        JsonNode out = JSON.readTree(PythonScript.run(
                "e2e/codec_tool_calls.py", 180, List.of("--base-url", "http://127.0.0.1:" + server.port())));
        for (String mode : List.of("claude_round_trip", "claude_stream", "responses_round_trip", "responses_stream")) {
            assertFalse(
                    out.get(mode).has("error"),
                    mode + ": " + out.get(mode).path("error").asText());
        }
        String call = "{\"city\": \"Zürich\", \"days\": 3}";

        JsonNode claude = out.get("claude_round_trip");
        JsonNode first = claude.get("first");
        assertEquals("thinking", first.get(0).get("type").asText(), first.toString());
        assertEquals("Hmm, weather.", first.get(0).get("thinking").asText());
        assertEquals("Let me check.", first.get(1).get("text").asText());
        assertEquals("get_weather", first.get(2).get("name").asText());
        assertEquals(JSON.readTree(call), first.get(2).get("input"));
        assertEquals("tool_use", claude.get("first_stop").asText());
        assertEquals(
                "It is sunny in Zürich. STOP here",
                claude.get("second").get(0).get("text").asText());
        assertEquals("end_turn", claude.get("second_stop").asText());
        assertEquals(
                "It is sunny in Zürich. ",
                claude.get("stopped").get(0).get("text").asText());
        assertEquals("stop_sequence", claude.get("stopped_stop").asText());
        assertEquals("STOP", claude.get("stop_sequence").asText());
        assertEquals(1, claude.get("usage").get("input_tokens").asInt(), "one message, one scripted prompt token");

        // What the chat template was given for the round trip: the assistant's call (arguments
        // as an object) and reasoning, then the tool result as a tool message for that call.
        String useId = first.get(2).get("id").asText();
        Prompt.Chat second = prompts.values().stream()
                .filter(c -> c.messages().size() == 3
                        && useId.equals(c.messages().get(2).extra().get("tool_call_id")))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no round-trip prompt: " + prompts.values()));
        ChatMessage assistant = second.messages().get(1);
        assertEquals("assistant", assistant.role());
        assertEquals("Let me check.", assistant.content());
        assertEquals("Hmm, weather.", assistant.extra().get("reasoning_content"));
        Map<?, ?> tc = (Map<?, ?>) ((List<?>) assistant.extra().get("tool_calls")).getFirst();
        assertEquals(
                Map.of("name", "get_weather", "arguments", Map.of("city", "Zürich", "days", 3)), tc.get("function"));
        ChatMessage tool = second.messages().get(2);
        assertEquals("tool", tool.role());
        assertEquals("sunny, 21 C", tool.content());
        assertEquals("get_weather", tool.extra().get("name"));
        assertEquals("get_weather", ((Map<?, ?>) second.tools().getFirst().get("function")).get("name"));

        JsonNode stream = out.get("claude_stream");
        List<String> events = new ArrayList<>();
        stream.get("events").forEach(e -> events.add(e.asText()));
        assertEquals("message_start", events.getFirst());
        assertTrue(
                events.containsAll(List.of(
                        "thinking", "text", "input_json", "content_block_stop", "message_delta", "message_stop")),
                events.toString());
        assertEquals("tool_use", stream.get("stop").asText());
        assertEquals(
                JSON.readTree(call),
                stream.get("input_snapshots").get(stream.get("input_snapshots").size() - 1));
        assertEquals(stripIds(first), stripIds(stream.get("final")));

        JsonNode resp = out.get("responses_round_trip");
        JsonNode items = resp.get("first");
        assertEquals("reasoning", items.get(0).get("type").asText(), items.toString());
        assertEquals("Hmm, weather.", items.get(0).get("text").asText());
        assertEquals("Let me check.", items.get(1).get("text").asText());
        assertEquals("function_call", items.get(2).get("type").asText());
        assertEquals(call, items.get(2).get("arguments").asText(), "json.dumps, as the chat API's arguments");
        assertEquals("completed", resp.get("first_status").asText());
        assertEquals(
                "It is sunny in Zürich. STOP here", resp.get("chained_text").asText());
        assertEquals("It is sunny in Zürich. STOP here", resp.get("manual_text").asText());

        JsonNode rs = out.get("responses_stream");
        List<Integer> seqs = new ArrayList<>();
        rs.get("sequence_numbers").forEach(n -> seqs.add(n.asInt()));
        assertEquals(IntStream.range(0, seqs.size()).boxed().toList(), seqs);
        List<String> kinds = new ArrayList<>();
        rs.get("events").forEach(e -> kinds.add(e.asText()));
        assertTrue(
                kinds.containsAll(List.of(
                        "response.created",
                        "response.in_progress",
                        "response.output_item.added",
                        "response.reasoning_text.delta",
                        "response.output_text.delta",
                        "response.output_text.done",
                        "response.function_call_arguments.delta",
                        "response.function_call_arguments.done",
                        "response.output_item.done",
                        "response.completed")),
                kinds.toString());
        assertEquals(call, rs.get("arguments").asText());
        assertEquals(stripIds(items), stripIds(rs.get("final")));
    }

    private static JsonNode stripIds(JsonNode blocks) {
        JsonNode copy = blocks.deepCopy();
        copy.forEach(b -> {
            ((com.fasterxml.jackson.databind.node.ObjectNode) b).remove("id");
            ((com.fasterxml.jackson.databind.node.ObjectNode) b).remove("call_id");
        });
        return copy;
    }

    @Test
    void badInputAnswersInEachApisShape() throws Exception {
        startScripted();
        String msg = "/v1/messages";
        String hi = "[{\"role\":\"user\",\"content\":\"hi\"}]";
        assertAnthropicError(
                post(msg, "{\"model\":\"tiny\",\"messages\":" + hi + "}"),
                400,
                "invalid_request_error",
                "max_tokens is required");
        assertAnthropicError(post(msg, "{not json"), 400, "invalid_request_error", "not valid JSON");
        assertAnthropicError(post(msg, "[1]"), 400, "invalid_request_error", "JSON object");
        assertAnthropicError(
                post(
                        msg,
                        "{\"model\":\"tiny\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\","
                                + "\"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}]}]}"),
                400,
                "invalid_request_error",
                "messages[0].content[0].type 'tool_use' is not supported");
        assertAnthropicError(
                post(
                        msg,
                        "{\"model\":\"tiny\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\","
                                + "\"content\":[{\"type\":\"image\",\"source\":{}}]}]}"),
                400,
                "invalid_request_error",
                "images and documents are not supported");
        assertAnthropicError(
                post(
                        msg,
                        "{\"model\":\"tiny\",\"max_tokens\":4,\"messages\":[{\"role\":\"system\","
                                + "\"content\":\"x\"}]}"),
                400,
                "invalid_request_error",
                "messages[0].role");
        assertAnthropicError(
                post(msg, "{\"model\":\"tiny\",\"max_tokens\":0,\"messages\":" + hi + "}"),
                400,
                "invalid_request_error",
                "max_tokens must be at least 1");
        assertAnthropicError(
                post(msg, "{\"model\":\"tiny\",\"max_tokens\":4,\"stop_sequences\":\"x\",\"messages\":" + hi + "}"),
                400,
                "invalid_request_error",
                "stop_sequences must be an array");
        assertAnthropicError(
                post(
                        msg,
                        "{\"model\":\"tiny\",\"max_tokens\":4,\"tools\":[{\"type\":\"web_search_1\","
                                + "\"name\":\"w\"}],\"messages\":" + hi + "}"),
                400,
                "invalid_request_error",
                "tools[0].type");
        assertAnthropicError(
                post(
                        msg,
                        "{\"model\":\"tiny\",\"max_tokens\":4,\"tool_choice\":{\"type\":\"tool\","
                                + "\"name\":\"nope\"},\"messages\":" + hi + "}"),
                400,
                "invalid_request_error",
                "nope");
        assertAnthropicError(
                post(msg, "{\"model\":\"gpt-9\",\"max_tokens\":4,\"messages\":" + hi + "}"),
                404,
                "not_found_error",
                "gpt-9");
        assertAnthropicError(send(server, "GET", msg, null), 405, "invalid_request_error", "POST");
        assertAnthropicError(
                post(msg + "/count_tokens", "{\"model\":\"tiny\"}"),
                400,
                "invalid_request_error",
                "messages is required");
        assertAnthropicError(post(msg + "/nothing", "{}"), 404, "not_found_error", "unknown route");
        HttpResponse<String> count =
                post(msg + "/count_tokens", "{\"model\":\"tiny\",\"system\":\"s\",\"messages\":" + hi + "}");
        assertEquals(200, count.statusCode(), count.body());
        assertEquals(2, JSON.readTree(count.body()).get("input_tokens").asInt(), "system + user: two scripted tokens");

        String resp = "/v1/responses";
        assertOpenAiError(post(resp, "{not json"), 400, null, "not valid JSON");
        assertOpenAiError(post(resp, "{}"), 400, "input", "input is required");
        assertOpenAiError(
                post(resp, "{\"input\":\"x\",\"previous_response_id\":\"resp_nope\"}"),
                404,
                "previous_response_id",
                "resp_nope");
        assertOpenAiError(
                post(resp, "{\"input\":[{\"type\":\"web_search_call\"}]}"), 400, "input[0].type", "web_search_call");
        assertOpenAiError(
                post(
                        resp,
                        "{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\","
                                + "\"image_url\":\"x\"}]}]}"),
                400,
                "input[0].content[0].type",
                "images and files are not supported");
        assertOpenAiError(
                post(
                        resp,
                        "{\"input\":[{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\","
                                + "\"arguments\":\"{oops\"}]}"),
                400,
                "input[0].arguments",
                "not valid JSON");
        assertOpenAiError(
                post(resp, "{\"input\":\"x\",\"max_output_tokens\":\"many\"}"), 400, "max_output_tokens", "integer");
        assertOpenAiError(
                post(resp, "{\"input\":\"x\",\"tools\":[{\"type\":\"file_search\"}]}"),
                400,
                "tools[0].type",
                "file_search");
        // Options not implemented are refused, not answered as if honoured.
        assertOpenAiError(
                post(
                        resp,
                        "{\"input\":\"x\",\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"n\","
                                + "\"schema\":{\"type\":\"object\"}}}}"),
                400,
                "text.format.schema",
                "json_schema");
        assertOpenAiError(
                post(resp, "{\"input\":\"x\",\"text\":{\"format\":{\"type\":\"json_object\"}}}"),
                400,
                "text.format",
                "not supported");
        assertOpenAiError(post(resp, "{\"input\":\"x\",\"text\":{\"format\":\"x\"}}"), 400, "text.format", "object");
        assertOpenAiError(post(resp, "{\"input\":\"x\",\"background\":true}"), 400, "background", "not supported");
        assertOpenAiError(post(resp, "{\"input\":\"x\",\"truncation\":\"auto\"}"), 400, "truncation", "'auto'");
        assertOpenAiError(
                post(resp, "{\"input\":\"x\",\"conversation\":\"conv_1\"}"),
                400,
                "conversation",
                "previous_response_id");
        assertEquals(
                200,
                post(
                                resp,
                                "{\"input\":\"x\",\"max_output_tokens\":1,\"text\":{\"format\":{\"type\":"
                                        + "\"text\"},\"verbosity\":\"low\"},\"background\":false,\"truncation\":\"disabled\",\"include\":"
                                        + "[\"reasoning.encrypted_content\"]}")
                        .statusCode(),
                "the defaults and include are accepted");
        assertOpenAiError(send(server, "GET", resp + "/resp_nope", null), 404, null, "resp_nope");
        assertOpenAiError(send(server, "DELETE", resp + "/resp_nope", null), 404, null, "resp_nope");
        HttpResponse<String> put = send(server, "PUT", resp + "/resp_nope", "{}");
        assertOpenAiError(put, 405, null, "GET or DELETE");
        assertEquals("GET, DELETE, HEAD", put.headers().firstValue("Allow").orElse(null));
        long big = HttpServer.DEFAULT_MAX_BODY_BYTES + 1;
        String tooBig = DeclaredBody.post(server.port(), resp, big);
        assertTrue(tooBig.startsWith("HTTP/1.1 413"), tooBig);
        assertTrue(
                JSON.readTree(DeclaredBody.body(tooBig))
                        .at("/error/message")
                        .asText()
                        .contains("accepts at most"),
                tooBig);
        tooBig = DeclaredBody.post(server.port(), msg, big);
        assertTrue(tooBig.startsWith("HTTP/1.1 413"), tooBig);
        JsonNode anthropic = JSON.readTree(DeclaredBody.body(tooBig));
        assertEquals("error", anthropic.get("type").asText(), tooBig);
        assertEquals("request_too_large", anthropic.at("/error/type").asText(), tooBig);
        assertAnthropicError(
                send(server, "POST", msg, "{}", "Content-Type", "text/plain"),
                415,
                "invalid_request_error",
                "Content-Type");
        assertEquals(0, engine.admittedCount(), "nothing left running");
    }

    @Test
    void apiKeyOnEveryRouteAsBearerOrXApiKey() throws Exception {
        startScripted();
        String body = "{\"model\":\"tiny\",\"max_tokens\":3,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
        assertAnthropicError(send(keyed, "POST", "/v1/messages", body), 401, "authentication_error", "API key");
        assertAnthropicError(
                send(keyed, "POST", "/v1/messages", body, "x-api-key", "wrong"),
                401,
                "authentication_error",
                "API key");
        assertEquals(
                200,
                send(keyed, "POST", "/v1/messages", body, "x-api-key", "sekret", "anthropic-version", "2023-06-01")
                        .statusCode());
        assertEquals(
                200,
                send(keyed, "POST", "/v1/messages", body, "Authorization", "Bearer sekret")
                        .statusCode());
        String r = "{\"input\":\"hi\",\"max_output_tokens\":3}";
        assertOpenAiError(send(keyed, "POST", "/v1/responses", r), 401, null, "API key");
        assertEquals(
                200,
                send(keyed, "POST", "/v1/responses", r, "Authorization", "Bearer sekret")
                        .statusCode());
        assertEquals(
                200,
                send(keyed, "POST", "/v1/chat/completions", body, "x-api-key", "sekret")
                        .statusCode());
    }

    @Test
    void anthropicStreamSplitsCacheReadsTheSameWayAtStartAndEnd() throws Exception {
        ScriptedExecutor exec = new ScriptedExecutor(this::script);
        exec.cachedTokens = 2;
        start(EngineConfig.defaults(), exec);
        HttpResponse<String> r = post(
                "/v1/messages",
                "{\"model\":\"tiny\",\"max_tokens\":3,\"stream\":true,"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"},"
                        + "{\"role\":\"user\",\"content\":\"c\"}]}");
        assertEquals(200, r.statusCode(), r.body());
        JsonNode start = null;
        JsonNode delta = null;
        for (String line : r.body().split("\n")) {
            if (line.startsWith("data: ")) {
                JsonNode e = JSON.readTree(line.substring(6));
                if (e.path("type").asText().equals("message_start")) {
                    start = e.get("message").get("usage");
                } else if (e.path("type").asText().equals("message_delta")) {
                    delta = e.get("usage");
                }
            }
        }
        assertTrue(start != null && delta != null, r.body());
        assertEquals(1, start.get("input_tokens").asInt(), "three prompt tokens, two read from the cache: " + start);
        assertEquals(2, start.get("cache_read_input_tokens").asInt(), start.toString());
        assertEquals(start.get("input_tokens"), delta.get("input_tokens"), delta.toString());
        assertEquals(start.get("cache_read_input_tokens"), delta.get("cache_read_input_tokens"), delta.toString());
    }

    @Test
    void maxTokensIsIncompleteAndTheStoreIsReadable() throws Exception {
        startScripted();
        HttpResponse<String> r = post("/v1/responses", "{\"input\":\"hi\",\"max_output_tokens\":5}");
        JsonNode body = JSON.readTree(r.body());
        assertEquals("incomplete", body.get("status").asText(), r.body());
        assertEquals(
                "max_output_tokens",
                body.get("incomplete_details").get("reason").asText());
        JsonNode output = body.get("output");
        assertEquals(
                "incomplete", output.get(output.size() - 1).get("status").asText(), "the item cut short: " + r.body());
        for (int i = 0; i < output.size() - 1; i++) {
            assertEquals("completed", output.get(i).get("status").asText(), "item " + i + " ended before the cut");
        }
        assertEquals(5, body.get("usage").get("output_tokens").asInt());
        assertEquals(
                1,
                body.get("usage")
                        .get("output_tokens_details")
                        .get("reasoning_tokens")
                        .asInt(),
                "the one token whose text is reasoning ('Hmm, weather.'; the markers carry none)");
        String id = body.get("id").asText();
        assertEquals(
                body,
                JSON.readTree(send(server, "GET", "/v1/responses/" + id, null).body()));
        JsonNode del = JSON.readTree(
                send(server, "DELETE", "/v1/responses/" + id, null).body());
        assertTrue(del.get("deleted").asBoolean());
        assertEquals(404, send(server, "GET", "/v1/responses/" + id, null).statusCode());
        HttpResponse<String> m = post(
                "/v1/messages",
                "{\"model\":\"tiny\",\"max_tokens\":5,\"messages\":" + "[{\"role\":\"user\",\"content\":\"hi\"}]}");
        assertEquals("max_tokens", JSON.readTree(m.body()).get("stop_reason").asText(), m.body());
        HttpResponse<String> unstored =
                post("/v1/responses", "{\"input\":\"hi\",\"max_output_tokens\":2," + "\"store\":false}");
        assertEquals(
                404,
                send(
                                server,
                                "GET",
                                "/v1/responses/"
                                        + JSON.readTree(unstored.body())
                                                .get("id")
                                                .asText(),
                                null)
                        .statusCode());
    }

    /** One token every 20 ms for a long time: requests stay running while the test acts. */
    private static Executor slow() {
        return new ScriptedExecutor(
                plan -> IntStream.range(0, 100_000).map(i -> 8 + i % 4).toArray(), 20);
    }

    @Test
    void overloadAndDisconnectWorkTheSameOnTheNewRoutes() throws Exception {
        start(EngineConfig.defaults().withMaxQueued(1), slow());
        for (String[] route : new String[][] {
            {
                "/v1/messages",
                "{\"model\":\"tiny\",\"max_tokens\":8000,\"stream\":true,\"messages\":"
                        + "[{\"role\":\"user\",\"content\":\"hi\"}]}"
            },
            {"/v1/responses", "{\"input\":\"hi\",\"max_output_tokens\":8000,\"stream\":true}"}
        }) {
            HttpResponse<InputStream> running = HTTP.send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + route[0]))
                            .POST(HttpRequest.BodyPublishers.ofString(route[1]))
                            .build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            assertEquals(200, running.statusCode());
            InputStream in = running.body();
            byte[] buf = new byte[256];
            int total = 0;
            while (total < 600) {
                int n = in.read(buf);
                assertTrue(n > 0, "stream ended early");
                total += n;
            }
            // The one admission is taken: the next request is refused with the API's overload error.
            HttpResponse<String> refused = post(route[0], route[1].replace("\"stream\":true", "\"stream\":false"));
            if (route[0].equals("/v1/messages")) {
                assertAnthropicError(refused, 529, "overloaded_error", "capacity");
            } else {
                assertOpenAiError(refused, 503, null, "capacity");
            }
            assertEquals("1", refused.headers().firstValue("Retry-After").orElse(null), route[0]);
            in.close();
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (engine.admittedCount() > 0 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertEquals(0, engine.admittedCount(), route[0] + ": the disconnected session still holds its admission");
        }
    }
}
