package dev.mlxring.ingress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.engine.LocalEngine;
import dev.mlxring.ingress.http.HttpServer;
import dev.mlxring.ingress.http.ServerDefaults;
import dev.mlxring.mlx.ProjectHome;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Forced tool calls end to end over HTTP, on the default model given a json_tools chat template
 * ({@code tool_parser_type} in a copy of its tokenizer_config.json; the weights are the default
 * model's): the tool-call grammar holds greedy output to a call of the forced tool with arguments
 * valid against its schema, whatever the model would have written, and each API returns it as its
 * tool call with its tool-call stop reason. The default model itself has no tool format: a forced
 * choice is refused naming {@code tool_choice}.
 */
class ForcedToolCallEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private static final Path DEFAULT_MODEL = ProjectHome.get().resolve("models/smollm2-135m-instruct");
    private static final String SCHEMA = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\","
            + "\"maxLength\":24},\"days\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":14}},"
            + "\"required\":[\"city\",\"days\"],\"additionalProperties\":false}";
    private static final String TEMPLATE = "{%- if tools %}<|im_start|>system\nYou can call functions:\n<tools>\n"
            + "{%- for tool in tools %}\n{{ tool | tojson }}\n{%- endfor %}\n</tools>\nTo call one, write "
            + "<tool_call>{\"name\": <name>, \"arguments\": <object>}</tool_call><|im_end|>\n{% endif %}"
            + "{%- for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n"
            + "{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
    private static final String QUESTION = "What will the weather be like in Lyon over the next three days?";

    @TempDir
    static Path tmp;

    private static LocalEngine withTools;
    private static HttpServer toolServer;
    private static LocalEngine plain;
    private static HttpServer plainServer;

    @BeforeAll
    static void open() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("smollm2-json-tools"));
        try (var files = Files.list(DEFAULT_MODEL)) {
            for (Path f : files.toList()) {
                if (!f.getFileName().toString().equals("tokenizer_config.json")) {
                    Files.createSymbolicLink(dir.resolve(f.getFileName()), f.toAbsolutePath());
                }
            }
        }
        ObjectNode config = (ObjectNode)
                JSON.readTree(DEFAULT_MODEL.resolve("tokenizer_config.json").toFile());
        config.put("chat_template", TEMPLATE).put("tool_parser_type", "json_tools");
        JSON.writeValue(dir.resolve("tokenizer_config.json").toFile(), config);
        withTools = LocalEngine.open(dir, LocalEngine.Options.defaults(LocalEngine.contextLength(dir)));
        toolServer = server(withTools);
        plain = LocalEngine.open(DEFAULT_MODEL, LocalEngine.Options.defaults(LocalEngine.contextLength(DEFAULT_MODEL)));
        plainServer = server(plain);
    }

    private static HttpServer server(LocalEngine e) {
        return new HttpServer(
                        new HttpServer.Config(
                                "127.0.0.1",
                                0,
                                e.modelId(),
                                null,
                                new ServerDefaults(512, e.maxContextTokens(), e.vocabSize()),
                                "fp"),
                        e.engine(),
                        id -> e.tokenizer().decode(new int[] {id}, false))
                .start();
    }

    @AfterAll
    static void close() {
        for (AutoCloseable c : new AutoCloseable[] {toolServer, withTools, plainServer, plain}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception ignored) {
                // the others still close
            }
        }
    }

    private static JsonNode post(HttpServer server, String route, String body, int status) throws Exception {
        HttpResponse<String> r = HTTP.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + route))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(status, r.statusCode(), r.body());
        return JSON.readTree(r.body());
    }

    /** The arguments hold to {@link #SCHEMA}: exactly city (a string of at most 24) and days (1 to 14). */
    private static void assertValidArguments(JsonNode args) {
        assertTrue(args.isObject(), args.toString());
        Set<String> keys = new java.util.HashSet<>();
        for (Iterator<String> it = args.fieldNames(); it.hasNext(); ) {
            keys.add(it.next());
        }
        assertEquals(Set.of("city", "days"), keys, args.toString());
        assertTrue(args.get("city").isTextual() && args.get("city").textValue().length() <= 24, args.toString());
        assertTrue(
                args.get("days").isIntegralNumber()
                        && args.get("days").intValue() >= 1
                        && args.get("days").intValue() <= 14,
                args.toString());
    }

    private static String chatTools(String choice, boolean parallel) {
        return "{\"max_tokens\":160,\"messages\":[{\"role\":\"user\",\"content\":\"" + QUESTION + "\"}],"
                + "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_time\",\"parameters\":"
                + "{\"type\":\"object\"}}},{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
                + "\"parameters\":" + SCHEMA + "}}],\"tool_choice\":" + choice + ",\"parallel_tool_calls\":"
                + parallel + "}";
    }

    /** The official anthropic and openai SDKs, unchanged, force calls on this server (scripts/e2e/forced_tools_check.py). */
    @Test
    void theOfficialSdksForceToolCalls() throws Exception {
        String out = dev.mlxring.mlx.PythonScript.run(
                "e2e/forced_tools_check.py",
                600,
                java.util.List.of("--base-url", "http://127.0.0.1:" + toolServer.port()));
        JsonNode checks = JSON.readTree(out).get("checks");
        assertEquals(4, checks.size(), out);
        for (JsonNode c : checks) {
            assertTrue(c.get("ok").asBoolean(), c.get("name").asText() + ": " + c.get("detail"));
        }
    }

    @Test
    void chatNamedChoiceAnswersExactlyThatCall() throws Exception {
        JsonNode r = post(
                toolServer,
                "/v1/chat/completions",
                chatTools("{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}", false),
                200);
        JsonNode choice = r.at("/choices/0");
        assertEquals("tool_calls", choice.get("finish_reason").asText(), r.toString());
        JsonNode calls = choice.at("/message/tool_calls");
        assertEquals(1, calls.size(), r.toString());
        assertEquals("get_weather", calls.at("/0/function/name").asText(), r.toString());
        assertValidArguments(JSON.readTree(calls.at("/0/function/arguments").asText()));
    }

    @Test
    void chatRequiredChoiceAnswersACallOfADefinedTool() throws Exception {
        JsonNode r = post(toolServer, "/v1/chat/completions", chatTools("\"required\"", false), 200);
        JsonNode choice = r.at("/choices/0");
        assertEquals("tool_calls", choice.get("finish_reason").asText(), r.toString());
        JsonNode calls = choice.at("/message/tool_calls");
        assertEquals(1, calls.size(), r.toString());
        String name = calls.at("/0/function/name").asText();
        assertTrue(List.of("get_time", "get_weather").contains(name), r.toString());
        JsonNode args = JSON.readTree(calls.at("/0/function/arguments").asText());
        if (name.equals("get_weather")) {
            assertValidArguments(args);
        } else {
            assertTrue(args.isObject(), r.toString());
        }
    }

    @Test
    void anthropicForcedToolAnswersAToolUseBlock() throws Exception {
        JsonNode r = post(
                toolServer,
                "/v1/messages",
                "{\"model\":\"default_model\",\"max_tokens\":160,\"messages\":[{\"role\":"
                        + "\"user\",\"content\":\"" + QUESTION
                        + "\"}],\"tools\":[{\"name\":\"get_weather\",\"input_schema\":"
                        + SCHEMA + "}],\"tool_choice\":{\"type\":\"tool\",\"name\":\"get_weather\","
                        + "\"disable_parallel_tool_use\":true}}",
                200);
        assertEquals("tool_use", r.get("stop_reason").asText(), r.toString());
        List<JsonNode> uses = new java.util.ArrayList<>();
        r.get("content").forEach(b -> {
            if (b.path("type").asText().equals("tool_use")) {
                uses.add(b);
            }
        });
        assertEquals(1, uses.size(), r.toString());
        assertEquals("get_weather", uses.getFirst().get("name").asText(), r.toString());
        assertValidArguments(uses.getFirst().get("input"));
    }

    @Test
    void responsesForcedFunctionAnswersAFunctionCallItem() throws Exception {
        JsonNode r = post(
                toolServer,
                "/v1/responses",
                "{\"max_output_tokens\":160,\"input\":\"" + QUESTION + "\","
                        + "\"tools\":[{\"type\":\"function\",\"name\":\"get_weather\",\"parameters\":" + SCHEMA + "}],"
                        + "\"tool_choice\":{\"type\":\"function\",\"name\":\"get_weather\"},\"parallel_tool_calls\":false}",
                200);
        List<JsonNode> calls = new java.util.ArrayList<>();
        r.get("output").forEach(item -> {
            if (item.path("type").asText().equals("function_call")) {
                calls.add(item);
            }
        });
        assertEquals(1, calls.size(), r.toString());
        assertEquals("get_weather", calls.getFirst().get("name").asText(), r.toString());
        assertValidArguments(JSON.readTree(calls.getFirst().get("arguments").asText()));
    }

    @Test
    void aStreamedForcedCallArrivesAsToolCallDeltas() throws Exception {
        String body = chatTools("{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}", false)
                .replaceFirst("\\{", "{\"stream\":true,");
        HttpResponse<String> r = HTTP.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + toolServer.port() + "/v1/chat/completions"))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        StringBuilder names = new StringBuilder();
        StringBuilder arguments = new StringBuilder();
        String finish = null;
        for (String line : r.body().split("\n")) {
            if (!line.startsWith("data: {")) {
                continue;
            }
            JsonNode chunk = JSON.readTree(line.substring("data: ".length()));
            for (JsonNode call : chunk.at("/choices/0/delta/tool_calls")) {
                names.append(call.at("/function/name").asText(""));
                arguments.append(call.at("/function/arguments").asText(""));
            }
            if (chunk.at("/choices/0/finish_reason").isTextual()) {
                finish = chunk.at("/choices/0/finish_reason").asText();
            }
        }
        assertEquals("get_weather", names.toString(), r.body());
        assertValidArguments(JSON.readTree(arguments.toString()));
        assertEquals("tool_calls", finish, r.body());
    }

    @Test
    void aForcedCallCutOffByMaxTokensIsRefusedNamingMaxTokens() throws Exception {
        JsonNode r = post(
                toolServer,
                "/v1/chat/completions",
                chatTools("\"required\"", true).replace("\"max_tokens\":160", "\"max_tokens\":6"),
                400);
        assertEquals("max_tokens", r.at("/error/param").asText(), r.toString());
        assertTrue(
                r.at("/error/message").asText().startsWith("max_tokens must leave room for the whole tool call"),
                r.toString());
    }

    @Test
    void aModelWithoutAToolFormatRefusesAForcedChoiceNamingToolChoice() throws Exception {
        JsonNode r = post(plainServer, "/v1/chat/completions", chatTools("\"required\"", true), 400);
        assertEquals("tool_choice", r.at("/error/param").asText(), r.toString());
        assertTrue(
                r.at("/error/message").asText().contains("needs a tool-call format, and this model has none"),
                r.toString());
    }
}
