package dev.mlxring.ingress.cli;

import dev.mlxring.exec.shard.ShardLaunch;
import dev.mlxring.mlx.Group;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The tensor-parallel flags of {@code serve} and {@code generate} under {@code mlx.launch}:
 * {@code --distributed-backend any|ring|mpi|nccl|jaccl} (default {@code any}: MLX picks, as
 * {@code mx.distributed.init()}), {@code --control-host} / {@code --control-port} (rank 0's
 * control channel; derived from the launch by default) and {@code --rank-timeout-seconds} (how
 * long a rank may stay silent before the group fails; default 10). Outside a launch they change
 * nothing.
 */
final class ShardFlags {
    static final int DEFAULT_RANK_TIMEOUT_SECONDS = 10;
    static final List<Flag> FLAGS = List.of(
            Flag.valued(
                    "--distributed-backend",
                    "B",
                    "any",
                    "under mlx.launch: the group's backend, one of " + String.join(", ", Group.BACKENDS)
                            + " (any: MLX picks)"),
            Flag.valued(
                    "--control-host",
                    "H",
                    "rank 0's first ring IP, or NCCL_HOST_IP",
                    "under mlx.launch: where the other ranks reach rank 0's control channel"),
            Flag.valued(
                    "--control-port",
                    "P",
                    "rank 0's ring port - 1, or NCCL_PORT + 1",
                    "under mlx.launch: the control channel's port; needed with mpi"),
            Flag.valued(
                    "--rank-timeout-seconds",
                    "S",
                    DEFAULT_RANK_TIMEOUT_SECONDS,
                    "under mlx.launch: a rank silent this long fails the group"));
    static final List<String> NAMES = Flag.names(FLAGS);
    /** How long the ranks may take to find each other at start-up (JVM start, set-up, the ring's connects). */
    static final long STARTUP_NS = TimeUnit.SECONDS.toNanos(300);

    private ShardFlags() {}

    static ShardLaunch launch(CliArgs a) {
        String backend = a.has("--distributed-backend") ? a.get("--distributed-backend") : "any";
        if (!Group.BACKENDS.contains(backend)) {
            throw new UsageException("--distributed-backend must be one of " + String.join(", ", Group.BACKENDS)
                    + ", got '" + backend + "'");
        }
        return new ShardLaunch(System.getenv(), backend, a.get("--control-host"), a.intValue("--control-port", 0, 1));
    }

    static long rankTimeoutNs(CliArgs a) {
        return TimeUnit.SECONDS.toNanos(a.intValue("--rank-timeout-seconds", DEFAULT_RANK_TIMEOUT_SECONDS, 1));
    }
}
