package dev.mlxring.exec;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.mlx.MlxLaunch;
import dev.mlxring.mlx.ProjectHome;
import dev.mlxring.mlx.PythonScript;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The prefix cache under tensor parallelism, live against mlx-lm: two ranks over the ring backend
 * on loopback, each with its own cache of its slice of the KV state. mlx-lm's
 * {@code LRUPromptCache} + {@code generate_step} over its {@code sharded_load} model
 * ({@code prompt_cache.py --sharded}) serves {@link PrefixCacheParityTest}'s four requests
 * (nothing cached; a shorter cached prefix; a longer entry trimmed; a prompt that is a prefix of
 * an entry); each of our ranks ({@link ShardedPrefixRank}) serves them through {@code PrefixedRun}
 * and must reuse the same counts and produce the same tokens and logprobs bytes.
 */
class ShardedPrefixCacheParityTest {
    @Test
    void everyRankReusesAndGeneratesAsMlxLmsShardedPromptCache() throws Exception {
        Path work = ProjectHome.get().resolve("build/oracle");
        String cell = "qwen3-bf16";
        PythonScript.run(
                "oracle/make_tiny_models.py",
                600,
                List.of("--out", work.resolve("models").toString(), "--only", cell));
        Path model = work.resolve("models").resolve(cell);
        Path expected = Files.createTempFile("sharded-prompt-cache", ".json");
        try {
            List<String> oracle = new ArrayList<>(List.of(
                    ProjectHome.python().toString(),
                    ProjectHome.get().resolve("scripts/oracle/prompt_cache.py").toString(),
                    "--sharded"));
            oracle.addAll(PromptCacheReplay.oracleArgs(
                    model, 512, PrefixCacheParityTest.MAX_TOKENS, PrefixCacheParityTest.PREFILL_STEP));
            oracle.addAll(List.of("--out", expected.toString()));
            MlxLaunch.run(2, oracle, 300);
            String out = MlxLaunch.run(
                    2,
                    MlxLaunch.javaCommand(
                            ShardedPrefixRank.class.getName(), List.of(model.toString(), expected.toString())),
                    300);
            for (int rank = 0; rank < 2; rank++) {
                assertTrue(out.contains("rank " + rank + ": every request matched"), out);
            }
        } finally {
            Files.deleteIfExists(expected);
        }
    }
}
