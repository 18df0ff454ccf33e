package dev.mlxring.kvstore;

import dev.mlxring.pipeline.PromptSegment;

/**
 * The prefix cache exec uses. The cache owns prefix selection and tier placement; the scheduler
 * never picks a tier (docs/architecture.md, "The cache owns its tiers"). A serial run looks up before prefill and publishes after it
 * finishes; a batched joiner does the same at admission and a finished row publishes back.
 *
 * <p>Reuse follows mlx_lm.server's {@code LRUPromptCache.fetch_nearest_cache}: an exact entry, the
 * longest cached prefix of the prompt, or a longer cached entry sharing more of the prompt,
 * trimmed to the shared part; and at least one prompt token is always left to compute.
 *
 * <p>Thread-safe. Implementations own the snapshots published to them.
 */
public interface PrefixCache extends AutoCloseable {
    /**
     * The best reusable entry for {@code prompt} in {@code ns}, or null. The caller closes the hit.
     */
    PrefixHit lookup(CacheNamespace ns, int[] prompt);

    /**
     * Stores the KV state of a finished request, {@code tokens} (exactly {@code snapshot.tokens()}
     * ids; mlx_lm.server's {@code insert_cache(..., cache_type="assistant")}), taking over the
     * caller's reference to {@code snapshot} whether or not it is kept.
     */
    void publish(CacheNamespace ns, int[] tokens, KvSnapshot snapshot);

    /**
     * Stores the KV state at the end of a prompt segment, taken while the request is still
     * prefilling (mlx_lm.server's {@code insert_cache(..., cache_type=segment_type)}); the entry
     * has that cache type. The request's own later snapshots supersede it (they extend it), so
     * the cache may keep it in RAM only. Takes over the caller's reference as {@link #publish}.
     */
    void publishSegment(CacheNamespace ns, int[] tokens, KvSnapshot snapshot, PromptSegment.Kind kind);

    /** Entries held now. */
    int size();

    /** Snapshot bytes held now. */
    long bytes();

    @Override
    void close();
}
