package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.generate.GenerateStep;
import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.generate.GenerationResult;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.sample.TokenLogprobs;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import dev.mlxring.pipeline.SamplingParams;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Live parity of a masked serial run with mlx-lm: scripts/oracle/sample.py runs
 * {@code generate_step} with one more {@code logits_processors} entry, a scripted constraint
 * ({@code scripted_mask.py}: {@code mx.where(mask, logits, -inf)} after mlx-lm's own processors),
 * and this test runs the same prompts through GenerateStep under the same rule
 * ({@link ScriptedConstraint}). Per prompt, bit for bit: the token ids, the sha256 of every step's
 * logprobs (mlx-lm's logprobs of the masked logits) and each chosen logprob; a constraint that
 * runs dry ends the run with {@code error} at the same step, without its token. The constraint
 * is consumed once per token and closed once.
 */
class ConstraintParityTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long SEED = 1234;

    private static Path work;
    private static Path prompts;

    /** One cell: a model, sampling settings, the rule and the run length. */
    record Cell(String name, String model, SamplingParams params, ScriptedConstraint rule, int maxTokens) {
        @Override
        public String toString() {
            return name;
        }
    }

    @BeforeAll
    static void buildOracleModels() throws Exception {
        OracleFixtures fixtures = OracleFixtures.build();
        work = fixtures.work();
        prompts = fixtures.prompts();
    }

    static Stream<Cell> cells() {
        SamplingParams greedy = SamplingParams.builder().logprobs(true).build();
        SamplingParams penalties = SamplingParams.builder()
                .logprobs(true)
                .logitBias(Map.of(17, 4.5, 300, -100.0))
                .repetitionPenalty(1.5)
                .build();
        SamplingParams seeded = SamplingParams.builder()
                .logprobs(true)
                .temperature(0.8)
                .topK(20)
                .seed(SEED)
                .build();
        SamplingParams seededTopP = SamplingParams.builder()
                .logprobs(true)
                .temperature(1.0)
                .topP(0.9)
                .minP(0.02)
                .seed(SEED)
                .build();
        List<Cell> cells = List.of(
                new Cell("llama-bf16/greedy", "llama-bf16", greedy, rule(3, 0, -1), 32),
                // The mask after bias and penalty: the biased id 17 is allowed every third step.
                new Cell("llama-bf16/greedy-penalties", "llama-bf16", penalties, rule(3, 1, -1), 32),
                new Cell("qwen3-q4/seeded", "qwen3-q4", seeded, rule(4, 0, -1), 32),
                new Cell("qwen2-f32/seeded-top-p", "qwen2-f32", seededTopP, rule(2, 0, -1), 32),
                // Dry at step 5: five tokens, then the error; greedy and seeded.
                new Cell("llama-bf16/dry", "llama-bf16", greedy, rule(3, 0, 5), 32),
                new Cell("qwen3-q4/dry-seeded", "qwen3-q4", seeded, rule(5, 2, 5), 32),
                // Dry at the very first step: no token at all.
                new Cell("llama-bf16/dry-first", "llama-bf16", greedy, rule(3, 0, 0), 32),
                new Cell("default/greedy", "default", greedy, rule(7, 0, -1), 12),
                new Cell("default/seeded", "default", seeded, rule(5, 3, -1), 12));
        // -Dconstraint.cells=REGEX runs a subset.
        String only = System.getProperty("constraint.cells");
        return only == null || only.isBlank()
                ? cells.stream()
                : cells.stream().filter(c -> c.name().matches(only));
    }

    private static ScriptedConstraint rule(int modulus, int offset, int dryAt) {
        return new ScriptedConstraint(modulus, offset, new int[0], dryAt);
    }

    @ParameterizedTest(name = "{0}", allowZeroInvocations = true)
    @MethodSource("cells")
    void maskedRunMatchesMlxLm(Cell cell) throws Exception {
        boolean tiny = !cell.model().equals("default");
        Path modelDir = tiny
                ? work.resolve("models").resolve(cell.model())
                : ProjectHome.get().resolve("models/smollm2-135m-instruct");
        assertTrue(Files.isRegularFile(modelDir.resolve("config.json")), "model " + modelDir + " is missing");
        Path promptFile = prompts;
        if (!tiny) {
            promptFile = work.resolve("prompts-default-constraint.json");
            PythonScript.run(
                    "oracle/prompts.py",
                    60,
                    List.of("--vocab", "49152", "--seed", "11", "--lengths", "9,40", "--out", promptFile.toString()));
        }
        int prefillStep = 32;
        Path expectedFile = work.resolve("expected-constraint-" + cell.name().replace('/', '-') + ".json");
        List<String> args = new ArrayList<>(List.of(
                "--model",
                modelDir.toString(),
                "--prompts",
                promptFile.toString(),
                "--max-tokens",
                String.valueOf(cell.maxTokens()),
                "--prefill-step-size",
                String.valueOf(prefillStep),
                "--out",
                expectedFile.toString(),
                "--mask",
                JSON.writeValueAsString(cell.rule().spec())));
        if (cell.params().seed() != null) {
            args.addAll(List.of("--seed", String.valueOf(cell.params().seed())));
        }
        args.addAll(SamplingParityTest.oracleArgs(cell.params()));
        PythonScript.run("oracle/sample.py", 900, args);
        JsonNode expected = JSON.readTree(expectedFile.toFile());

        try (LanguageModel model = Models.load(modelDir)) {
            int i = 0;
            for (JsonNode r : expected.get("results")) {
                int[] prompt = JSON.convertValue(r.get("prompt"), int[].class);
                String where = cell + " prompt " + i + " (" + prompt.length + " tokens)";
                ScriptedConstraint constraint = cell.rule().copy();
                List<String> digests = new ArrayList<>();
                MessageDigest sha = MessageDigest.getInstance("SHA-256");
                GenerationResult got = GenerateStep.run(
                        model,
                        prompt,
                        new GenerationOptions(cell.maxTokens(), prefillStep, new int[0], false),
                        cell.params(),
                        null,
                        constraint,
                        (token, logprobs) -> {
                            digests.add(HexFormat.of().formatHex(sha.digest(logprobs.toBytes())));
                            return true;
                        });

                int[] want = JSON.convertValue(r.get("tokens"), int[].class);
                assertArrayEquals(want, got.tokens(), where + ": token ids differ from mlx-lm");
                List<?> wantDigests = JSON.convertValue(r.get("logprobs_sha256"), List.class);
                assertEquals(wantDigests.size(), digests.size(), where + ": steps");
                for (int s = 0; s < digests.size(); s++) {
                    assertEquals(
                            wantDigests.get(s),
                            digests.get(s),
                            where + ": the logprobs vector of step " + s + " differs from mlx-lm's");
                }
                List<TokenLogprobs> lps = got.tokenLogprobs();
                for (int s = 0; s < lps.size(); s++) {
                    assertEquals(
                            r.get("chosen_logprob").get(s).asDouble(),
                            (double) lps.get(s).logprob(),
                            where + ": step " + s + " chosen logprob");
                }
                boolean dry = r.get("error").asBoolean();
                assertEquals(dry ? "error" : "length", got.finishReason(), where + ": finish reason");
                assertEquals(dry ? cell.rule().dryAt : cell.maxTokens(), want.length, where + ": oracle run length");
                assertEquals(want.length, constraint.consumed(), where + ": tokens consumed by the constraint");
                assertEquals(1, constraint.closes, where + ": the run closes its constraint once");
                for (int s = 0; s < want.length; s++) {
                    assertTrue(constraint.allowed(want[s], s), where + ": token " + s + " breaks the rule");
                }
                i++;
            }
            assertTrue(i >= 2, "the oracle returned " + i + " prompts");
        }
    }
}
