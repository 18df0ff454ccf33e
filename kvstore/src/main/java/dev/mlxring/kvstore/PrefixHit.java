package dev.mlxring.kvstore;

/**
 * A lookup's result: restore {@link #snapshot()} with every layer's offset set to
 * {@link #cachedTokens()} (mlx-lm's {@code trim_prompt_cache} of a longer entry, or the whole
 * entry), then compute only {@code prompt[cachedTokens:]}, which is never empty.
 *
 * <p>Holds one reference to the snapshot; {@link #close()} drops it (once). The entry stays in
 * the cache: many rows may restore from it.
 */
public final class PrefixHit implements AutoCloseable {
    private final KvSnapshot snapshot;
    private final int cachedTokens;
    private final String tier;
    private boolean closed;

    PrefixHit(KvSnapshot retained, int cachedTokens, String tier) {
        this.snapshot = retained;
        this.cachedTokens = cachedTokens;
        this.tier = tier;
    }

    public KvSnapshot snapshot() {
        if (closed) {
            throw new IllegalStateException("hit already closed");
        }
        return snapshot;
    }

    /** Prompt tokens whose KV the snapshot supplies ({@code usage.prompt_tokens_details.cached_tokens}). */
    public int cachedTokens() {
        return cachedTokens;
    }

    /** Which tier served it ({@code ram} or {@code ssd}), for logs and metrics. */
    public String tier() {
        return tier;
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            snapshot.release();
        }
    }
}
