package dev.mlxring.prep;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Loading rules, errors, and what cannot be checked against a live oracle (clock, threads). */
class ChatTemplateTest {

    @TempDir
    Path tmp;

    static List<Map<String, Object>> user(String text) {
        return List.of(new LinkedHashMap<>(Map.of("role", "user", "content", text)));
    }

    Path dirWith(String configJson) throws IOException {
        Path d = Files.createTempDirectory(tmp, "model");
        Files.writeString(d.resolve("tokenizer_config.json"), configJson);
        return d;
    }

    @Test
    void existsMirrorsLoad() throws IOException {
        assertFalse(ChatTemplate.exists(tmp.resolve("nope")));
        assertFalse(ChatTemplate.exists(dirWith("{\"bos_token\": \"<s>\"}")));
        assertFalse(ChatTemplate.exists(dirWith("{\"chat_template\": null}")));
        assertFalse(ChatTemplate.exists(dirWith("{broken")));
        assertTrue(ChatTemplate.exists(dirWith("{\"chat_template\": \"x\"}")));
        Path jinjaOnly = dirWith("{}");
        Files.writeString(jinjaOnly.resolve("chat_template.jinja"), "x");
        assertTrue(ChatTemplate.exists(jinjaOnly));
    }

    @Test
    void textIsTheSingleTemplateAsTransformersHoldsIt() throws IOException {
        // What mlx-lm's _infer_tool_parser reads: a string for one template, nothing for named ones.
        assertEquals(
                "a\r\nb\n",
                ChatTemplate.load(dirWith("{\"chat_template\": \"a\\r\\nb\\n\"}"))
                        .text());
        Path jinja = dirWith("{}");
        Files.writeString(jinja.resolve("chat_template.jinja"), "<tool_call>\r\n{{ tool_call.name }}\n");
        assertEquals(
                "<tool_call>\n{{ tool_call.name }}\n", ChatTemplate.load(jinja).text(), "read in text mode");
        assertNull(ChatTemplate.load(dirWith("{\"chat_template\": [{\"name\": \"default\", \"template\": \"x\"}]}"))
                .text());
        Files.createDirectories(jinja.resolve("additional_chat_templates"));
        Files.writeString(jinja.resolve("additional_chat_templates/tool_use.jinja"), "y");
        assertNull(ChatTemplate.load(jinja).text());
        assertEquals("z", ChatTemplate.of("z", Map.of()).text());
    }

    @Test
    void missingConfigNamesTheFile() {
        NoSuchFileException e = assertThrows(NoSuchFileException.class, () -> ChatTemplate.load(tmp.resolve("nope")));
        assertTrue(e.getMessage().contains("tokenizer_config.json"), e.getMessage());
    }

    @Test
    void missingChatTemplateNamesTheFile() throws IOException {
        Path d = dirWith("{\"bos_token\": \"<s>\"}");
        IOException e = assertThrows(IOException.class, () -> ChatTemplate.load(d));
        assertTrue(e.getMessage().contains(d.resolve("tokenizer_config.json").toString()), e.getMessage());
        assertTrue(e.getMessage().contains("chat_template"), e.getMessage());
    }

    @Test
    void malformedConfigNamesTheFile() throws IOException {
        Path d = dirWith("{not json");
        IOException e = assertThrows(IOException.class, () -> ChatTemplate.load(d));
        assertTrue(e.getMessage().contains("tokenizer_config.json"), e.getMessage());
    }

    @Test
    void tokenObjectsAndSpecialTokensMap() throws IOException {
        Path d = dirWith("""
                {"bos_token": {"__type": "AddedToken", "content": "<B>", "lstrip": false},
                 "eos_token": "<E>", "unk_token": null,
                 "chat_template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"}""");
        Files.writeString(
                d.resolve("special_tokens_map.json"),
                "{\"eos_token\": {\"content\": \"<E2>\"}, \"pad_token\": \"<P>\"}");
        ChatTemplate t = ChatTemplate.load(d);
        // no added_tokens_decoder in the config: special_tokens_map.json overrides (transformers' legacy path)
        assertEquals(Map.of("bos_token", "<B>", "eos_token", "<E2>", "pad_token", "<P>"), t.specialTokens());
        assertEquals("<B>hi<E2>", t.render(user("hi"), false));
        // extra variables win over special tokens
        assertEquals("[x]hi<E2>", t.render(user("hi"), false, Map.of("bos_token", "[x]")));
    }

    @Test
    void jinjaFileWinsOverConfig() throws IOException {
        Path d = dirWith("{\"chat_template\": \"config\"}");
        Files.writeString(d.resolve("chat_template.jinja"), "jinja {{ messages|length }}\n");
        ChatTemplate t = ChatTemplate.load(d);
        assertEquals(d.resolve("chat_template.jinja"), t.source());
        assertEquals("jinja 1", t.render(user("x"), true)); // trailing newline of the file dropped, as Jinja2 does
    }

