/**
 * Tensor parallelism over an MLX distributed group: rank 0's {@link ShardedExecutor} sends every
 * executor call that changes device state over a TCP control channel, and each other rank's
 * {@link FollowerLoop} replays them in order on its own part of the model. The channel's reader,
 * heartbeat and watchdog threads only move frames and report failures; executor calls run on each
 * rank's MLX thread. The CLI's composition roots set a group up ({@link ShardLaunch},
 * {@link ShardLeader}, {@link ShardFollower}).
 */
package dev.mlxring.exec.shard;
