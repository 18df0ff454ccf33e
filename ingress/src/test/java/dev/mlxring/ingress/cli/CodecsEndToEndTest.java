package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.mlx.PythonScript;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Anthropic and Responses APIs on the real server and the default model: the official
 * {@code anthropic} client and the {@code openai} client's {@code responses} (create, stream
 * helpers, count_tokens, stop sequences, the previous_response_id chain, errors as their
 * exception classes), and one greedy conversation asked through all three APIs giving the same
 * prompt tokens and the same output.
 */
class CodecsEndToEndTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @RegisterExtension
    static final ServedModel SERVER = ServedModel.serve();

    private static JsonNode post(String path, String body) throws Exception {
        HttpResponse<String> r = SERVER.post(path, body);
        assertEquals(200, r.statusCode(), path + ": " + r.body());
        return JSON.readTree(r.body());
    }

    @Test
    void officialAnthropicAndResponsesClients() throws Exception {
        String out = PythonScript.run(
                "e2e/codecs_client_check.py", 900, List.of("--base-url", SERVER.base(), "--max-tokens", "8"));
        JsonNode r = JSON.readTree(out);
        List<String> failed = new ArrayList<>();
        for (JsonNode c : r.get("checks")) {
            if (!c.get("ok").asBoolean()) {
                failed.add(c.get("name").asText() + ": " + c.get("detail").asText());
            }
        }
        assertTrue(failed.isEmpty(), "client checks failed: " + failed);
        assertEquals(9, r.get("checks").size(), out);
    }

    @Test
    void oneGreedyConversationGivesTheSameTokensThroughAllThreeApis() throws Exception {
        String system = "You are a terse assistant.";
        String user = "Name three colors.";
        int n = 12;
        JsonNode chat = post(
                "/v1/chat/completions",
                "{\"temperature\":0,\"max_tokens\":" + n + ",\"messages\":["
                        + "{\"role\":\"system\",\"content\":\"" + system + "\"},{\"role\":\"user\",\"content\":\""
                        + user
                        + "\"}]}");
        JsonNode message = post(
                "/v1/messages",
                "{\"model\":\"default_model\",\"temperature\":0,\"max_tokens\":" + n
                        + ",\"system\":\"" + system
                        + "\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
                        + "\"text\":\"" + user + "\"}]}]}");
        JsonNode response = post(
                "/v1/responses",
                "{\"temperature\":0,\"max_output_tokens\":" + n
                        + ",\"instructions\":\"" + system + "\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":"
                        + "\"input_text\",\"text\":\"" + user + "\"}]}]}");

        String chatText =
                chat.get("choices").get(0).get("message").get("content").asText();
        assertFalse(chatText.isEmpty());
        assertEquals(chatText, message.get("content").get(0).get("text").asText(), "messages vs chat");
        assertEquals(
                chatText,
                response.get("output").get(0).get("content").get(0).get("text").asText(),
                "responses vs chat");
        // the same rendering of the same conversation, and the same number of generated tokens
        int prompt = chat.get("usage").get("prompt_tokens").asInt();
        assertEquals(
                prompt,
                message.get("usage").get("input_tokens").asInt()
                        + message.get("usage").get("cache_read_input_tokens").asInt());
        assertEquals(prompt, response.get("usage").get("input_tokens").asInt());
        int generated = chat.get("usage").get("completion_tokens").asInt();
        assertEquals(generated, message.get("usage").get("output_tokens").asInt());
        assertEquals(generated, response.get("usage").get("output_tokens").asInt());
        String finish = chat.get("choices").get(0).get("finish_reason").asText();
        assertEquals(
                finish.equals("length") ? "max_tokens" : "end_turn",
                message.get("stop_reason").asText());
        assertEquals(
                finish.equals("length") ? "incomplete" : "completed",
                response.get("status").asText());
    }
}
