package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.exec.batch.BatchGenerator;
import dev.mlxring.exec.batch.BatchRequest;
import dev.mlxring.exec.batch.BatchToken;
import dev.mlxring.exec.generate.GenerateStep;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.pipeline.SamplingParams;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The B=1 fast path: a row alone in the {@link BatchGenerator} keeps solo caches and produces the
 * serial path's ({@link GenerateStep} / {@code GenerationRun}) tokens and logprobs bytes at every
 * step; the batch caches appear only when a second row joins. Also: the generator frees every
 * array it made (active memory returns to where it was) and refuses bad rows by field.
 */
class BatchFastPathTest {
    private static Path models;

    @BeforeAll
    static void buildOracleModels() throws Exception {
        models = OracleFixtures.build().work().resolve("models");
    }

    static Stream<Arguments> cells() {
        SamplingParams sampled = SamplingParams.builder()
                .temperature(0.9)
                .topK(40)
                .seed(5L)
                .repetitionPenalty(1.2)
                .logitBias(Map.of(3, 1.5))
                .build();
        return Stream.of(
                Arguments.of("llama-bf16", 5, SamplingParams.GREEDY),
                Arguments.of("llama-bf16", 70, SamplingParams.GREEDY),
                Arguments.of("qwen3-q4", 70, sampled),
                Arguments.of("qwen2-f32", 23, sampled));
    }

    @ParameterizedTest(name = "{0} prompt {1} {2}")
    @MethodSource("cells")
    void aLoneRowEqualsTheSerialPath(String modelName, int promptLength, SamplingParams params) throws Exception {
        int maxTokens = 24;
        int prefillStep = 32;
        int[] prompt = BatchParityTest.prompt(promptLength, 31, 512);
        try (LanguageModel model = Models.load(models.resolve(modelName))) {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            List<String> serial = new ArrayList<>();
            GenerateStep.run(
                    model,
                    prompt,
                    new GenerationOptions(maxTokens, prefillStep, new int[0], false),
                    params,
                    null,
                    (token, logprobs) -> {
                        serial.add(token + ":" + HexFormat.of().formatHex(sha.digest(logprobs.toBytes())));
                        return true;
                    });
            List<String> batched = new ArrayList<>();
            try (BatchGenerator gen = new BatchGenerator(model, prefillStep, 8, 8, null)) {
                gen.insert(new BatchRequest(prompt, maxTokens, params, new int[0]));
                while (!gen.idle()) {
                    for (BatchToken t : gen.next()) {
                        assertTrue(
                                gen.soloGeneration() || t.finishReason() != null, "a lone row runs on its solo caches");
                        batched.add(t.token() + ":"
                                + HexFormat.of()
                                        .formatHex(sha.digest(t.logprobs().toBytes())));
                    }
                }
            }
            assertEquals(maxTokens, serial.size());
            assertEquals(serial, batched, modelName + ": lone row vs serial (token:logprobs sha256 per step)");
        }
    }

    /**
     * A model whose rope cannot batch (dynamic NTK: its base follows one int offset) runs its rows
     * one at a time through the generator, each a lone row equal to the serial path.
     */
    @Test
    void aModelThatCannotBatchRunsItsRowsOneAtATime() throws Exception {
        try (LanguageModel model = Models.load(models.resolve("qwen2-dynamic"))) {
            assertFalse(model.batchable());
            int[][] prompts = {BatchParityTest.prompt(30, 3, 512), BatchParityTest.prompt(9, 4, 512)};
            List<List<Integer>> serial = new ArrayList<>();
            for (int[] p : prompts) {
                List<Integer> tokens = new ArrayList<>();
                GenerateStep.run(model, p, new GenerationOptions(12, 16, new int[0], false), t -> tokens.add(t));
                serial.add(tokens);
            }
            List<List<Integer>> batched = List.of(new ArrayList<>(), new ArrayList<>());
            try (BatchGenerator gen = new BatchGenerator(model, 16, 8, 8, null)) {
                for (int[] p : prompts) {
                    gen.insert(new BatchRequest(p, 12, SamplingParams.GREEDY, new int[0]));
                }
                while (!gen.idle()) {
                    assertTrue(gen.generating() + gen.prefilling() <= 1, "one row at a time");
                    for (BatchToken t : gen.next()) {
                        batched.get(t.uid()).add(t.token());
                    }
                }
            }
            assertEquals(serial, batched);
        }
    }

