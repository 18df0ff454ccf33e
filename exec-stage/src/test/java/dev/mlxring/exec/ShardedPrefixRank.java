package dev.mlxring.exec;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.nn.TensorShard;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.kvstore.ModelFingerprint;
import dev.mlxring.kvstore.RamPrefixCache;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Group;
import java.nio.file.Path;

/**
 * One rank of {@code ShardedPrefixCacheParityTest}, run under {@code mlx.launch -n N}: this
 * rank's part of the model serves the oracle's four requests through {@code PrefixedRun} over its
 * own {@link RamPrefixCache} (as every rank of a sharded server does), asserting the reused
 * counts, tokens and logprobs bytes against mlx-lm's sharded run ({@link PrefixCacheParityTest#replay});
 * a mismatch fails the rank, and so the launch.
 *
 * <pre>ShardedPrefixRank MODEL_DIR EXPECTED_FILE</pre>
 */
public final class ShardedPrefixRank {
    private ShardedPrefixRank() {}

    public static void main(String[] argv) throws Exception {
        Path modelDir = Path.of(argv[0]);
        Group group = Group.init("any", true);
        try (LanguageModel model = Models.load(modelDir, CpuKernels.DEFAULT, new TensorShard(group));
                RamPrefixCache cache = new RamPrefixCache(RamPrefixCache.DEFAULT_MAX_ENTRIES, Long.MAX_VALUE)) {
            PrefixCacheParityTest.replay(
                    "rank " + group.rank() + " of " + group.size(),
                    model,
                    new PrefixReuse(cache, ModelFingerprint.of(modelDir)),
                    cache,
                    null,
                    new ObjectMapper().readTree(Path.of(argv[1]).toFile()));
        }
        System.out.println("rank " + group.rank() + ": every request matched mlx-lm's sharded prompt cache");
    }
}
