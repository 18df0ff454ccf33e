package dev.mlxring.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.mlxring.prep.ChatTemplate;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The composition root picks the tool-call parser as {@code mlx_lm.tokenizer_utils.load} does. */
class LocalEngineToolParserTest {
    @TempDir
    Path dir;

    private static final ChatTemplate QWEN_LIKE = ChatTemplate.of(
            "{% for m in messages %}{{ m.content }}{% for tool_call in m.tool_calls %}<tool_call>{{ tool_call.name }}"
                    + "</tool_call>{% endfor %}{% endfor %}",
            Map.of());

    @Test
    void inferredFromTheChatTemplate() throws Exception {
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"eos_token\": \"x\"}");
        assertEquals("json_tools", LocalEngine.toolParser(dir, QWEN_LIKE, null).type());
        assertNull(LocalEngine.toolParser(dir, ChatTemplate.of("{{ messages }}", Map.of()), null), "no format");
        assertNull(LocalEngine.toolParser(dir, null, null), "no template, no vocabulary match");
    }

    @Test
    void theConfigsToolParserTypeWins() throws Exception {
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"tool_parser_type\": \"mistral\"}");
        assertEquals("mistral", LocalEngine.toolParser(dir, QWEN_LIKE, null).type());
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"tool_parser_type\": \"gemma4\"}");
        assertNull(LocalEngine.toolParser(dir, QWEN_LIKE, null), "a format mlx-ring does not implement: none");
    }
}
