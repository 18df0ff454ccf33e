package dev.mlxring.exec.sample;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.SamplingParams;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/** Validation and defaults of {@link SamplingParams}, and the {@link EngineRng} lease rules. No MLX. */
class SamplingParamsTest {

    private static void rejected(UnaryOperator<SamplingParams.Builder> edit, String field, String range) {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> edit.apply(SamplingParams.builder()).build());
        assertTrue(e.getMessage().startsWith(field + " "), e.getMessage());
        assertTrue(e.getMessage().contains(range), e.getMessage());
    }

    @Test
    void defaultsAreMlxLmServerDefaults() {
        SamplingParams p = SamplingParams.GREEDY;
        assertTrue(p.greedy());
        assertTrue(p.noLogitsProcessors());
        assertEquals(1.0, p.topP());
        assertEquals(0, p.topK());
        assertEquals(0.0, p.minP());
        assertEquals(1, p.minTokensToKeep());
        assertEquals(0.1, p.xtcThreshold());
        assertEquals(20, p.repetitionContextSize());
        assertEquals(20, p.presenceContextSize());
        assertEquals(20, p.frequencyContextSize());
        assertEquals(null, p.seed());
        assertEquals(0, p.topLogprobs());
    }

    @Test
    void outOfRangeValuesNameTheFieldAndTheRange() {
        rejected(b -> b.temperature(-0.1), "temperature", "[0, +inf)");
        rejected(b -> b.temperature(Double.NaN), "temperature", "[0, +inf)");
        rejected(b -> b.topP(-0.01), "top_p", "[0, 1]");
        rejected(b -> b.topP(1.01), "top_p", "[0, 1]");
        rejected(b -> b.topK(-1), "top_k", "[0, +inf)");
        rejected(b -> b.minP(-0.5), "min_p", "[0, 1]");
        rejected(b -> b.minP(1.5), "min_p", "[0, 1]");
        rejected(b -> b.minTokensToKeep(0), "min_tokens_to_keep", "[1, +inf)");
        rejected(b -> b.xtcProbability(1.1), "xtc_probability", "[0, 1]");
        rejected(b -> b.xtcThreshold(0.6), "xtc_threshold", "[0, 0.5]");
        rejected(b -> b.xtcThreshold(-0.1), "xtc_threshold", "[0, 0.5]");
        rejected(b -> b.repetitionPenalty(-1), "repetition_penalty", "[0, +inf)");
        rejected(b -> b.repetitionContextSize(-1), "repetition_context_size", "[0, +inf)");
        rejected(b -> b.presenceContextSize(-1), "presence_context_size", "[0, +inf)");
        rejected(b -> b.frequencyContextSize(-1), "frequency_context_size", "[0, +inf)");
        rejected(b -> b.presencePenalty(Double.POSITIVE_INFINITY), "presence_penalty", "finite");
        rejected(b -> b.topLogprobs(12), "top_logprobs", "[0, 11]");
        rejected(b -> b.topLogprobs(-1), "top_logprobs", "[0, 11]");
        rejected(b -> b.seed(-5L), "seed", "[0, 2^63)");
        rejected(b -> b.xtcSpecialTokens(-3), "xtc_special_tokens", "[0, vocabulary size)");
        rejected(b -> b.logitBias(Map.of(-1, 1.0)), "logit_bias", "[0, vocabulary size)");
        Map<Integer, Double> nan = new HashMap<>();
        nan.put(3, Double.NaN);
        rejected(b -> b.logitBias(nan), "logit_bias[3]", "finite");
    }

    @Test
    void edgeValuesMlxLmAcceptsAreAccepted() {
        // top_p 0 and 1 both mean "off" (make_sampler only applies 0 < top_p < 1); negative
        // presence/frequency penalties are accepted by mlx-lm and the server; context size 0 = all.
        SamplingParams p = SamplingParams.builder()
                .temperature(0.5)
                .topP(0)
                .minP(1)
                .xtcThreshold(0.5)
                .xtcProbability(1)
                .presencePenalty(-1.5)
                .frequencyPenalty(-0.5)
                .repetitionContextSize(0)
                .topLogprobs(11)
                .seed(0L)
                .build();
        assertFalse(p.greedy());
        assertFalse(p.noLogitsProcessors());
        assertEquals(0L, p.seed());
    }

    @Test
    void immutable() {
        int[] special = {1, 2};
        Map<Integer, Double> bias = new LinkedHashMap<>();
        bias.put(7, 1.0);
        SamplingParams p = SamplingParams.builder()
                .xtcSpecialTokens(special)
                .logitBias(bias)
                .build();
        special[0] = 99;
        bias.put(8, 2.0);
        assertArrayEquals(new int[] {1, 2}, p.xtcSpecialTokens());
        p.xtcSpecialTokens()[0] = 42;
        assertArrayEquals(new int[] {1, 2}, p.xtcSpecialTokens());
        assertEquals(Map.of(7, 1.0), p.logitBias());
        assertThrows(UnsupportedOperationException.class, () -> p.logitBias().put(1, 1.0));
        assertEquals(p, p.toBuilder().build());
        assertEquals(p.hashCode(), p.toBuilder().build().hashCode());
        assertNotEquals(p, p.toBuilder().seed(3L).build());
    }

    @Test
    void samplerChecksTheVocabulary() {
        assertThrows(
                IllegalArgumentException.class,
                () -> Sampler.create(
                        SamplingParams.builder().temperature(1).topK(512).build(), 512));
        Sampler.create(SamplingParams.builder().temperature(1).topK(511).build(), 512);
        // greedy ignores top_k, as make_sampler does
        Sampler.create(SamplingParams.builder().topK(512).build(), 512);
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> Sampler.create(
                        SamplingParams.builder().logitBias(Map.of(512, 1.0)).build(), 512));
        assertTrue(e.getMessage().contains("logit_bias"), e.getMessage());
        assertThrows(
                IllegalArgumentException.class,
                () -> Sampler.create(
                        SamplingParams.builder().xtcSpecialTokens(600).build(), 512));
    }

    @Test
    void processorsFollowMakeLogitsProcessorsOrder() {
        SamplingParams p = SamplingParams.builder()
                .frequencyPenalty(0.1)
                .presencePenalty(0.2)
                .repetitionPenalty(1.1)
                .logitBias(Map.of(1, 1.0))
                .build();
        List<LogitsProcessor> ps = LogitsProcessors.make(p);
        assertEquals(4, ps.size());
        assertTrue(ps.get(0) instanceof LogitsProcessors.LogitBias);
        assertTrue(ps.get(1) instanceof LogitsProcessors.RepetitionPenalty);
        assertTrue(ps.get(2) instanceof LogitsProcessors.PresencePenalty);
        assertTrue(ps.get(3) instanceof LogitsProcessors.FrequencyPenalty);
        assertEquals(20, SamplingState.historyToKeep(ps));
        assertEquals(
                0,
                SamplingState.historyToKeep(LogitsProcessors.make(SamplingParams.builder()
                        .presencePenalty(1)
                        .presenceContextSize(0)
                        .build())));
        assertEquals(
                -1,
                SamplingState.historyToKeep(LogitsProcessors.make(
                        SamplingParams.builder().logitBias(Map.of(1, 1.0)).build())));
        assertTrue(LogitsProcessors.make(
                        SamplingParams.builder().repetitionPenalty(0).build())
                .isEmpty());
    }

    @Test
    void engineRngLeases() {
        EngineRng rng = EngineRng.seeded(5);
        assertArrayEquals(new int[] {0, 5}, rng.keyWords()); // mx.random.key(5) = [0, 5]
        EngineRng.Lease a = rng.acquire();
        assertTrue(a.continuing());
        assertEquals(0, a.k0());
        assertEquals(5, a.k1());
        EngineRng.Lease b = rng.acquire(); // overlapping: an independent key, engine key untouched
        assertFalse(b.continuing());
        rng.release(b, new int[] {7, 7});
        assertArrayEquals(new int[] {0, 5}, rng.keyWords());
        rng.release(a, new int[] {11, 12});
        assertArrayEquals(new int[] {11, 12}, rng.keyWords());
        EngineRng.Lease c = rng.acquire(); // the next request continues from there
        assertTrue(c.continuing());
        assertEquals(11, c.k0());
        assertEquals(12, c.k1());
        assertArrayEquals(
                new int[] {(int) (0x123456789abL >>> 32), (int) 0x123456789abL},
                EngineRng.seeded(0x123456789abL).keyWords());
    }
}
