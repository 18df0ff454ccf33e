package dev.mlxring.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link EngineConfig#builder()}, {@link GenerationRequest#builder()} and {@link SamplingSpec#builder()}. */
class BuildersTest {
    @Test
    void engineConfigBuilderStartsFromTheDefaultsAndSetsEachKnobItNames() {
        assertEquals(EngineConfig.defaults(), EngineConfig.builder().build());
        EngineConfig c = EngineConfig.builder()
                .requestRingSize(64)
                .tokenRingSize(128)
                .prepShards(3)
                .maxQueued(7)
                .creditsPerSession(9)
                .idleConsumerTimeoutNs(11)
                .maxTopLogprobs(5)
                .waitMode(WaitMode.YIELDING)
                .decodeConcurrency(6)
                .promptConcurrency(2)
                .kvBudgetBytes(13)
                .prefillShare(0.25)
                .shortPromptsFirst(false)
                .build();
        assertEquals(new EngineConfig(64, 128, 3, 7, 9, 11, 5, WaitMode.YIELDING, 6, 2, 13, 0.25, false), c);
        assertEquals(c, c.toBuilder().build());
        assertEquals(
                c.withConcurrency(1, 1),
                c.toBuilder().decodeConcurrency(1).promptConcurrency(1).build());
    }

