package dev.mlxring.exec.shard;

/**
 * The tensor-parallel group can no longer run: a rank died, stopped answering, diverged, or a
 * collective over the group failed. Every rank holds a slice of every layer, so no rank can go
 * on alone: the requests in flight fail with this message and the server reports unhealthy
 * until the ranks are restarted.
 */
public final class ShardGroupException extends RuntimeException {
    public ShardGroupException(String reason) {
        super("the tensor-parallel group is down: " + reason + " (restart every rank)");
    }
}
