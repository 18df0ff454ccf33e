/**
 * exec's side of the prefix cache: layer caches to and from kvstore's byte snapshots
 * ({@link KvSnapshots}), and the longest reusable prefix restored before a run and published after
 * it ({@link PrefixReuse}, {@link PrefixedRun}), as mlx_lm.server's serial path does. Runs on the
 * exec thread, which alone touches MLX; the cache it talks to is thread-safe.
 */
package dev.mlxring.exec.prefix;
