package dev.mlxring.exec.shard;

import dev.mlxring.exec.generate.ModelExecutor;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.nn.TensorShard;
import dev.mlxring.exec.prefix.PrefixReuse;
import dev.mlxring.exec.sample.EngineRng;
import dev.mlxring.kvstore.ModelFingerprint;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Group;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;

/**
 * Rank 0 of a tensor-parallel group, set up before its model loads: the group, the control
 * channel to every other rank (connected and greeted with the shared {@link Welcome}), and what
 * the composition root needs to build the sharded executor ({@link #tensorShard()},
 * {@link #executor}). Exec thread for the executor; the rest at start-up.
 */
public final class ShardLeader {
    private final Group group;
    private final LeaderChannel channel;
    private final Welcome welcome;

    private ShardLeader(Group group, LeaderChannel channel, Welcome welcome) {
        this.group = group;
        this.channel = channel;
        this.welcome = welcome;
    }

    /**
     * Waits (at most {@code startupNs}) for every other rank to connect to the control channel
     * with the same model, then tells them the settings.
     *
     * @param promptCacheEntries the RAM prefix cache's entries every rank keeps (0 = none)
     * @param promptCacheBytes its byte cap, as {@code RamPrefixCache} takes it
     */
    public static ShardLeader start(
            ShardLaunch launch,
            Group group,
            Path modelDir,
            int prefillStepSize,
            int maxKvSize,
            CpuKernels kernels,
            int promptCacheEntries,
            long promptCacheBytes,
            long startupNs,
            long timeoutNs) {
        Welcome welcome = new Welcome(
                System.currentTimeMillis(), prefillStepSize, maxKvSize, kernels, promptCacheEntries, promptCacheBytes);
        try {
            LeaderChannel channel = LeaderChannel.accept(
                    launch.controlAddress(),
                    group.size(),
                    ModelFingerprint.of(modelDir),
                    welcome,
                    startupNs,
                    timeoutNs,
                    launch.abort());
            return new ShardLeader(group, channel, welcome);
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "rank 0's control channel on " + launch.controlAddress() + ": " + e.getMessage(), e);
        }
    }

    public Group group() {
        return group;
    }

    /** What {@link dev.mlxring.exec.model.Models#load} needs to load this rank's part. */
    public TensorShard tensorShard() {
        return new TensorShard(group);
    }

    /**
     * The sharded executor over {@code model} (this rank's part), with the engine generator every
     * rank seeds alike and {@code reuse} over a RAM prefix cache of the size the other ranks were
     * told (null when {@link Welcome#promptCacheEntries()} is 0): every rank keeps its own slice of
     * each entry and, given the same calls in the same order, makes the same reuse decisions,
     * which each checks against rank 0's at every insert.
     */
    public ShardedExecutor executor(LanguageModel model, PrefixReuse reuse) {
        return new ShardedExecutor(
                new ModelExecutor(
                        model,
                        welcome.prefillStepSize(),
                        welcome.maxKvSize(),
                        reuse,
                        EngineRng.seeded(welcome.engineSeed())),
                channel);
    }

    /** The RAM prefix cache's entries and byte cap every rank keeps (entries 0 = none). */
    public Welcome settings() {
        return welcome;
    }

    /** Closes the channel if the engine never started (a failed load). */
    public void abandon() {
        channel.close();
    }
}
