package dev.mlxring.pipeline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A plan carries resolved sampling settings: one without them is refused at construction; its
 * builder names what it needs and defaults the rest; {@link ExecutionPlan#withAdapter} changes
 * only the adapter.
 */
class ExecutionPlanTest {
    private static final PreparedPrompt PROMPT = new PreparedPrompt(new int[] {1, 2}, 0);

    @Test
    void refusesAPlanWithoutSamplingSettings() {
        NullPointerException e = assertThrows(
                NullPointerException.class,
                () -> ExecutionPlan.builder()
                        .requestId("r")
                        .prompt(PROMPT)
                        .maxTokens(4)
                        .build());
        assertEquals("sampling", e.getMessage());
    }

    @Test
    void theBuilderNamesAMissingPromptOrMaxTokensAndDefaultsTheRest() {
        IllegalStateException noPrompt = assertThrows(
                IllegalStateException.class,
                () -> ExecutionPlan.builder()
                        .sampling(SamplingParams.GREEDY)
                        .maxTokens(4)
                        .build());
        assertTrue(noPrompt.getMessage().contains("needs a prompt"), noPrompt.getMessage());
        IllegalStateException noMax = assertThrows(
                IllegalStateException.class,
                () -> ExecutionPlan.builder()
                        .prompt(PROMPT)
                        .sampling(SamplingParams.GREEDY)
                        .build());
        assertTrue(noMax.getMessage().contains("needs maxTokens"), noMax.getMessage());

        ExecutionPlan p = ExecutionPlan.builder()
                .prompt(PROMPT)
                .sampling(SamplingParams.GREEDY)
                .maxTokens(0)
                .build();
        assertNull(p.requestId());
        assertEquals(0, p.maxTokens());
        assertArrayEquals(new int[0], p.stopTokenIds());
        assertEquals(List.of(), p.stopStrings());
        assertFalse(p.logprobs());
        assertEquals(0, p.topLogprobs());
        assertEquals(List.of(), p.tools());
        assertNull(p.kvScheme());
        assertNull(p.constraint());
        assertNull(p.speculative());
        assertNull(p.adapter());
    }

    @Test
    void withAdapterChangesOnlyTheAdapter() {
        SpeculativeSpec ngram = new SpeculativeSpec(SpeculativeSpec.Method.NGRAM, 2);
        KvQuantization kv = KvQuantization.of(8);
        ExecutionPlan p = new ExecutionPlan(
                "r",
                PROMPT,
                SamplingParams.GREEDY,
                7,
                new int[] {2, 3},
                List.of("END"),
                true,
                4,
                List.of(Map.of("type", "function")),
                kv,
                null,
                ngram,
                "fr");
        ExecutionPlan q = p.withAdapter("de");
        assertEquals("de", q.adapter());
        assertEquals(
                List.of(
                        p.requestId(),
                        p.prompt(),
                        p.sampling(),
                        p.maxTokens(),
                        List.of(2, 3),
                        p.stopStrings(),
                        p.logprobs(),
                        p.topLogprobs(),
                        p.tools(),
                        p.kvScheme(),
                        p.speculative()),
                List.of(
                        q.requestId(),
                        q.prompt(),
                        q.sampling(),
                        q.maxTokens(),
                        java.util.Arrays.stream(q.stopTokenIds()).boxed().toList(),
                        q.stopStrings(),
                        q.logprobs(),
                        q.topLogprobs(),
                        q.tools(),
                        q.kvScheme(),
                        q.speculative()));
        assertSame(kv, q.kvScheme());
    }
}
