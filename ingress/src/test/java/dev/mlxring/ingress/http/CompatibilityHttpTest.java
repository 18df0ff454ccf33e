package dev.mlxring.ingress.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.pipeline.ChatMessage;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What OpenAI and Anthropic clients send that the strict reading of the fields refused or
 * mis-served (issue 38): null-valued keys mean absent, the legacy completions API's integer
 * {@code logprobs}, and a too-large {@code max_tokens} named as such. Stage doubles, no model.
 */
class CompatibilityHttpTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final AtomicReference<Prompt> lastPrompt = new AtomicReference<>();

    @RegisterExtension
    final ServedEngine server = ServedEngine.eachTest(
            () -> StageDoubles.engine(ScriptedExecutor.alternatives()).preparer(r -> {
                lastPrompt.set(r.prompt());
                return new PreparedPrompt(new int[] {7, 8}, 2);
            }),
            ServedEngine.smallBodies());

    private static JsonNode json(HttpResponse<String> r) throws Exception {
        return JSON.readTree(r.body());
    }

    // --- null means absent ---

    @Test
    void aNullValuedMessageKeyIsAbsent() throws Exception {
        HttpResponse<String> r = server.post(
                "/v1/chat/completions",
                "{\"max_tokens\":2,\"messages\":[{\"role\":\"user\","
                        + "\"content\":\"hi\",\"name\":null,\"anything\":null}]}");
        assertEquals(200, r.statusCode(), r.body());
        ChatMessage m = ((Prompt.Chat) lastPrompt.get()).messages().get(0);
        assertEquals(Map.of(), m.extra(), "null-valued keys do not reach the template");
    }

    /** The openai SDK's multi-turn habit: {@code messages.append(r.choices[0].message.model_dump())}. */
    @Test
    void theOpenAiSdksModelDumpOfAnAssistantMessageIsAccepted() throws Exception {
        String body = "{\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},"
                + "{\"content\":\"Hello!\",\"refusal\":null,\"role\":\"assistant\",\"annotations\":null,"
                + "\"audio\":null,\"function_call\":null,\"tool_calls\":null},"
                + "{\"role\":\"tool\",\"content\":\"ok\",\"tool_call_id\":null},"
                + "{\"role\":\"user\",\"content\":\"again\"}]}";
        HttpResponse<String> r = server.post("/v1/chat/completions", body);
        assertEquals(200, r.statusCode(), r.body());
        List<ChatMessage> messages = ((Prompt.Chat) lastPrompt.get()).messages();
        assertEquals(Map.of(), messages.get(1).extra());
        assertEquals(Map.of(), messages.get(2).extra());
    }

    @Test
    void nullToolKeysTemplateKwargsAndLogitBiasEntriesAreAbsent() throws Exception {
        HttpResponse<String> r = server.post(
                "/v1/chat/completions",
                "{\"max_tokens\":2,\"messages\":[{\"role\":\"user\","
                        + "\"content\":\"hi\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
                        + "\"description\":null,\"parameters\":{\"type\":\"object\",\"properties\":{\"x\":{\"default\":null}}},"
                        + "\"strict\":null}}],\"chat_template_kwargs\":{\"enable_thinking\":null},\"logit_bias\":{\"5\":null},"
                        + "\"parallel_tool_calls\":null,\"tool_choice\":null}");
        assertEquals(200, r.statusCode(), r.body());
        Prompt.Chat chat = (Prompt.Chat) lastPrompt.get();
        @SuppressWarnings("unchecked")
        Map<String, Object> fn = (Map<String, Object>) chat.tools().get(0).get("function");
        assertEquals(List.of("name", "parameters"), new ArrayList<>(fn.keySet()));
        // a JSON schema's nulls are data: they stay
        assertEquals(
                "{type=object, properties={x={default=null}}}",
                fn.get("parameters").toString());
        assertEquals(Map.of(), chat.templateKwargs());
    }

    // --- legacy completions logprobs ---

    @Test
    void integerLogprobsOnCompletionsAnswerInTheLegacyShape() throws Exception {
        HttpResponse<String> r = server.post("/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":3,\"logprobs\":2}");
        assertEquals(200, r.statusCode(), r.body());
        JsonNode lp = json(r).at("/choices/0/logprobs");
        assertEquals(JSON.readTree("[\"t1\",\"t2\",\"t3\"]"), lp.get("tokens"));
        assertEquals(JSON.readTree("[-0.5,-0.5,-0.5]"), lp.get("token_logprobs"));
        assertEquals(JSON.readTree("[0,2,4]"), lp.get("text_offset"));
        // two alternatives per token, the likelier first
        assertEquals(
                "{\"t101\":-1.0,\"t100\":-2.0}", lp.get("top_logprobs").get(0).toString());
        assertEquals(3, lp.get("top_logprobs").size());
    }

    @Test
    void integerLogprobsStreamTheLegacyShapeWithRunningOffsets() throws Exception {
        HttpResponse<String> r = server.post(
                "/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":3,\"logprobs\":1," + "\"stream\":true}");
        assertEquals(200, r.statusCode(), r.body());
        List<JsonNode> withLogprobs = new ArrayList<>();
        for (String event : r.body().split("\n\n")) {
            if (!event.equals("data: [DONE]")) {
                JsonNode lp = JSON.readTree(event.substring("data: ".length())).at("/choices/0/logprobs");
                if (!lp.isMissingNode()) {
                    withLogprobs.add(lp);
                }
            }
        }
        assertEquals(3, withLogprobs.size());
        assertEquals(
                "{\"tokens\":[\"t2\"],\"token_logprobs\":[-0.5],\"top_logprobs\":[{\"t200\":-1.0}],"
                        + "\"text_offset\":[2]}",
                withLogprobs.get(1).toString());
        assertEquals(4, withLogprobs.get(2).at("/text_offset/0").asInt());
    }

    @Test
    void booleanLogprobsOnCompletionsKeepMlxLmsShape() throws Exception {
        HttpResponse<String> r = server.post(
                "/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":2,\"logprobs\":true," + "\"top_logprobs\":1}");
        assertEquals(200, r.statusCode(), r.body());
        JsonNode content = json(r).at("/choices/0/logprobs/content");
        assertEquals(2, content.size());
        assertEquals("t1", content.get(0).get("token").asText());
        assertEquals(1, content.get(0).get("top_logprobs").size());
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "/v1/completions|{\"prompt\":\"x\",\"logprobs\":6}|logprobs|between 0 and 5",
                "/v1/completions|{\"prompt\":\"x\",\"logprobs\":-1}|logprobs|between 0 and 5",
                "/v1/completions|{\"prompt\":\"x\",\"logprobs\":2,\"top_logprobs\":2}|top_logprobs|integer logprobs",
                "/v1/chat/completions|{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"logprobs\":2}|logprobs|boolean",
                "/v1/completions|{\"prompt\":\"x\",\"max_tokens\":1000000000000}|max_tokens|too large: it must be at most 8191",
                "/v1/chat/completions|{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                        + "\"max_completion_tokens\":99999999999999999999}|max_completion_tokens|at most 8191",
            })
    void badLogprobsAndHugeLimitsAreNamed(String spec) throws Exception {
        String[] p = spec.split("\\|");
        HttpResponse<String> r = server.post(p[0], p[1]);
        assertEquals(400, r.statusCode(), r.body());
        JsonNode error = json(r).get("error");
        assertEquals(p[2], error.get("param").asText(), r.body());
        assertTrue(error.get("message").asText().contains(p[3]), r.body());
    }
}
