package dev.mlxring.exec.shard;

import dev.mlxring.kvstore.ModelFingerprint;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Group;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Liveness for ranks that share no executor calls ({@code generate} under {@code mlx.launch}:
 * every rank runs the same command): the control channel's heartbeat alone, so a rank that dies
 * or stops answering ends the others with a message instead of leaving them blocked in a
 * collective. On loss, {@code onLost} runs once with the reason (after the ring's sockets are
 * shut); it is expected to end the process. {@link #close()} ends the watch in order: rank 0
 * tells the others it is done, and they wait for that word before hanging up, so finishing first
 * is not taken for a loss.
 */
public final class ShardWatch implements AutoCloseable {
    private final LeaderChannel leader;
    private final FollowerChannel follower;
    private final long timeoutNs;

    private ShardWatch(LeaderChannel leader, FollowerChannel follower, long timeoutNs) {
        this.leader = leader;
        this.follower = follower;
        this.timeoutNs = timeoutNs;
    }

    /** Connects this rank to rank 0's control channel (rank 0: waits for every other rank). */
    public static ShardWatch start(
            ShardLaunch launch, Group group, Path modelDir, long startupNs, long timeoutNs, Consumer<String> onLost) {
        Runnable abort = launch.abort();
        String fingerprint = ModelFingerprint.of(modelDir);
        try {
            if (group.rank() == 0) {
                LeaderChannel channel = LeaderChannel.accept(
                        launch.controlAddress(),
                        group.size(),
                        fingerprint,
                        new Welcome(0, 0, 0, CpuKernels.MLX, 0, 0),
                        startupNs,
                        timeoutNs,
                        abort);
                channel.failedFuture().thenAccept(onLost);
                return new ShardWatch(channel, null, timeoutNs);
            }
            FollowerChannel channel = FollowerChannel.connect(
                    launch.controlAddress(), group.rank(), fingerprint, startupNs, timeoutNs, reason -> {
                        abort.run();
                        onLost.accept(reason);
                    });
            return new ShardWatch(null, channel, timeoutNs);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void close() {
        if (leader != null) {
            leader.close();
            return;
        }
        try {
            // Rank 0 may still be finishing the same work: wait (bounded) for its word.
            long deadline = System.nanoTime() + timeoutNs;
            while (System.nanoTime() < deadline) {
                Frame f = follower.poll(TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
                if (f == null || f == FollowerChannel.LOST || f.type() == Frame.SHUTDOWN) {
                    break;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            follower.close();
        }
    }
}
