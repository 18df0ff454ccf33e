package dev.mlxring.prep;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.pipeline.ChatMessage;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.PromptSegment;
import dev.mlxring.tokenizer.HfTokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Live parity of a chat prompt's segments with mlx_lm.server's own {@code _tokenize}
 * ({@code scripts/oracle/prompt_segments.py --tokenize}): for each conversation the ids and the
 * segments (lengths and cache types) must be mlx-lm's — on the default model's tokenizer and
 * template (system prompt and conversation; several system messages; no system message, where
 * SmolLM2's template inserts its own default system text, which mlx-lm does not count as one; a
 * last message that is not the user's, not split; tools) and on a copy of it that knows
 * {@code <think>} and opens a thinking block in the generation prompt (the tail segment).
 */
class ChatSegmentsParityTest {
    private static final List<List<ChatMessage>> CONVERSATIONS = List.of(
            List.of(
                    ChatMessage.of("system", "You are a terse assistant for the ring project. Answer in one line."),
                    ChatMessage.of("user", "What is a ring buffer?")),
            List.of(ChatMessage.of("user", "Hello there")),
            List.of(
                    ChatMessage.of("system", "A"),
                    ChatMessage.of("system", "B"),
                    ChatMessage.of("user", "x"),
                    ChatMessage.of("assistant", "y"),
                    ChatMessage.of("user", "z")),
            List.of(ChatMessage.of("system", "S"), ChatMessage.of("user", "q"), ChatMessage.of("assistant", "a")),
            List.of(ChatMessage.of("system", "Same start"), ChatMessage.of("user", "Same start, then more")));

    @TempDir
    Path work;

    @Test
    void theDefaultModelsSegmentsAreMlxLms() throws Exception {
        Path model = PythonOracle.root().resolve("models/smollm2-135m-instruct");
        compare(model, null);
    }

    @Test
    void aThinkingStartInTheGenerationPromptIsTheTailSegment() throws Exception {
        Path model = thinkingCopy(PythonOracle.root().resolve("models/smollm2-135m-instruct"));
        try (HfTokenizer t = HfTokenizer.load(model)) {
            int[] think = t.encode("<think>", false);
            assertEquals(1, think.length, "<think> is one added token");
            List<PreparedPrompt> ours = compare(model, think);
            assertEquals(
                    PromptSegment.Kind.ASSISTANT,
                    ours.getFirst().segments().getLast().kind());
            assertEquals(2, ours.getFirst().segments().getLast().length(), "<think> and the newline after it");
        }
    }

    /** Prepares every conversation with ours and mlx-lm's and compares; returns ours. */
    private List<PreparedPrompt> compare(Path model, int[] thinkStart) throws Exception {
        ArrayNode cases = PythonOracle.JSON.createArrayNode();
        for (List<ChatMessage> c : CONVERSATIONS) {
            ObjectNode o = cases.addObject();
            ArrayNode ms = o.putArray("messages");
            for (ChatMessage m : c) {
                ms.addObject().put("role", m.role()).put("content", m.content());
            }
        }
        Path file = work.resolve("cases.json");
        PythonOracle.JSON.writeValue(file.toFile(), cases);
        JsonNode py = PythonOracle.runScriptJson(
                "prompt_segments.py", work, "--model", model.toString(), "--tokenize", file.toString());
        List<PreparedPrompt> ours = new ArrayList<>();
        try (HfTokenizer tokenizer = HfTokenizer.load(model)) {
            PromptPreparer prep =
                    new PromptPreparer(tokenizer, ChatTemplate.load(model), tokenizer.vocabSize(), 0, thinkStart);
            for (int i = 0; i < CONVERSATIONS.size(); i++) {
                JsonNode want = py.get("cases").get(i);
                PreparedPrompt p = prep.prepare(GenerationRequest.builder()
                        .id("r")
                        .model("m")
                        .prompt(new Prompt.Chat(CONVERSATIONS.get(i), List.of(), Map.of()))
                        .maxTokens(4)
                        .build());
                assertArrayEquals(
                        PythonOracle.JSON.convertValue(want.get("prompt"), int[].class),
                        p.tokenIds(),
                        "conversation " + i + ": ids");
                List<String> wantSegments = new ArrayList<>();
                for (JsonNode s : want.get("segments")) {
                    wantSegments.add(s.get(0).asInt() + " " + s.get(1).asText());
                }
                List<String> got = p.segments().stream()
                        .map(s -> s.length() + " " + s.kind().mlxName())
                        .toList();
                assertEquals(wantSegments, got, "conversation " + i + ": segments");
                ours.add(p);
            }
        }
        return ours;
    }

    /** The model's tokenizer with {@code <think>}/{@code </think>} added and a generation prompt that opens a block. */
    private Path thinkingCopy(Path model) throws Exception {
        Path dir = work.resolve("thinking");
        Files.createDirectories(dir);
        for (String f : List.of("config.json", "special_tokens_map.json", "generation_config.json")) {
            Files.copy(model.resolve(f), dir.resolve(f));
        }
        ObjectNode tok = (ObjectNode)
                PythonOracle.JSON.readTree(model.resolve("tokenizer.json").toFile());
        ArrayNode added = (ArrayNode) tok.get("added_tokens");
        int next = 0;
        for (JsonNode a : added) {
            next = Math.max(next, a.get("id").asInt() + 1);
        }
        next = Math.max(next, tok.get("model").get("vocab").size());
        ObjectNode config = (ObjectNode) PythonOracle.JSON.readTree(
                model.resolve("tokenizer_config.json").toFile());
        ObjectNode decoder = (ObjectNode) config.get("added_tokens_decoder"); // transformers reads them from here
        for (String t : List.of("<think>", "</think>")) {
            ObjectNode a = added.addObject()
                    .put("id", next)
                    .put("content", t)
                    .put("single_word", false)
                    .put("lstrip", false)
                    .put("rstrip", false)
                    .put("normalized", false)
                    .put("special", false);
            decoder.set(String.valueOf(next++), a.deepCopy().without("id"));
        }
        PythonOracle.JSON.writeValue(dir.resolve("tokenizer.json").toFile(), tok);
        String template = config.get("chat_template").asText();
        String opened = template.replace("'<|im_start|>assistant\n'", "'<|im_start|>assistant\n<think>\n'");
        assertFalse(opened.equals(template), "the template's generation prompt was found");
        config.put("chat_template", opened);
        PythonOracle.JSON.writeValue(dir.resolve("tokenizer_config.json").toFile(), config);
        return dir;
    }
}
