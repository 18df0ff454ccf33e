package dev.mlxring.exec.shard;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.mlx.MlxLaunch;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Live parity of tensor-parallel decoding with mlx-lm, two ranks over MLX's ring backend on
 * loopback, both sides started by {@code mlx.launch -n 2}: mlx-lm's {@code sharded_load} +
 * {@code generate_step} ({@code scripts/oracle/sharded_greedy.py}) against our sharded models
 * through {@link ShardedGreedyRank}. For every cell and prompt the 32 greedy tokens and the first
 * step's logits and logprobs bytes must be equal. Cells: llama (bf16, llama3 rope), llama with
 * every projection biased (o_proj and down_proj: the bias added once after the sum), qwen2 (4-bit
 * group 32 with q/k/v biases: quantized scales and biases split), qwen3 (f32, q/k norms,
 * head_dim * heads != hidden), qwen3_moe (f32, 8 experts top-2: the experts split in place, the
 * block's output summed) and gpt_oss (f32: sinks per rank, sliding window 16 passed by the
 * prompts, the experts' down bias divided by the group size).
 */
class ShardedParityTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final List<String> CELLS =
            List.of("llama-bf16", "llama-bias", "qwen2-q4", "qwen3-f32", "qwen3_moe-f32", "gpt_oss-f32");
    private static final int MAX_TOKENS = 32;
    private static final int PREFILL_STEP = 32;

    private static Path work;
    private static Path prompts;

    @BeforeAll
    static void buildModels() throws Exception {
        work = ProjectHome.get().resolve("build/oracle");
        Files.createDirectories(work);
        PythonScript.run(
                "oracle/make_tiny_models.py",
                600,
                List.of("--out", work.resolve("models").toString(), "--only", String.join(",", CELLS)));
        prompts = work.resolve("prompts-512.json");
        PythonScript.run(
                "oracle/prompts.py",
                60,
                List.of("--vocab", "512", "--seed", "7", "--long", "70", "--out", prompts.toString()));
    }

    private static List<String> args(Path out) {
        List<String> a = new ArrayList<>(List.of(
                "--out",
                out.toString(),
                "--prompts",
                prompts.toString(),
                "--max-tokens",
                Integer.toString(MAX_TOKENS),
                "--prefill-step-size",
                Integer.toString(PREFILL_STEP)));
        for (String c : CELLS) {
            a.addAll(List.of("--cell", c + "=" + work.resolve("models").resolve(c)));
        }
        return a;
    }

    @Test
    void twoRanksOverRingMatchMlxLmShardedLoad() throws Exception {
        Path expectedFile = Files.createTempFile("sharded-oracle", ".json");
        Path actualFile = Files.createTempFile("sharded-java", ".json");
        try {
            List<String> oracle = new ArrayList<>(List.of(
                    ProjectHome.python().toString(),
                    ProjectHome.get()
                            .resolve("scripts/oracle/sharded_greedy.py")
                            .toString()));
            oracle.addAll(args(expectedFile));
            MlxLaunch.run(2, oracle, 300);
            MlxLaunch.run(2, MlxLaunch.javaCommand(ShardedGreedyRank.class.getName(), args(actualFile)), 300);
            JsonNode expected = JSON.readTree(expectedFile.toFile());
            JsonNode actual = JSON.readTree(actualFile.toFile());
            assertEquals(2, expected.get("ranks").asInt());
            assertEquals(2, actual.get("ranks").asInt());
            for (String cell : CELLS) {
                JsonNode e = expected.get("cells").get(cell);
                JsonNode a = actual.get("cells").get(cell);
                assertEquals(e.size(), a.size(), cell);
                for (int p = 0; p < e.size(); p++) {
                    String where = cell + " prompt " + p;
                    assertEquals(e.get(p).get("tokens"), a.get(p).get("tokens"), where + ": tokens");
                    assertEquals(
                            e.get(p).get("logits0").get("dtype").asText(),
                            a.get(p).get("logits0").get("dtype").asText(),
                            where + ": logits dtype");
                    assertEquals(
                            e.get(p).get("logits0").get("b64").asText(),
                            a.get(p).get("logits0").get("b64").asText(),
                            where + ": logits0 bytes");
                    assertEquals(
                            e.get(p).get("logprobs0").get("b64").asText(),
                            a.get(p).get("logprobs0").get("b64").asText(),
                            where + ": logprobs0 bytes");
                }
            }
        } finally {
            Files.deleteIfExists(expectedFile);
            Files.deleteIfExists(actualFile);
        }
    }
}