    @Test
    void namedTemplatesPickDefaultOrToolUse() throws IOException {
        Path d = dirWith("""
                {"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T{{ tools|length }}"}]}""");
        ChatTemplate t = ChatTemplate.load(d);
        assertEquals(List.of("default", "tool_use"), t.templateNames());
        assertEquals("D", t.render(user("x"), false));
        assertEquals("T1", t.render(user("x"), false, Map.of("tools", List.of(Map.of("type", "function")))));

        Path noDefault = dirWith(
                "{\"chat_template\": [{\"name\": \"a\", \"template\": \"A\"}, {\"name\": \"b\", \"template\": \"B\"}]}");
        ChatTemplate.TemplateException e = assertThrows(
                ChatTemplate.TemplateException.class,
                () -> ChatTemplate.load(noDefault).render(user("x"), false));
        assertTrue(e.getMessage().contains("no default"), e.getMessage());
    }

    @Test
    void raiseExceptionCarriesTheTemplateMessage() {
        ChatTemplate t = ChatTemplate.of(
                "{% if messages[0].role != 'system' %}{{ raise_exception('Need a system prompt, got ' ~ messages[0].role) }}{% endif %}ok",
                Map.of());
        ChatTemplate.TemplateException e =
                assertThrows(ChatTemplate.TemplateException.class, () -> t.render(user("x"), true));
        assertTrue(e.raisedByTemplate());
        assertEquals("Need a system prompt, got user", e.templateMessage());
        assertTrue(e.getMessage().contains("Need a system prompt, got user"), e.getMessage());
        // the next render on the same thread is not affected
        assertEquals("ok", t.render(List.of(new LinkedHashMap<>(Map.of("role", "system", "content", "s"))), true));
    }

    @Test
    void engineErrorsAreTemplateExceptions() {
        for (String bad : List.of(
                "{% if %}",
                "{{ 'a' + 1 }}",
                "{{ messages[0].content.nosuchmethod() }}",
                "{% for %}{% endfor %}",
                "{{ nothing.attr }}",
                "{% include 'other.jinja' %}",
                "{% import 'x' as y %}",
                "{{ 'x'.split('') }}")) {
            ChatTemplate t = ChatTemplate.of(bad, Map.of());
            ChatTemplate.TemplateException e =
                    assertThrows(ChatTemplate.TemplateException.class, () -> t.render(user("x"), true), bad);
            assertFalse(e.raisedByTemplate(), bad);
        }
    }

    @Test
    void argumentChecks() {
        ChatTemplate t = ChatTemplate.of("x", Map.of());
        assertThrows(IllegalArgumentException.class, () -> t.render(List.of(), true));
        assertThrows(IllegalArgumentException.class, () -> t.render(user("x"), true, Map.of("messages", List.of())));
        List<Map<String, Object>> odd = List.of(new LinkedHashMap<>(Map.of("role", "user", "content", new Object())));
        assertThrows(IllegalArgumentException.class, () -> t.render(odd, true));
        // JsonNode content is accepted as JSON data
        JsonNode json = PythonOracle.JSON.valueToTree(Map.of("k", List.of(1, "two")));
        assertEquals(
                "{\"k\": [1, \"two\"]}",
                ChatTemplate.of("{{ messages[0].content | tojson }}", Map.of())
                        .render(List.of(new LinkedHashMap<>(Map.of("role", "user", "content", json))), false));
    }

    @Test
    void floatsPrintAsPythonWritesThem() {
        // As python3 prints them: str(5e-324) is '5e-324' (Double.toString says 4.9E-324);
        // json.dumps writes NaN and -Infinity as JSON's extensions.
        ChatTemplate t =
                ChatTemplate.of("{{ tiny }} {{ tiny|tojson }} {{ [big, small, zero, nan, inf]|tojson }}", Map.of());
        String out = t.render(
                user("x"),
                false,
                Map.of(
                        "tiny",
                        Double.MIN_VALUE,
                        "big",
                        1e16,
                        "small",
                        1e-5,
                        "zero",
                        -0.0,
                        "nan",
                        Double.NaN,
                        "inf",
                        Double.NEGATIVE_INFINITY));
        assertEquals("5e-324 5e-324 [1e+16, 1e-05, -0.0, NaN, -Infinity]", out);
    }

    @Test
    void concurrentRendersAgree() throws Exception {
        Path dir = PythonOracle.root().resolve("prep-stage/src/test/resources/templates/qwen3");
        ChatTemplate t = ChatTemplate.load(dir);
        List<Map<String, Object>> msgs = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            msgs.add(new LinkedHashMap<>(
                    Map.of("role", i % 2 == 0 ? "user" : "assistant", "content", "turn " + i + " ü")));
        }
        String expected = t.render(msgs, true, Map.of("enable_thinking", false));
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<String>> fs = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                fs.add(pool.submit(() -> t.render(msgs, true, Map.of("enable_thinking", false))));
            }
            for (Future<String> f : fs) {
                assertEquals(expected, f.get());
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
