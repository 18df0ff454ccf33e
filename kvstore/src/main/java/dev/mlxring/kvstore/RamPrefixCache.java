package dev.mlxring.kvstore;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The RAM tier: a token trie per {@link CacheNamespace} with mlx_lm.server's
 * {@code LRUPromptCache} semantics, capped by entry count ({@code --prompt-cache-size}) and by
 * snapshot bytes ({@code --prompt-cache-bytes}), least recently used first out.
 *
 * <ul>
 *   <li>Lookup is {@code PromptTrie.search} + {@code fetch_nearest_cache}: the deepest entry on
 *       the prompt's path is the shorter prefix (used when longer than one token, as mlx-lm's
 *       {@code last_index > 0}); the shortest entry below the deepest shared node is the longer
 *       one, used (trimmed to {@code min(len - 1, common)}) when it shares more than the shorter
 *       prefix. An exact entry is trimmed by one token: mlx-lm would hand generate_step an empty
 *       prompt, we always compute at least the last prompt token.</li>
 *   <li>Publishing replaces an entry with the same tokens and drops the entries that are prefixes
 *       of it (a trimmable cache makes them redundant, as {@code insert_cache}'s
 *       {@code pop_prefixes}).</li>
 *   <li>Recency: publish and hits both count as use (mlx-lm orders by insertion only).</li>
 * </ul>
 *
 * <p>Thread-safe (one lock; lookups are short walks). Owns one reference to each held snapshot.
 */
public final class RamPrefixCache implements PrefixCache {
    /** mlx_lm.server's {@code --prompt-cache-size} default. */
    public static final int DEFAULT_MAX_ENTRIES = 10;

    private static final class Node {
        final Map<Integer, Node> children = new HashMap<>(4);
        Entry entry;
    }

    private record Key(CacheNamespace ns, List<Integer> tokens) {
        static Key of(CacheNamespace ns, int[] tokens) {
            return new Key(ns, Arrays.stream(tokens).boxed().toList());
        }
    }

    private record Entry(Key key, int[] tokens, KvSnapshot snapshot) {}

    private final int maxEntries;
    private final long maxBytes;
    private final Map<CacheNamespace, Node> roots = new HashMap<>();
    /** Access order: the eldest is the least recently used. */
    private final LinkedHashMap<Key, Entry> lru = new LinkedHashMap<>(16, 0.75f, true);
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
        Node root = roots.get(ns);
        if (closed || root == null || prompt.length == 0) {
            misses++;
            return null;
        }
        Node cur = root;
        Entry deepest = null;
        int deepestLen = 0;
        int index = 0;
        while (index < prompt.length) {
            Node next = cur.children.get(prompt[index]);
            if (next == null) {
                break;
            }
            cur = next;
            index++;
            if (cur.entry != null) {
                deepest = cur.entry;
                deepestLen = index;
            }
        }
        Entry chosen = null;
        int keep = 0;
        if (deepest != null && deepestLen == prompt.length) {
            // Exact: mlx-lm reuses it whole and leaves nothing to compute; we trim the last token.
            chosen = deepest;
            keep = prompt.length - 1;
        } else {
            int shortLen = deepestLen > 1 ? deepestLen : 0;
            Entry longer = index > 0 ? shortestBelow(cur) : null;
            if (longer != null && index > shortLen && longer.snapshot().trimmable()) {
                chosen = longer;
                keep = Math.min(prompt.length - 1, index);
            } else if (shortLen > 0) {
                chosen = deepest;
                keep = shortLen;
            }
        }
        if (chosen == null || keep <= 0) {
            misses++;
            return null;
        }
        lru.get(chosen.key()); // a hit is a use
        hits++;
        return new PrefixHit(chosen.snapshot().retain(), keep, "ram");
    }

    /** The entry with the fewest tokens below {@code from} (itself included), breadth first. */
    private static Entry shortestBelow(Node from) {
        List<Node> level = List.of(from);
        while (!level.isEmpty()) {
            for (Node n : level) {
                if (n.entry != null) {
                    return n.entry;
                }
            }
            List<Node> next = new ArrayList<>();
            for (Node n : level) {
                next.addAll(n.children.values());
            }
            level = next;
        }
        return null;
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
        Key key = Key.of(ns, tokens);
        Node cur = roots.computeIfAbsent(ns, k -> new Node());
        List<Entry> prefixes = new ArrayList<>();
        for (int t : tokens) {
            if (cur.entry != null) {
                prefixes.add(cur.entry);
            }
            cur = cur.children.computeIfAbsent(t, k -> new Node());
        }
        Entry prev = cur.entry;
        Entry entry = new Entry(key, tokens.clone(), snapshot);
        cur.entry = entry;
        if (prev != null) {
            lru.remove(prev.key());
            bytes -= prev.snapshot().nbytes();
            prev.snapshot().release();
        }
        lru.put(key, entry);
        bytes += snapshot.nbytes();
        if (snapshot.trimmable()) {
            for (Entry p : prefixes) {
                remove(p);
            }
        }
        Iterator<Entry> eldest = lru.values().iterator();
        while ((lru.size() > maxEntries || bytes > maxBytes) && eldest.hasNext()) {
            Entry e = eldest.next();
            eldest.remove();
            unlink(e);
        }
    }

    private void remove(Entry e) {
        if (lru.remove(e.key()) != null) {
            unlink(e);
        }
    }

    /** Detaches {@code e} (already out of the LRU) from its trie path, pruning empty nodes. */
    private void unlink(Entry e) {
        bytes -= e.snapshot().nbytes();
        e.snapshot().release();
        Node root = roots.get(e.key().ns());
        Node[] path = new Node[e.tokens().length + 1];
        path[0] = root;
        for (int i = 0; i < e.tokens().length; i++) {
            path[i + 1] = path[i].children.get(e.tokens()[i]);
        }
        path[path.length - 1].entry = null;
        for (int i = e.tokens().length; i > 0; i--) {
            Node n = path[i];
            if (n.entry != null || !n.children.isEmpty()) {
                break;
            }
            path[i - 1].children.remove(e.tokens()[i - 1]);
        }
        if (root.entry == null && root.children.isEmpty()) {
            roots.remove(e.key().ns());
        }
    }

    @Override
    public synchronized int size() {
        return lru.size();
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
        for (Entry e : lru.values()) {
            out.add(e.tokens().clone());
        }
        return out;
    }

    @Override
    public synchronized void close() {
        closed = true;
        for (Entry e : lru.values()) {
            e.snapshot().release();
        }
        lru.clear();
        roots.clear();
        bytes = 0;
    }
}
