package dev.mlxring.plan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.ChatMessage;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.KvQuantization;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.SamplingSpec;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RequestPlannerTest {
    private final RequestPlanner planner =
            new RequestPlanner(RequestPlanner.Defaults.mlxLm(64), new int[] {2}, new int[] {198, 2}, 100);
    private final PreparedPrompt prompt = new PreparedPrompt(new int[] {1, 2, 3}, 3);

    private static GenerationRequest req(SamplingSpec s, Integer maxTokens, int topLogprobs) {
        GenerationRequest.Builder b = GenerationRequest.builder()
                .id("r")
                .model("m")
                .prompt(new Prompt.Tokens(new int[] {1}))
                .sampling(s)
                .maxTokens(maxTokens)
                .stop("x");
        if (topLogprobs > 0) {
            b.logprobs(topLogprobs);
        }
        return b.build();
    }

    @Test
    void defaultsFillWhatTheRequestLeavesOut() throws Exception {
        ExecutionPlan p = planner.plan(req(null, null, 0), prompt);
        // The default 512 is cut to what the 64-token context leaves after the 3-token prompt.
        assertEquals(61, p.maxTokens());
        RequestPlanner roomy = new RequestPlanner(RequestPlanner.Defaults.mlxLm(8192), new int[] {2}, new int[0], 100);
        assertEquals(512, roomy.plan(req(null, null, 0), prompt).maxTokens());
        assertArrayEquals(new int[] {2}, p.stopTokenIds());
        assertEquals(List.of("x"), p.stopStrings());
        SamplingParams s = p.sampling();
        assertTrue(s.greedy());
        assertArrayEquals(new int[] {198, 2}, s.xtcSpecialTokens());
    }

    @Test
    void theChatRequestsToolsReachThePlan() throws Exception {
        List<Map<String, Object>> tools = List.of(Map.of("type", "function", "function", Map.of("name", "f")));
        Prompt.Chat chat = new Prompt.Chat(List.of(ChatMessage.of("user", "hi")), tools, null);
        ExecutionPlan p = planner.plan(
                GenerationRequest.builder().id("r").model("m").prompt(chat).build(), prompt);
        assertEquals(tools, p.tools());
        assertEquals(List.of(), planner.plan(req(null, null, 0), prompt).tools(), "no tools for other prompts");
    }

    @Test
    void theServersKvSchemeIsSealedIntoEveryPlan() throws Exception {
        assertEquals(null, planner.plan(req(null, null, 0), prompt).kvScheme(), "full precision by default");
        KvQuantization kv = new KvQuantization(4, 32, 100);
        RequestPlanner quantized = new RequestPlanner(
                new RequestPlanner.Defaults(512, 0.0, 1.0, 0, 0.0, 64, kv), new int[] {2}, new int[] {198, 2}, 100);
        assertEquals(kv, quantized.plan(req(null, null, 0), prompt).kvScheme());
    }

    @Test
    void requestOverridesWin() throws Exception {
        SamplingSpec spec = new SamplingSpec(0.7, 0.9, 5, null, null, null, 1.1, 10, null, null, Map.of(5, 2.0), 42L);
        SamplingParams s = planner.plan(req(spec, 7, 3), prompt).sampling();
        assertEquals(0.7, s.temperature());
        assertEquals(0.9, s.topP());
        assertEquals(5, s.topK());
        assertEquals(1.1, s.repetitionPenalty());
        assertEquals(10, s.repetitionContextSize());
        assertEquals(42L, s.seed());
        assertEquals(3, s.topLogprobs());
        assertEquals(2.0, s.logitBias().get(5));
    }

    @Test
    void refusesWithAReasonNamingTheField() {
        RequestException tooLong = assertThrows(
                RequestException.class, () -> planner.plan(req(null, 4, 0), new PreparedPrompt(new int[64], 64)));
        assertEquals(ErrorType.CONTEXT_LENGTH_EXCEEDED, tooLong.type());
        assertTrue(tooLong.getMessage().contains("maximum context length is 64 tokens"), tooLong.getMessage());

        SamplingSpec badBias =
                new SamplingSpec(null, null, null, null, null, null, null, null, null, null, Map.of(1000, 1.0), null);
        RequestException bias = assertThrows(RequestException.class, () -> planner.plan(req(badBias, 4, 0), prompt));
        assertTrue(bias.getMessage().contains("logit_bias"), bias.getMessage());

        SamplingSpec badTemp = new SamplingSpec(-1.0, null, null, null, null, null, null, null, null, null, null, null);
        RequestException temp = assertThrows(RequestException.class, () -> planner.plan(req(badTemp, 4, 0), prompt));
        assertTrue(temp.getMessage().contains("temperature"), temp.getMessage());

        RequestException top = assertThrows(RequestException.class, () -> planner.plan(req(null, 4, 12), prompt));
        assertEquals(ErrorType.UNSUPPORTED, top.type());
    }

    @Test
    void promptPlusMaxTokensMustFitTheContextAsOpenAiRequires() throws Exception {
        assertEquals(61, planner.plan(req(null, 61, 0), prompt).maxTokens(), "exactly the context is fine");
        RequestException over = assertThrows(RequestException.class, () -> planner.plan(req(null, 62, 0), prompt));
        assertEquals(ErrorType.CONTEXT_LENGTH_EXCEEDED, over.type());
        assertTrue(
                over.getMessage().contains("you requested 65 tokens (3 in the messages, 62 in the completion)"),
                over.getMessage());
    }

    @Test
    void operatorPromptLimitBindsBelowTheContext() throws Exception {
        RequestPlanner limited = new RequestPlanner(
                RequestPlanner.Defaults.mlxLm(64).withMaxPromptTokens(2), new int[] {2}, new int[0], 100);
        RequestException e = assertThrows(RequestException.class, () -> limited.plan(req(null, 4, 0), prompt));
        assertEquals(ErrorType.CONTEXT_LENGTH_EXCEEDED, e.type());
        assertTrue(e.getMessage().contains("at most 2 prompt tokens (--max-prompt-tokens)"), e.getMessage());
        assertEquals(
                4,
                limited.plan(req(null, 4, 0), new PreparedPrompt(new int[] {1, 2}, 2))
                        .maxTokens());
    }

    @Test
    void stopStringsThatCanNeverMatchAreRefused() {
        for (String bad : new String[] {"\ud800", "a\udc00", ""}) {
            GenerationRequest r = GenerationRequest.builder()
                    .id("r")
                    .model("m")
                    .prompt(new Prompt.Tokens(new int[] {1}))
                    .maxTokens(4)
                    .stop(List.of("ok", bad))
                    .build();
            RequestException e = assertThrows(RequestException.class, () -> planner.plan(r, prompt));
            assertEquals(ErrorType.INVALID_REQUEST, e.type());
            assertTrue(e.getMessage().startsWith("stop[1]"), e.getMessage());
        }
    }
}
