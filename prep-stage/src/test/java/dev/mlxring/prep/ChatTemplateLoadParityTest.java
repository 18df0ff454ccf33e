package dev.mlxring.prep;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Template selection checked against transformers' real loader: copies of the default model's
 * tokenizer (so the oracle loads them with AutoTokenizer) with a {@code chat_template.jinja} plus
 * {@code additional_chat_templates/}, and with a list-form {@code chat_template} in the config;
 * each rendered with and without tools by both sides.
 */
class ChatTemplateLoadParityTest {

    @TempDir
    static Path work;

    static Path copyDefaultModel(String name) throws IOException {
        Path src = PythonOracle.root().resolve("models/smollm2-135m-instruct");
        if (!Files.isRegularFile(src.resolve("tokenizer.json"))) {
            fail("Default model missing: " + src.resolve("tokenizer.json")
                    + " does not exist. Run the setup first: ./mlx-ring setup");
        }
        Path dst = work.resolve(name);
        Files.createDirectories(dst);
        for (String f : List.of("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")) {
            Files.copy(src.resolve(f), dst.resolve(f));
        }
        return dst;
    }

    @Test
    void selectionMatchesTransformers() throws IOException {
        Path jinja = copyDefaultModel("with-jinja-files");
        Files.writeString(
                jinja.resolve("chat_template.jinja"),
                "{{ bos_token }}[default]\r\n{% for m in messages %}{{ m.role }}: {{ m.content }}{{ eos_token }}\n{% endfor %}\n");
        Files.createDirectories(jinja.resolve("additional_chat_templates"));
        Files.writeString(
                jinja.resolve("additional_chat_templates/tool_use.jinja"),
                "[tool_use {{ tools | length }}]"
                        + "{% for m in messages %}{{ m.content }}{% endfor %}{{ unk_token }}{{ pad_token }}");

        Path listForm = copyDefaultModel("with-list-template");
        ObjectNode cfg = (ObjectNode) PythonOracle.JSON.readTree(
                listForm.resolve("tokenizer_config.json").toFile());
        ArrayNode list = cfg.putArray("chat_template");
        list.addObject()
                .put("name", "default")
                .put("template", "<D>{{ messages[-1].content }}{% if add_generation_prompt %}>{% endif %}");
        list.addObject().put("name", "tool_use").put("template", "<T>{{ tools[0].function.name }}");
        PythonOracle.JSON.writeValue(listForm.resolve("tokenizer_config.json").toFile(), cfg);

        List<Map<String, Object>> cases = new ArrayList<>();
        Map<String, Object> tool =
                Map.of("type", "function", "function", Map.of("name", "lookup", "parameters", Map.of()));
        for (boolean tools : List.of(false, true)) {
            for (boolean gen : List.of(false, true)) {
                Map<String, Object> c = new LinkedHashMap<>();
                c.put("name", "tools=" + tools + " gen=" + gen);
                c.put(
                        "messages",
                        List.of(
                                Map.of("role", "user", "content", "Hi ü"),
                                Map.of("role", "assistant", "content", "Yo")));
                c.put("add_generation_prompt", gen);
                if (tools) {
                    c.put("tools", List.of(tool));
                }
                cases.add(c);
            }
        }
        Path casesFile = Files.createTempFile(work, "cases", ".json");
        PythonOracle.JSON.writeValue(casesFile.toFile(), cases);

        for (Path dir : List.of(jinja, listForm)) {
            JsonNode py = PythonOracle.runScriptJson(
                    "chat_template_oracle.py", work, "--model-dir", dir.toString(), "--cases", casesFile.toString());
            assertEquals("tokenizer", py.path("mode").asText(), "oracle must load these with AutoTokenizer");
            ChatTemplate t = ChatTemplate.load(dir);
            for (int i = 0; i < cases.size(); i++) {
                Map<String, Object> c = cases.get(i);
                JsonNode r = py.path("results").get(i);
                assertTrue(
                        r.has("text"),
                        dir.getFileName() + " " + c.get("name") + ": python raised "
                                + r.path("error").asText());
                @SuppressWarnings("unchecked")
                List<Map<String, Object>> messages = (List<Map<String, Object>>) c.get("messages");
                Map<String, Object> extra = c.containsKey("tools") ? Map.of("tools", c.get("tools")) : Map.of();
                String java = t.render(messages, (Boolean) c.get("add_generation_prompt"), extra);
                assertEquals(r.get("text").asText(), java, dir.getFileName() + " " + c.get("name"));
            }
        }
    }
}
