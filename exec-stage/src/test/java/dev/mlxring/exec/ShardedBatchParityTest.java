package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.mlx.MlxLaunch;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Continuous batching over a tensor-parallel model, live against mlx-lm: two ranks over the ring
 * backend on loopback (both sides under {@code mlx.launch -n 2}) run {@link BatchParityTest}'s
 * {@code mixed-sampling} schedule (rows joining a decoding batch, greedy, seeded top-k and top-p
 * rows with their own keys, penalties and logit bias) on llama-bf16: mlx-lm's
 * {@code BatchGenerator} over its {@code sharded_load} model ({@code batch.py --sharded}) and our
 * {@code BatchGenerator} over our sharded model ({@link ShardedBatchRank}). Every {@code next()}
 * call must yield the same rows, tokens, finish reasons and logprobs bytes.
 */
class ShardedBatchParityTest {
    private static final String CELL = "mixed-sampling";

    @Test
    void batchGeneratorOverShardedModelMatchesMlxLm() throws Exception {
        Path work = ProjectHome.get().resolve("build/oracle");
        BatchParityTest.useWork(work);
        BatchParityTest.Cell cell = BatchParityTest.cell(CELL);
        PythonScript.run(
                "oracle/make_tiny_models.py",
                600,
                List.of("--out", work.resolve("models").toString(), "--only", cell.model()));
        Path model = work.resolve("models").resolve(cell.model());
        Path script = BatchParityTest.writeScript(cell);
        Path expectedFile = Files.createTempFile("sharded-batch-oracle", ".json");
        Path actualFile = Files.createTempFile("sharded-batch-java", ".json");
        try {
            MlxLaunch.run(
                    2,
                    List.of(
                            ProjectHome.python().toString(),
                            ProjectHome.get().resolve("scripts/oracle/batch.py").toString(),
                            "--sharded",
                            "--model",
                            model.toString(),
                            "--script",
                            script.toString(),
                            "--out",
                            expectedFile.toString()),
                    300);
            MlxLaunch.run(
                    2,
                    MlxLaunch.javaCommand(
                            ShardedBatchRank.class.getName(),
                            List.of(work.toString(), CELL, model.toString(), actualFile.toString())),
                    300);
            ObjectMapper json = new ObjectMapper();
            List<List<String>> expected = BatchParityTest.steps(json.readTree(expectedFile.toFile()));
            List<List<String>> got = new ArrayList<>();
            for (JsonNode step : json.readTree(actualFile.toFile()).get("steps")) {
                List<String> s = new ArrayList<>();
                step.forEach(t -> s.add(t.asText()));
                got.add(s);
            }
            assertTrue(expected.stream().mapToInt(List::size).sum() > 0, "the oracle generated nothing");
            assertEquals(expected, got, CELL + " over 2 ranks: every call's uid:token:finish:logprobs sha256");
        } finally {
            Files.deleteIfExists(expectedFile);
            Files.deleteIfExists(actualFile);
        }
    }
}
