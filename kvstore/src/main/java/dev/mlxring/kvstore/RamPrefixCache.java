package dev.mlxring.kvstore;

import dev.mlxring.pipeline.PromptSegment.Kind;
import java.util.ArrayList;
import java.util.List;

/**
 * The RAM tier: snapshots in a {@link PromptIndex} (mlx_lm.server's {@code LRUPromptCache}
 * selection), capped by entry count ({@code --prompt-cache-size}) and by snapshot bytes
 * ({@code --prompt-cache-bytes}), least recently used first out. Publishing replaces an entry
 * with the same tokens and drops the entries that are prefixes of it ({@code pop_prefixes}), a
 * hybrid model's only where the new entry restores every position the prefix entry does.
 * Hits and publishes both count as use (mlx-lm orders by insertion only).
 *
 * <p>Eviction is by cache type as {@code LRUPromptCache.CacheOrder.pop}: entries keep the type
 * they were published with (a finished request's snapshot is {@code assistant}; a segment end's
 * is its segment's), and the next entry out is the oldest {@code assistant} entry when there
 * are at least as many of those as {@code user} entries, else the oldest {@code user} entry when
 * there are at least as many of those as {@code system} entries, else the oldest {@code system}
 * entry. So system prompts, shared by many conversations, stay
 * longest.
 *
 * <p>Thread-safe (one lock; lookups are short walks). Owns one reference to each held snapshot.
 */
public final class RamPrefixCache implements PrefixCache {
    /** mlx_lm.server's {@code --prompt-cache-size} default. */
    public static final int DEFAULT_MAX_ENTRIES = 10;

    private final int maxEntries;
    private final long maxBytes;
    /** Insertion order, as mlx-lm's: a hit does not make an entry more recent. */
    private final PromptIndex<KvSnapshot> index = new PromptIndex<>(false);

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
    public void publish(CacheNamespace ns, int[] tokens, KvSnapshot snapshot) {
        publishSegment(ns, tokens, snapshot, Kind.ASSISTANT);
    }

    @Override
    public synchronized void publishSegment(CacheNamespace ns, int[] tokens, KvSnapshot snapshot, Kind kind) {
        if (tokens.length != snapshot.tokens()) {
            snapshot.release();
            throw new IllegalArgumentException("snapshot holds " + snapshot.tokens() + " positions but " + tokens.length
                    + " token ids were given");
        }
        if (closed || maxEntries == 0 || tokens.length == 0) {
            snapshot.release();
            return;
        }
        List<PromptIndex.Entry<KvSnapshot>> removed = new ArrayList<>();
        index.put(ns, tokens, snapshot, kind, snapshot.boundaries(), removed);
        bytes += snapshot.nbytes();
        for (PromptIndex.Entry<KvSnapshot> e : removed) {
            drop(e);
        }
        while (index.size() > maxEntries || bytes > maxBytes) {
            PromptIndex.Entry<KvSnapshot> e = nextOut();
            index.remove(e);
            drop(e);
        }
    }

    /** {@code CacheOrder.pop} over the types in mlx-lm's order: assistant, user, system. */
    private PromptIndex.Entry<KvSnapshot> nextOut() {
        Kind[] order = {Kind.ASSISTANT, Kind.USER, Kind.SYSTEM};
        for (int i = 0; i + 1 < order.length; i++) {
            int here = index.count(order[i]);
            if (here > 0 && here >= index.count(order[i + 1])) {
                return index.eldest(order[i]);
            }
        }
        return index.eldest(order[order.length - 1]);
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

    /** The token ids of every entry, oldest first (tests, logs). */
    public synchronized List<int[]> entries() {
        List<int[]> out = new ArrayList<>();
        for (PromptIndex.Entry<KvSnapshot> e : index.entries()) {
            out.add(e.tokens().clone());
        }
        return out;
    }

    /** The cache type of every entry, in the order of {@link #entries()}. */
    public synchronized List<Kind> entryKinds() {
        List<Kind> out = new ArrayList<>();
        for (PromptIndex.Entry<KvSnapshot> e : index.entries()) {
            out.add(e.kind());
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
