package dev.mlxring.sink;

import java.util.Arrays;

/**
 * An Aho-Corasick automaton over int symbols: UTF-16 units for the text rules, token ids for the
 * token-level stop sequences. It is the automaton of mlx-lm's {@code StopSequences} and {@code
 * TextStateMachine} (goto edges, BFS fail links, a node reports the pattern ending there, else the
 * one inherited through its fail link). Immutable once built; a matcher keeps its position as a
 * node number, so stepping allocates nothing.
 *
 * <p>Layout: node {@code n} has the edge arrays (in insertion order) {@code keys[n]} / {@code
 * next[n]}, its fail link {@code fail[n]} and {@code pattern[n]}, the index of the pattern that
 * ends at {@code n} (or {@link #NONE}). Node 0 is the root. Nodes have few edges in practice (stop
 * strings and markers), so edges are scanned linearly.
 */
final class AhoCorasick {
    static final int NONE = -1;
    static final int ROOT = 0;

    private final int[][] keys;
    private final int[][] next;
    private final int[] fail;
    private final int[] pattern;
    private final int[] patternLength;

    private AhoCorasick(Builder b) {
        int n = b.nodes;
        this.keys = Arrays.copyOf(b.keys, n);
        this.next = Arrays.copyOf(b.next, n);
        this.pattern = Arrays.copyOf(b.pattern, n);
        this.patternLength = Arrays.copyOf(b.patternLength, b.patterns);
        this.fail = new int[n];
        linkFailures();
    }

    /** Breadth first, so a node's fail target is final before its children are linked. */
    private void linkFailures() {
        int[] queue = new int[keys.length];
        int head = 0;
        int tail = 0;
        for (int child : next[ROOT]) {
            fail[child] = ROOT;
            queue[tail++] = child;
        }
        while (head < tail) {
            int parent = queue[head++];
            for (int i = 0; i < keys[parent].length; i++) {
                int symbol = keys[parent][i];
                int child = next[parent][i];
                queue[tail++] = child;
                int f = fail[parent];
                while (child(f, symbol) == NONE && f != ROOT) {
                    f = fail[f];
                }
                int target = child(f, symbol);
                fail[child] = target != NONE ? target : ROOT;
                if (pattern[child] == NONE) {
                    pattern[child] = pattern[fail[child]];
                }
            }
        }
    }

    private int child(int node, int symbol) {
        int[] k = keys[node];
        for (int i = 0; i < k.length; i++) {
            if (k[i] == symbol) {
                return next[node][i];
            }
        }
        return NONE;
    }

    /** The node after consuming {@code symbol} at {@code node}, following fail links. */
    int step(int node, int symbol) {
        int n = node;
        int c;
        while ((c = child(n, symbol)) == NONE && n != ROOT) {
            n = fail[n];
        }
        return c != NONE ? c : n;
    }

    /** The index of the pattern that ends at {@code node} (its own or inherited), or {@link #NONE}. */
    int pattern(int node) {
        return pattern[node];
    }

    /** The length in symbols of pattern {@code p}. */
    int patternLength(int p) {
        return patternLength[p];
    }

    /** Whether no pattern was added: every step stays at the root. */
    boolean isEmpty() {
        return keys[ROOT].length == 0;
    }

    /** Adds patterns in order; each gets the next index, counting skipped empty ones. */
    static final class Builder {
        private int[][] keys = new int[8][];
        private int[][] next = new int[8][];
        private int[] pattern = new int[8];
        private int[] patternLength = new int[4];
        private int nodes;
        private int patterns;

        Builder() {
            newNode();
        }

        /**
         * Adds a pattern and returns its index. An empty pattern is skipped (it would match at
         * every symbol) but still takes an index; a pattern equal to an earlier one replaces it.
         */
        int add(int[] symbols) {
            int p = patterns++;
            if (patternLength.length == p) {
                patternLength = Arrays.copyOf(patternLength, p * 2);
            }
            patternLength[p] = symbols.length;
            if (symbols.length == 0) {
                return p;
            }
            int n = ROOT;
            for (int symbol : symbols) {
                n = childOrCreate(n, symbol);
            }
            pattern[n] = p;
            return p;
        }

        int add(CharSequence text) {
            return add(text.chars().toArray());
        }

        AhoCorasick build() {
            return new AhoCorasick(this);
        }

        private int childOrCreate(int node, int symbol) {
            int[] k = keys[node];
            for (int i = 0; i < k.length; i++) {
                if (k[i] == symbol) {
                    return next[node][i];
                }
            }
            int c = newNode();
            keys[node] = Arrays.copyOf(k, k.length + 1);
            next[node] = Arrays.copyOf(next[node], k.length + 1);
            keys[node][k.length] = symbol;
            next[node][k.length] = c;
            return c;
        }

        private int newNode() {
            if (nodes == keys.length) {
                keys = Arrays.copyOf(keys, nodes * 2);
                next = Arrays.copyOf(next, nodes * 2);
                pattern = Arrays.copyOf(pattern, nodes * 2);
            }
            keys[nodes] = new int[0];
            next[nodes] = new int[0];
            pattern[nodes] = NONE;
            return nodes++;
        }
    }
}
