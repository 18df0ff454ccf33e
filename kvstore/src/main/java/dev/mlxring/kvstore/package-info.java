/**
 * The prefix cache: KV snapshots as bytes in native memory ({@link KvSnapshot}), the RAM tier, the
 * SSD tier in Chronicle Map under {@code --prompt-cache-dir}, and {@link TieredPrefixCache} over
 * both behind the one interface exec uses, {@link PrefixCache}. No MLX: a snapshot is dtype names,
 * shapes and bytes. The caches are thread-safe; the SSD tier writes on its own spill thread
 * ({@code mlxring-kv-spill}). exec-stage looks up and publishes; the composition root in ingress
 * builds the cache; only the tier classes touch the map files.
 */
package dev.mlxring.kvstore;
