package dev.mlxring.kvstore;

import java.util.ArrayList;
import java.util.List;

/**
 * The RAM tier: snapshots in a {@link PromptIndex} (mlx_lm.server's {@code LRUPromptCache}
 * selection), capped by entry count ({@code --prompt-cache-size}) and by snapshot bytes
 * ({@code --prompt-cache-bytes}), least recently used first out. Publishing replaces an entry
 * with the same tokens and drops the entries that are prefixes of it ({@code pop_prefixes}).
 * Hits and publishes both count as use (mlx-lm orders by insertion only).
 *
 * <p>Thread-safe (one lock; lookups are short walks). Owns one reference to each held snapshot.
 */
public final class RamPrefixCache implements PrefixCache {
    /** mlx_lm.server's {@code --prompt-cache-size} default. */
    public static final int DEFAULT_MAX_ENTRIES = 10;

    private final int maxEntries;
    private final long maxBytes;
    private final PromptIndex<KvSnapshot> index = new PromptIndex<>();
    private long bytes;
    private long hits;
    private long misses;
    private boolean closed;

    /**
     * @param maxEntries at most this many entries (0 disables the cache)
     * @param maxBytes at most this many snapshot bytes ({@link Long#MAX_VALUE}: no byte cap)
     */
    public RamPrefixCache(int maxEntries, long maxBytes) {
        if (maxEntries < 0) {
            throw new IllegalArgumentException("--prompt-cache-size must be >= 0, got " + maxEntries);
        }
        if (maxBytes < 0) {
            throw new IllegalArgumentException("--prompt-cache-bytes must be >= 0, got " + maxBytes);
        }
        this.maxEntries = maxEntries;
        this.maxBytes = maxBytes;
    }

    @Override
    public synchronized PrefixHit lookup(CacheNamespace ns, int[] prompt) {
        PromptIndex.Match<KvSnapshot> m = closed ? null : index.find(ns, prompt);
        if (m == null) {
            misses++;
            return null;
        }
        hits++;
        return new PrefixHit(m.entry().value().retain(), m.keep(), "ram");
    }

    /** The cached tokens a lookup would reuse, without retaining anything (tier comparison). */
    synchronized int peek(CacheNamespace ns, int[] prompt) {
        PromptIndex.Match<KvSnapshot> m = closed ? null : index.find(ns, prompt);
        return m == null ? 0 : m.keep();
    }

    @Override
    public synchronized void publish(CacheNamespace ns, int[] tokens, KvSnapshot snapshot) {
        if (tokens.length != snapshot.tokens()) {
            snapshot.release();
            throw new IllegalArgumentException("snapshot holds " + snapshot.tokens() + " positions but "
                    + tokens.length + " token ids were given");
        }
        if (closed || maxEntries == 0 || tokens.length == 0) {
            snapshot.release();
            return;
        }
        List<PromptIndex.Entry<KvSnapshot>> removed = new ArrayList<>();
        index.put(ns, tokens, snapshot, removed);
        bytes += snapshot.nbytes();
        for (PromptIndex.Entry<KvSnapshot> e : removed) {
            drop(e);
        }
        while (index.size() > maxEntries || bytes > maxBytes) {
            PromptIndex.Entry<KvSnapshot> e = index.eldest();
            index.remove(e);
            drop(e);
        }
    }

    private void drop(PromptIndex.Entry<KvSnapshot> e) {
        bytes -= e.value().nbytes();
        e.value().release();
    }

    @Override
    public synchronized int size() {
        return index.size();
    }

    @Override
    public synchronized long bytes() {
        return bytes;
    }

    public synchronized long hits() {
        return hits;
    }

    public synchronized long misses() {
        return misses;
    }

    /** The token ids of every entry, least recently used first (tests, logs). */
    public synchronized List<int[]> entries() {
        List<int[]> out = new ArrayList<>();
        for (PromptIndex.Entry<KvSnapshot> e : index.entries()) {
            out.add(e.tokens().clone());
        }
        return out;
    }

    @Override
    public synchronized void close() {
        closed = true;
        for (PromptIndex.Entry<KvSnapshot> e : index.entries()) {
            e.value().release();
        }
        index.clear();
        bytes = 0;
    }
}