    /**
     * The unit that reads a row's first token holds the next forward back until
     * {@link BatchGenerator#submitHeldStep} (its caller hands the token out first), and no other
     * unit does; with {@link BatchGenerator#holdFirstTokenSteps} off none does. The tokens and
     * logprobs are the same bytes either way, for a lone row and for rows that share the batch.
     */
    @Test
    void onlyTheUnitThatReadsAFirstTokenHoldsTheNextForward() {
        try (LanguageModel model = Models.load(models.resolve("llama-bf16"))) {
            List<String> held = new ArrayList<>();
            List<String> plain = new ArrayList<>();
            List<Integer> heldUnits = run(model, true, held);
            List<Integer> unheldUnits = run(model, false, plain);
            assertEquals(plain, held, "the same tokens and logprobs with and without holding");
            assertEquals(List.of(), unheldUnits);
            // Row 0 alone: its first token in unit 2; row 1 joins the generating row: its first in unit 5.
            assertEquals(List.of(2, 5), heldUnits, "the units that held a forward");
        }
    }

    /** Two rows, the second inserted once the first generates; returns the units that held their next forward. */
    private static List<Integer> run(LanguageModel model, boolean hold, List<String> entries) {
        List<Integer> heldUnits = new ArrayList<>();
        try (BatchGenerator gen = new BatchGenerator(model, 16, 8, 8, null)) {
            gen.holdFirstTokenSteps(hold);
            gen.insert(new BatchRequest(BatchParityTest.prompt(9, 1, 512), 8, SamplingParams.GREEDY, new int[0]));
            for (int unit = 0; !gen.idle(); unit++) {
                assertTrue(unit < 100, "the rows do not finish");
                if (unit == 3) {
                    gen.insert(
                            new BatchRequest(BatchParityTest.prompt(5, 2, 512), 4, SamplingParams.GREEDY, new int[0]));
                }
                for (BatchToken t : gen.next()) {
                    entries.add(t.uid() + ":" + t.token() + ":"
                            + HexFormat.of().formatHex(t.logprobs().toBytes()));
                }
                if (gen.stepHeld()) {
                    heldUnits.add(unit);
                    gen.submitHeldStep();
                    assertFalse(gen.stepHeld());
                }
            }
        }
        return heldUnits;
    }

    /** The solo caches are merged when a second row joins, and not before. */
    @Test
    void soloCachesMergeOnlyWhenASecondRowJoins() {
        try (LanguageModel model = Models.load(models.resolve("llama-bf16"));
                BatchGenerator gen = new BatchGenerator(model, 16, 8, 8, null)) {
            gen.insert(new BatchRequest(BatchParityTest.prompt(9, 1, 512), 12, SamplingParams.GREEDY, new int[0]));
            gen.next(); // prefill (8 tokens), then the row's first step on the next call
            gen.next();
            assertEquals(1, gen.generating());
            assertTrue(gen.soloGeneration());
            gen.insert(new BatchRequest(BatchParityTest.prompt(3, 2, 512), 4, SamplingParams.GREEDY, new int[0]));
            gen.next(); // the joiner prefills
            assertTrue(gen.soloGeneration(), "still alone while the joiner prefills");
            gen.next(); // the joiner splits off and joins: merge
            assertEquals(2, gen.generating());
            assertFalse(gen.soloGeneration());
            while (!gen.idle()) {
                gen.next();
            }
        }
    }

    /** Merges, extends, filters and padding rolls leave no array behind once the generator is closed. */
    @Test
    void aBatchRunReleasesItsArrays() throws Exception {
        try (LanguageModel model = Models.load(models.resolve("qwen3-f32"))) {
            BatchParityTest.Cell cell = new BatchParityTest.Cell(
                    "memory",
                    "qwen3-f32",
                    16,
                    8,
                    32,
                    List.of(
                            BatchParityTest.greedy(0, 30, 1, 10),
                            BatchParityTest.greedy(0, 4, 2, 3),
                            BatchParityTest.greedy(2, 20, 3, 6)));
            BatchParityTest.run(model, cell); // compiles and caches what it needs
            Mlx.synchronize();
            Mlx.clearCache();
            long before = Mlx.memory().activeBytes();
            BatchParityTest.run(model, cell);
            Mlx.synchronize();
            Mlx.clearCache();
            assertEquals(before, Mlx.memory().activeBytes(), "active bytes after a batch run");
        }
    }

    @Test
    void badRowsAreRefusedByField() {
        try (LanguageModel model = Models.load(models.resolve("llama-bf16"));
                BatchGenerator gen = new BatchGenerator(model, 16, 8, 8, null)) {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> gen.insert(new BatchRequest(new int[0], 4, SamplingParams.GREEDY, new int[0])));
            assertTrue(e.getMessage().contains("prompt"), e.getMessage());
            e = assertThrows(
                    IllegalArgumentException.class,
                    () -> gen.insert(new BatchRequest(new int[] {1, 9999}, 4, SamplingParams.GREEDY, new int[0])));
            assertTrue(e.getMessage().contains("vocabulary"), e.getMessage());
            e = assertThrows(
                    IllegalArgumentException.class,
                    () -> gen.insert(new BatchRequest(new int[] {1, 2}, 0, SamplingParams.GREEDY, new int[0])));
            assertTrue(e.getMessage().contains("max_tokens"), e.getMessage());
            assertTrue(gen.idle(), "refused rows are not queued");
        }
    }
}
