package dev.mlxring.exec.shard;

import dev.mlxring.exec.generate.ModelExecutor;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.nn.TensorShard;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.kvstore.ModelFingerprint;
import dev.mlxring.kvstore.RamPrefixCache;
import dev.mlxring.kvstore.TieredPrefixCache;
import dev.mlxring.mlx.Group;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;

/**
 * A rank other than 0 under {@code serve}: connects to rank 0's control channel, loads its part
 * of the model with rank 0's settings and replays rank 0's executor calls until rank 0 shuts the
 * group down ({@link FollowerLoop}). No HTTP, no tokenizer. If rank 0 goes away (closes the
 * connection or stops answering for the timeout) while this rank's MLX thread may be blocked
 * in a collective, the ring's sockets are shut and the process ends with status 1 and the reason
 * on stderr: there is nothing a follower can do alone.
 */
public final class ShardFollower {
    private ShardFollower() {}

    /** Runs this rank to the end; returns the process exit status (0 after rank 0's shutdown). */
    public static int run(
            ShardLaunch launch, Group group, Path modelDir, long startupNs, long timeoutNs, PrintStream err)
            throws InterruptedException {
        Runnable abort = launch.abort();
        String prefix = "mlx-ring rank " + group.rank() + ": ";
        FollowerChannel channel;
        try {
            channel = FollowerChannel.connect(
                    launch.controlAddress(),
                    group.rank(),
                    ModelFingerprint.of(modelDir),
                    startupNs,
                    timeoutNs,
                    reason -> {
                        err.println(prefix + reason + "; exiting");
                        err.flush();
                        abort.run();
                        Runtime.getRuntime().halt(1);
                    });
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Welcome w = channel.welcome();
        try {
            LanguageModel model = Models.load(modelDir, w.cpuKernels(), new TensorShard(group));
            err.println(prefix + "holds its part of " + modelDir + " (" + group.size() + " ranks); following rank 0");
            err.flush();
            // The same RAM prefix cache as rank 0's, over this rank's slice of the KV state.
            TieredPrefixCache cache = w.promptCacheEntries() == 0
                    ? null
                    : new TieredPrefixCache(new RamPrefixCache(w.promptCacheEntries(), w.promptCacheBytes()), null, 0);
            PrefixReuse reuse = cache == null ? null : new PrefixReuse(cache, ModelFingerprint.of(modelDir));
            try (cache;
                    ModelExecutor executor = new ModelExecutor(
                            model, w.prefillStepSize(), w.maxKvSize(), reuse, EngineRng.seeded(w.engineSeed()))) {
                long calls = new FollowerLoop(executor, channel).run();
                err.println(prefix + "rank 0 shut the group down after " + calls + " calls");
                return 0;
            }
        } catch (ShardGroupException e) {
            err.println(prefix + e.getMessage());
            return 1;
        } catch (RuntimeException e) {
            // Before the connection closes, so rank 0 reports why (e.g. the model did not load here).
            channel.reportFailure("rank " + group.rank() + ": " + e.getMessage());
            throw e;
        } finally {
            channel.close();
        }
    }
}
