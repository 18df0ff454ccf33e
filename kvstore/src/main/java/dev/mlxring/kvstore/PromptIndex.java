package dev.mlxring.kvstore;

import dev.mlxring.pipeline.PromptSegment.Kind;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Token sequences per {@link CacheNamespace} in a trie, with mlx_lm.server's
 * {@code PromptTrie.search} + {@code fetch_nearest_cache} selection and a least-recently-used
 * order (or insertion order, as mlx-lm's). Values are whatever a tier stores per entry (a snapshot in RAM, a disk record's key);
 * each entry has a cache type ({@link Kind}, mlx-lm's {@code cache_type}) that eviction may use.
 *
 * <p>Selection: walking the prompt, the deepest entry on its path is the shorter prefix (used
 * beyond one token, mlx-lm's {@code last_index > 0}); the shortest entry below the deepest shared
 * node is the longer one, used when it shares more than the shorter prefix, trimmed to
 * {@code min(len - 1, shared)}; an exact entry is trimmed by one token (at least one prompt token
 * is always computed). That holds for trimmable entries (dense and quantized KV). An entry with
 * boundaries (a hybrid model's: its recurrent state restores only where it was snapshotted)
 * serves only at one of them: when the selection lands on such an entry, every entry of the
 * namespace is weighed at its largest boundary within the prefix it shares with the prompt
 * (and below the prompt's length), the most positions winning (the least recently used on a
 * tie); mlx_lm.server restores a non-trimmable cache only whole, which is this rule with each
 * entry's length its only boundary.
 *
 * <p>Not thread-safe: the owning tier locks.
 */
final class PromptIndex<V> {
    private static final class Node<V> {
        final Map<Integer, Node<V>> children = new HashMap<>(4);
        Entry<V> entry;
    }

    record Key(CacheNamespace ns, List<Integer> tokens) {
        static Key of(CacheNamespace ns, int[] tokens) {
            return new Key(ns, Arrays.stream(tokens).boxed().toList());
        }
    }

    /**
     * An entry: its ids, value and cache type, and the positions it restores at (ascending, its
     * length last), or null when it restores at any position (trimmable).
     */
    record Entry<V>(Key key, int[] tokens, V value, Kind kind, int[] boundaries) {
        /** The largest position at most {@code limit} the entry restores at, or 0. */
        int floor(int limit) {
            int cap = Math.min(limit, tokens.length);
            if (boundaries == null) {
                return Math.max(cap, 0);
            }
            int best = 0;
            for (int b : boundaries) {
                if (b <= cap) {
                    best = b;
                }
            }
            return best;
        }

        /** Whether {@code other} restores nothing this entry cannot (it is a prefix of this one). */
        boolean covers(Entry<?> other) {
            if (boundaries == null) {
                return true;
            }
            if (other.boundaries == null) {
                return false;
            }
            for (int b : other.boundaries) {
                if (Arrays.binarySearch(boundaries, b) < 0) {
                    return false;
                }
            }
            return true;
        }
    }

    /** A selected entry and the positions of it to keep. */
    record Match<V>(Entry<V> entry, int keep) {}

    private final Map<CacheNamespace, Node<V>> roots = new HashMap<>();
    /** Use order: the eldest is the least recently used (put, and with {@link #hitsAreUses} found). */
    private final LinkedHashMap<Key, Entry<V>> lru = new LinkedHashMap<>(16, 0.75f, true);
    /** Whether a lookup's match counts as a use; false orders by insertion only (mlx-lm's deques). */
    private final boolean hitsAreUses;

    /** @param hitsAreUses whether {@link #find} moves the entry it matches to the most recent */
    PromptIndex(boolean hitsAreUses) {
        this.hitsAreUses = hitsAreUses;
    }

    Match<V> find(CacheNamespace ns, int[] prompt) {
        Node<V> root = roots.get(ns);
        if (root == null || prompt.length == 0) {
            return null;
        }
        Node<V> cur = root;
        Entry<V> deepest = null;
        int deepestLen = 0;
        int index = 0;
        while (index < prompt.length) {
            Node<V> next = cur.children.get(prompt[index]);
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
        Entry<V> chosen = null;
        int keep = 0;
        if (deepest != null && deepestLen == prompt.length) {
            chosen = deepest;
            keep = prompt.length - 1;
        } else {
            int shortLen = deepestLen > 1 ? deepestLen : 0;
            Entry<V> longer = index > 0 ? shortestBelow(cur) : null;
            if (longer != null && index > shortLen) {
                chosen = longer;
                keep = Math.min(prompt.length - 1, index);
            } else if (shortLen > 0) {
                chosen = deepest;
                keep = shortLen;
            }
        }
        if (chosen != null && chosen.boundaries() != null) {
            chosen = null;
            keep = 0;
            for (Entry<V> e : lru.values()) {
                if (!e.key().ns().equals(ns)) {
                    continue;
                }
                int k = e.floor(Math.min(prompt.length - 1, shared(e.tokens(), prompt)));
                if (k > 1 && k > keep) {
                    chosen = e;
                    keep = k;
                }
            }
        }
        if (chosen == null || keep <= 0) {
            return null;
        }
        if (hitsAreUses) {
            lru.get(chosen.key());
        }
        return new Match<>(chosen, keep);
    }

    private static int shared(int[] a, int[] b) {
        int n = Math.min(a.length, b.length);
        int i = 0;
        while (i < n && a[i] == b[i]) {
            i++;
        }
        return i;
    }

    /** The entry with the fewest tokens below {@code from} (itself included), breadth first. */
    private static <V> Entry<V> shortestBelow(Node<V> from) {
        List<Node<V>> level = List.of(from);
        while (!level.isEmpty()) {
            for (Node<V> n : level) {
                if (n.entry != null) {
                    return n.entry;
                }
            }
            List<Node<V>> next = new ArrayList<>();
            for (Node<V> n : level) {
                next.addAll(n.children.values());
            }
            level = next;
        }
        return null;
    }

    /**
     * Adds (or replaces) the entry for {@code tokens} as the most recently used.
     *
     * @param removed receives the replaced entry and every entry that is a proper prefix of
     *     {@code tokens} (a trimmable cache makes them redundant: {@code pop_prefixes})
     */
    void put(CacheNamespace ns, int[] tokens, V value, List<Entry<V>> removed) {
        put(ns, tokens, value, Kind.ASSISTANT, null, removed);
    }

    /** As above, the entry of cache type {@code kind}. */
    void put(CacheNamespace ns, int[] tokens, V value, Kind kind, List<Entry<V>> removed) {
        put(ns, tokens, value, kind, null, removed);
    }

    /**
     * As above, an entry that restores only at {@code boundaries} (ascending, ending at its
     * length; null: anywhere). A prefix entry is dropped only when this one restores every
     * position it does.
     */
    void put(CacheNamespace ns, int[] tokens, V value, Kind kind, int[] boundaries, List<Entry<V>> removed) {
        if (boundaries != null && (boundaries.length == 0 || boundaries[boundaries.length - 1] != tokens.length)) {
            throw new IllegalArgumentException(
                    "an entry of " + tokens.length + " ids restores at its length, got " + Arrays.toString(boundaries));
        }
        Key key = Key.of(ns, tokens);
        Node<V> cur = roots.computeIfAbsent(ns, k -> new Node<>());
        List<Entry<V>> prefixes = new ArrayList<>();
        for (int t : tokens) {
            if (cur.entry != null) {
                prefixes.add(cur.entry);
            }
            cur = cur.children.computeIfAbsent(t, k -> new Node<>());
        }
        Entry<V> prev = cur.entry;
        Entry<V> entry = new Entry<>(key, tokens.clone(), value, kind, boundaries == null ? null : boundaries.clone());
        cur.entry = entry;
        if (prev != null) {
            lru.remove(prev.key());
            removed.add(prev);
        }
        lru.put(key, entry);
        for (Entry<V> p : prefixes) {
            if (entry.covers(p) && remove(p)) {
                removed.add(p);
            }
        }
    }

    /** The least recently used entry, or null. */
    Entry<V> eldest() {
        return lru.isEmpty() ? null : lru.values().iterator().next();
    }

    /** The least recently used entry of cache type {@code kind}, or null. */
    Entry<V> eldest(Kind kind) {
        for (Entry<V> e : lru.values()) {
            if (e.kind() == kind) {
                return e;
            }
        }
        return null;
    }

    /** Entries of cache type {@code kind}. */
    int count(Kind kind) {
        int n = 0;
        for (Entry<V> e : lru.values()) {
            if (e.kind() == kind) {
                n++;
            }
        }
        return n;
    }

    /** Removes {@code e} if it is still held; prunes its trie path. */
    boolean remove(Entry<V> e) {
        if (lru.get(e.key()) != e) {
            return false;
        }
        lru.remove(e.key());
        Node<V> root = roots.get(e.key().ns());
        List<Node<V>> path = new ArrayList<>(e.tokens().length + 1);
        path.add(root);
        for (int t : e.tokens()) {
            path.add(path.getLast().children.get(t));
        }
        path.getLast().entry = null;
        for (int i = e.tokens().length; i > 0; i--) {
            Node<V> n = path.get(i);
            if (n.entry != null || !n.children.isEmpty()) {
                break;
            }
            path.get(i - 1).children.remove(e.tokens()[i - 1]);
        }
        if (root.entry == null && root.children.isEmpty()) {
            roots.remove(e.key().ns());
        }
        return true;
    }

    int size() {
        return lru.size();
    }

    /** Every entry, least recently used first. */
    List<Entry<V>> entries() {
        return new ArrayList<>(lru.values());
    }

    void clear() {
        lru.clear();
        roots.clear();
    }
}
