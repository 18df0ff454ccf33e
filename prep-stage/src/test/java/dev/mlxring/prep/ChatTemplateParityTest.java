package dev.mlxring.prep;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Live parity of {@link ChatTemplate} with transformers' {@code apply_chat_template(...,
 * tokenize=False)}: every case is rendered by {@code scripts/oracle/chat_template_oracle.py} and by
 * Java, and the strings must be identical (or both must raise, with the same {@code
 * raise_exception} message). Templates: the default model's (SmolLM2, loaded by the oracle with
 * AutoTokenizer) and the real templates vendored under {@code src/test/resources/templates/} (Qwen3,
 * Llama 3 (short and Meta's full 3.1 instruct template), Gemma 3, DeepSeek V3, Mistral Nemo, Mistral Small
 * 3.2; rendered by the oracle with transformers' own
 * render_jinja_template).
 */
class ChatTemplateParityTest {

    static final String DEFAULT_MODEL = "smollm2-135m-instruct";
    static final ObjectMapper JSON = PythonOracle.JSON;

    @TempDir
    static Path work;

    static Path templateDir(String name) {
        if (name.equals(DEFAULT_MODEL)) {
            Path dir = PythonOracle.root().resolve("models").resolve(name);
            if (!Files.isRegularFile(dir.resolve("tokenizer_config.json"))) {
                fail("Default model missing: " + dir.resolve("tokenizer_config.json")
                        + " does not exist. Run the setup first: ./mlx-ring setup");
            }
            return dir;
        }
        Path dir = PythonOracle.root()
                .resolve("prep-stage/src/test/resources/templates")
                .resolve(name);
        if (!Files.isRegularFile(dir.resolve("tokenizer_config.json"))) {
            fail("Vendored test template missing: " + dir.resolve("tokenizer_config.json"));
        }
        return dir;
    }

    // ------------------------------------------------------------------ cases

    static Map<String, Object> msg(String role, Object content) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("role", role);
        m.put("content", content);
        return m;
    }

    static Map<String, Object> with(Map<String, Object> m, String key, Object value) {
        m.put(key, value);
        return m;
    }

    static Map<String, Object> toolCall(String name, Object arguments) {
        Map<String, Object> fn = new LinkedHashMap<>();
        fn.put("name", name);
        fn.put("arguments", arguments);
        Map<String, Object> call = new LinkedHashMap<>();
        call.put("type", "function");
        call.put("function", fn);
        return call;
    }

    static Map<String, Object> weatherTool() {
        return Map.of(
                "type",
                "function",
                "function",
                new LinkedHashMap<>(Map.of(
                        "name", "get_weather",
                        "description", "Get the weather — in °C, for a city",
                        "parameters",
                                new LinkedHashMap<>(Map.of(
                                        "type", "object",
                                        "properties",
                                                Map.of("city", Map.of("type", "string", "description", "City name")),
                                        "required", List.of("city"))))));
    }

    record Case(
            String name, List<Map<String, Object>> messages, boolean addGenerationPrompt, Map<String, Object> kwargs) {

        Map<String, Object> toJson() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", name);
            m.put("messages", messages);
            m.put("add_generation_prompt", addGenerationPrompt);
            Map<String, Object> kw = new LinkedHashMap<>(kwargs);
            Object tools = kw.remove("tools");
            if (tools != null) {
                m.put("tools", tools);
            }
            m.put("kwargs", kw);
            return m;
        }
    }

    static List<Case> cases() {
        List<Case> c = new ArrayList<>();
        List<Map<String, Object>> single = List.of(msg("user", "Hello!"));
        c.add(new Case("single user, gen", single, true, Map.of()));
        c.add(new Case("single user, no gen", single, false, Map.of()));
        List<Map<String, Object>> sys =
                List.of(msg("system", "You are a pirate. Answer in pirate speak."), msg("user", "What is 2+2?"));
        c.add(new Case("system + user, gen", sys, true, Map.of()));
        c.add(new Case("system + user, no gen", sys, false, Map.of()));
        List<Map<String, Object>> multi = List.of(
                msg("user", "Hi, who are you?"),
                msg("assistant", "I am a helpful assistant."),
                msg("user", "Tell me a joke."));
        c.add(new Case("multi-turn, gen", multi, true, Map.of()));
        c.add(new Case("multi-turn, no gen", multi, false, Map.of()));
        List<Map<String, Object>> sysMulti = List.of(
                msg("system", "Be brief."),
                msg("user", "Hi"),
                msg("assistant", "Hello."),
                msg("user", "Bye"),
                msg("assistant", "Goodbye!"));
        c.add(new Case("system + multi-turn ending with assistant", sysMulti, false, Map.of()));
        c.add(new Case(
                "unicode",
                List.of(
                        msg("system", "Réponds en français. 日本語も OK."),
                        msg("user", "Grüße, 世界! 😀 👩‍💻 🇫🇷 — «quotes» “smart” naïve café\u00a0nbsp"),
                        msg("assistant", "Ça va ? Привет! مرحبا 👍🏽"),
                        msg("user", "Ünïcödé\ttab\nnewline\r\ncrlf ☃ \u200b zero-width")),
                true,
                Map.of()));
        c.add(new Case(
                "whitespace content",
                List.of(
                        msg("user", "  padded both sides  \n\n"),
                        msg("assistant", "\n leading newline"),
                        msg("user", "\t")),
                true,
                Map.of()));
        c.add(new Case(
                "template-like content is data",
                List.of(msg("user", "{{ 7*7 }} {% if true %}x{% endif %} {# c #} \\ ' \" <|im_end|>")),
                true,
                Map.of()));
        c.add(new Case("empty content", List.of(msg("user", "")), true, Map.of()));
        c.add(new Case(
                "enable_thinking false", List.of(msg("user", "Think?")), true, Map.of("enable_thinking", false)));
        c.add(new Case("enable_thinking true", List.of(msg("user", "Think?")), true, Map.of("enable_thinking", true)));
        c.add(new Case(
                "null keys dropped",
                List.of(
                        with(msg("user", "Hi"), "name", null),
                        with(with(msg("assistant", "Hello"), "tool_calls", null), "reasoning_content", null),
                        msg("user", "Again")),
                true,
                Map.of()));
        c.add(new Case(
                "consecutive users (alternation)", List.of(msg("user", "One"), msg("user", "Two")), true, Map.of()));
        c.add(new Case("assistant first", List.of(msg("assistant", "I start."), msg("user", "OK")), true, Map.of()));
        c.add(new Case(
                "two system messages",
                List.of(msg("system", "First."), msg("system", "Second."), msg("user", "Hi")),
                true,
                Map.of()));
        c.add(new Case(
                "list content (multimodal)",
                List.of(
                        msg("system", List.of(Map.of("type", "text", "text", "System as blocks."))),
                        msg(
                                "user",
                                List.of(Map.of("type", "image"), Map.of("type", "text", "text", " What is this? ")))),
                true,
                Map.of()));

        // Tools, tool calls, tool results, reasoning (Qwen3 / DeepSeek style)
        List<Map<String, Object>> tools = List.of(weatherTool());
        Map<String, Object> callDict = with(
                msg("assistant", ""),
                "tool_calls",
                List.of(toolCall("get_weather", new LinkedHashMap<>(Map.of("city", "Paris")))));
        c.add(new Case(
                "tools + system, gen",
                List.of(msg("system", "You can call tools."), msg("user", "Weather in Paris?")),
                true,
                Map.of("tools", tools)));
        c.add(new Case("tools, no system", List.of(msg("user", "Weather in Paris?")), true, Map.of("tools", tools)));
        c.add(new Case(
                "tool call round trip",
                List.of(
                        msg("user", "Weather in Paris?"),
                        callDict,
                        msg("tool", "{\"temp_c\": 21, \"sky\": \"clear\"}"),
                        msg("tool", "second result"),
                        msg("user", "Thanks! And Rome?")),
                true,
                Map.of("tools", tools)));
        Map<String, Object> args = new LinkedHashMap<>();
        args.put("city", "Zürich");
        args.put("days", 3);
        args.put("metric", true);
        args.put("ratio", 0.5);
        args.put("tags", List.of("a", "b"));
        args.put("extra", null);
        c.add(new Case(
                "tool call, mixed JSON arguments",
                List.of(
                        msg("user", "Forecast?"),
                        with(
                                msg("assistant", "Let me check."),
                                "tool_calls",
                                List.of(
                                        toolCall("get_weather", args),
                                        toolCall("get_weather", "{\"city\": \"Bern\"}"))),
                        msg("tool", "sunny")),
                true,
                Map.of("tools", tools)));
        c.add(new Case(
                "tool call, content null, string arguments (DeepSeek style)",
                List.of(
                        msg("user", "Weather?"),
                        with(
                                msg("assistant", null),
                                "tool_calls",
                                List.of(toolCall("get_weather", "{\"city\": \"Oslo\"}"))),
                        msg("tool", "rain"),
                        msg("assistant", "It rains in Oslo.")),
                false,
                Map.of()));
        Map<String, Object> callWithId = with(
                msg("assistant", ""),
                "tool_calls",
                List.of(with(toolCall("get_weather", new LinkedHashMap<>(Map.of("city", "Lyon"))), "id", "aB3dE5gH9")));
        c.add(new Case(
                "tool call with ids (Mistral style)",
                List.of(
                        msg("system", "Use tools."),
                        msg("user", "Weather in Lyon?"),
                        callWithId,
                        with(msg("tool", "{\"temp_c\": 18}"), "tool_call_id", "aB3dE5gH9"),
                        msg("assistant", "18 °C in Lyon."),
                        msg("user", "Thanks")),
                true,
                Map.of("tools", tools)));
        c.add(new Case(
                "reasoning_content",
                List.of(
                        msg("user", "2+2?"),
                        with(msg("assistant", "4"), "reasoning_content", "  Simple addition.\n"),
                        msg("user", "3+3?")),
                true,
                Map.of()));
        c.add(new Case(
                "reasoning as <think> in content, last turn",
                List.of(msg("user", "2+2?"), msg("assistant", "<think>\nAdd them.\n</think>\n\nThe answer is 4.")),
                false,
                Map.of()));
        c.add(new Case(
                "reasoning in earlier turn is dropped",
                List.of(msg("user", "2+2?"), msg("assistant", "<think>\nAdd.\n</think>\n\n4"), msg("user", "And 3+3?")),
                true,
                Map.of()));
        c.add(new Case(
                "thinking alias field",
                List.of(msg("user", "Q"), with(msg("assistant", "A"), "thinking", "pondering")),
                false,
                Map.of()));
        c.add(new Case(
                "user content looks like tool response",
                List.of(
                        msg("user", "<tool_response>\nx\n</tool_response>"),
                        msg("assistant", "ok"),
                        msg("user", "next")),
                true,
                Map.of()));
        return c;
    }

    // ------------------------------------------------------------------ test

    @ParameterizedTest(name = "{0}")
    @ValueSource(
            strings = {
                DEFAULT_MODEL,
                "qwen3",
                "llama3_1",
                "llama3_1_instruct",
                "gemma3",
                "deepseek_v3",
                "mistral_nemo",
                "mistral_small3_2"
            })
    void matchesTransformers(String name) throws IOException {
        Path dir = templateDir(name);
        ChatTemplate template = ChatTemplate.load(dir);
        List<Case> cases = cases();
        List<Map<String, Object>> json = cases.stream().map(Case::toJson).toList();
        Path casesFile = Files.createTempFile(work, "cases", ".json");
        JSON.writeValue(casesFile.toFile(), json);
        JsonNode py = PythonOracle.runScriptJson(
                "chat_template_oracle.py", work, "--model-dir", dir.toString(), "--cases", casesFile.toString());
        String where =
                name + " (transformers " + py.path("transformers_version").asText() + ", jinja2 "
                        + py.path("jinja2_version").asText() + ", oracle mode "
                        + py.path("mode").asText() + ")";
        JsonNode results = py.path("results");
        assertEquals(cases.size(), results.size(), "oracle result count");

        List<String> bad = new ArrayList<>();
        List<String> raisedNotes = new ArrayList<>();
        int texts = 0;
        int raises = 0;
        for (int i = 0; i < cases.size(); i++) {
            Case k = cases.get(i);
            JsonNode r = results.get(i);
            String java;
            ChatTemplate.TemplateException javaError = null;
            try {
                java = template.render(k.messages(), k.addGenerationPrompt(), k.kwargs());
            } catch (ChatTemplate.TemplateException e) {
                java = null;
                javaError = e;
            }
            if (r.has("text")) {
                texts++;
                String expected = r.get("text").asText();
                if (javaError != null) {
                    bad.add("[" + k.name() + "] python rendered " + esc(expected) + "\n      java raised: "
                            + javaError.getMessage());
                } else if (!expected.equals(java)) {
                    bad.add("[" + k.name() + "] differs at char " + firstDiff(expected, java) + "\n      python "
                            + esc(expected) + "\n      java   " + esc(java));
                }
            } else {
                raises++;
                String pyError = r.path("error").asText();
                String pyType = r.path("error_type").asText();
                if (javaError != null) {
                    raisedNotes.add("[" + k.name() + "] python " + pyType + ": " + pyError + " | java: "
                            + javaError.templateMessage());
                }
                if (javaError == null) {
                    bad.add("[" + k.name() + "] python raised " + pyType + ": " + pyError + "\n      java rendered "
                            + esc(java));
                } else if (pyType.equals("TemplateError") && !pyError.equals(javaError.templateMessage())) {
                    bad.add("[" + k.name() + "] python raise_exception(" + esc(pyError) + "), java: "
                            + javaError.getMessage());
                } else if (pyType.equals("TemplateError") && !javaError.raisedByTemplate()) {
                    bad.add("[" + k.name() + "] python raise_exception but java failed otherwise: "
                            + javaError.getMessage());
                }
            }
        }
        if (!bad.isEmpty()) {
            fail(bad.size() + " of " + cases.size() + " cases differ between ChatTemplate and " + where + ":\n  "
                    + String.join("\n  ", bad));
        }
        assertTrue(texts > 0, "no case rendered at all for " + name);
        System.out.printf(
                "[chat-template parity] %s: %d cases identical (%d rendered, %d raised in both)%n",
                where, cases.size(), texts, raises);
        raisedNotes.forEach(n -> System.out.println("    raised in both: " + n));
    }

    static int firstDiff(String a, String b) {
        if (b == null) {
            return 0;
        }
        int n = Math.min(a.length(), b.length());
        for (int i = 0; i < n; i++) {
            if (a.charAt(i) != b.charAt(i)) {
                return i;
            }
        }
        return n;
    }

    /** Quoted, with control and non-ASCII chars as \\uXXXX (newlines as \\n), capped at 3000 chars. */
    static String esc(String s) {
        if (s == null) {
            return "null";
        }
        String cut = s.length() > 3000 ? s.substring(0, 3000) + "..." : s;
        StringBuilder b = new StringBuilder("\"");
        cut.chars().forEach(c -> {
            if (c == '\n') {
                b.append("\\n");
            } else if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
                b.append((char) c);
            } else {
                b.append(String.format("\\u%04x", c));
            }
        });
        return b.append('"').toString();
    }
}