    /** Decode concurrency alone brings prompt concurrency along as serve does: min(decode, 8). */
    @Test
    void promptConcurrencyFollowsDecodeConcurrencyUnlessSet() {
        assertEquals(4, EngineConfig.builder().decodeConcurrency(4).build().promptConcurrency());
        assertEquals(
                EngineConfig.DEFAULT_PROMPT_CONCURRENCY,
                EngineConfig.builder().decodeConcurrency(16).build().promptConcurrency());
        assertEquals(
                3,
                EngineConfig.builder()
                        .promptConcurrency(3)
                        .decodeConcurrency(16)
                        .build()
                        .promptConcurrency());
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> EngineConfig.builder()
                        .decodeConcurrency(2)
                        .promptConcurrency(3)
                        .build());
        assertEquals("promptConcurrency (3) must be at most decodeConcurrency (2)", e.getMessage());
    }

    @Test
    void engineConfigBuilderRefusesOutOfRangeValuesByName() {
        assertEquals(
                "decodeConcurrency must be >= 1, got 0",
                assertThrows(
                                IllegalArgumentException.class,
                                () -> EngineConfig.builder().decodeConcurrency(0))
                        .getMessage());
        assertEquals(
                "prefillShare must be in (0, 1], got 1.5",
                assertThrows(
                                IllegalArgumentException.class,
                                () -> EngineConfig.builder().prefillShare(1.5))
                        .getMessage());
        assertEquals(
                "kvBudgetBytes must be >= 0 (0 = no limit), got -1",
                assertThrows(
                                IllegalArgumentException.class,
                                () -> EngineConfig.builder().kvBudgetBytes(-1))
                        .getMessage());
        assertEquals(
                "requestRingSize must be a power of two, got 100",
                assertThrows(
                                IllegalArgumentException.class,
                                () -> EngineConfig.builder().requestRingSize(100))
                        .getMessage());
        assertThrows(NullPointerException.class, () -> EngineConfig.builder().waitMode(null));
    }

    @Test
    void generationRequestBuilderSetsEachFieldItNames() {
        Prompt prompt = new Prompt.Text("hello");
        SamplingSpec sampling = SamplingSpec.builder().temperature(0.5).build();
        OutputConstraint constraint = new OutputConstraint(OutputConstraint.Kind.REGEX, "[a-z]+", "regex");
        GenerationRequest r = GenerationRequest.builder()
                .id("r1")
                .model("m")
                .prompt(prompt)
                .sampling(sampling)
                .maxTokens(12)
                .stop("\n", "END")
                .logprobs(3)
                .constraint(constraint)
                .build();
        assertEquals(
                new GenerationRequest(
                        "r1", "m", prompt, sampling, 12, List.of("\n", "END"), true, 3, constraint, null, null, null),
                r);
        ToolChoiceSpec required = new ToolChoiceSpec(ToolChoiceSpec.Mode.REQUIRED, null, true, "function.parameters");
        assertEquals(
                required,
                GenerationRequest.builder()
                        .prompt(prompt)
                        .toolChoice(required)
                        .build()
                        .toolChoice());
        SpeculativeSpec ngram = new SpeculativeSpec(SpeculativeSpec.Method.NGRAM, 2);
        assertEquals(
                ngram,
                GenerationRequest.builder()
                        .prompt(prompt)
                        .speculative(ngram)
                        .build()
                        .speculative());
        assertEquals(
                ngram,
                r.withSpeculative(ngram)
                        .withConstraint(null)
                        .withToolChoice(required)
                        .speculative(),
                "the with-methods carry the speculative choice along");
        assertNull(r.speculative(), "unset: the server's default");
    }

    /** What is not set is the record's default: no id, no stop, no logprobs, free text, engine sampling. */
    @Test
    void generationRequestBuilderDefaultsAndUserMessage() {
        GenerationRequest r =
                GenerationRequest.builder().userMessage("What is 2+2?").build();
        assertEquals(
                new GenerationRequest(
                        null,
                        null,
                        new Prompt.Chat(List.of(ChatMessage.of("user", "What is 2+2?")), List.of(), Map.of()),
                        null,
                        null,
                        List.of(),
                        false,
                        0,
                        null,
                        null,
                        null,
                        null),
                r);
        assertEquals(SamplingSpec.DEFAULTS, r.sampling());
        assertEquals(ToolChoiceSpec.DEFAULT, r.toolChoice());
        assertInstanceOf(Prompt.Chat.class, r.prompt());
        IllegalStateException e = assertThrows(
                IllegalStateException.class, () -> GenerationRequest.builder().build());
        assertTrue(e.getMessage().contains("needs a prompt"), e.getMessage());
        assertEquals(
                "maxTokens must be >= 1, got 0",
                assertThrows(
                                IllegalArgumentException.class,
                                () -> GenerationRequest.builder().maxTokens(0))
                        .getMessage());
    }

    /** Each with-method changes its own field and keeps the other eleven; toBuilder copies every field. */
    @Test
    void generationRequestWithMethodsChangeOnlyTheirField() {
        GenerationRequest r = new GenerationRequest(
                "r1",
                "m",
                new Prompt.Text("a"),
                SamplingSpec.builder().temperature(0.5).build(),
                null,
                List.of("END"),
                true,
                2,
                null,
                null,
                new SpeculativeSpec(SpeculativeSpec.Method.NGRAM, 2),
                "fr");
        assertEquals(r, r.toBuilder().build());
        OutputConstraint c = new OutputConstraint(OutputConstraint.Kind.REGEX, "[a-z]+", "regex");
        ToolChoiceSpec required = new ToolChoiceSpec(ToolChoiceSpec.Mode.REQUIRED, null, true, "function.parameters");
        SpeculativeSpec off = new SpeculativeSpec(SpeculativeSpec.Method.OFF, null);
        assertEquals(fields(r, 8, c), fields(r.withConstraint(c), -1, null));
        assertEquals(fields(r, 9, required), fields(r.withToolChoice(required), -1, null));
        assertEquals(fields(r, 10, off), fields(r.withSpeculative(off), -1, null));
        assertEquals(fields(r, 11, "de"), fields(r.withAdapter("de"), -1, null));
        assertNull(GenerationRequest.builder()
                .prompt(r.prompt())
                .maxTokens(null)
                .build()
                .maxTokens());
    }

    /** The request's fields in order, the one at {@code index} replaced by {@code value}. */
    private static List<Object> fields(GenerationRequest r, int index, Object value) {
        List<Object> f = new java.util.ArrayList<>(java.util.Arrays.asList(
                r.id(),
                r.model(),
                r.prompt(),
                r.sampling(),
                r.maxTokens(),
                r.stop(),
                r.logprobs(),
                r.topLogprobs(),
                r.constraint(),
                r.toolChoice(),
                r.speculative(),
                r.adapter()));
        if (index >= 0) {
            f.set(index, value);
        }
        return f;
    }

    @Test
    void samplingSpecBuilderSetsEachFieldItNames() {
        SamplingSpec s = SamplingSpec.builder()
                .temperature(0.1)
                .topP(0.2)
                .topK(3)
                .minP(0.4)
                .xtc(0.5, 0.06)
                .repetitionPenalty(1.7, 8)
                .presencePenalty(0.9)
                .frequencyPenalty(1.1)
                .logitBias(Map.of(5, -1.0))
                .seed(12L)
                .build();
        assertEquals(new SamplingSpec(0.1, 0.2, 3, 0.4, 0.5, 0.06, 1.7, 8, 0.9, 1.1, Map.of(5, -1.0), 12L), s);
        assertEquals(SamplingSpec.DEFAULTS, SamplingSpec.builder().build());
    }
}
