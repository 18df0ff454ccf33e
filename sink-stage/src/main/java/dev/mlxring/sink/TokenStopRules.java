package dev.mlxring.sink;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.List;

/**
 * Token-level stop sequences: mlx-lm's {@code StopSequences} (an Aho-Corasick automaton over token
 * ids), built from each stop string's canonical encoding ({@code tokenizer.encode(stop,
 * add_special_tokens=False)}), as mlx_lm.server's {@code make_stop_sequences} does. Immutable;
 * {@link Cursor} holds one session's position. No allocation per token.
 */
final class TokenStopRules {
    private final Node root;

    private static final class Node {
        int[] keys = new int[0];
        Node[] next = new Node[0];
        Node fail;
        boolean match;

        Node child(int id) {
            int[] k = keys;
            for (int i = 0; i < k.length; i++) {
                if (k[i] == id) {
                    return next[i];
                }
            }
            return null;
        }
    }

    private TokenStopRules(Node root) {
        this.root = root;
    }

    /** @return the automaton, or null if no sequence is non-empty */
    static TokenStopRules compile(List<int[]> sequences) {
        Node root = new Node();
        boolean any = false;
        for (int[] seq : sequences) {
            if (seq.length == 0) {
                continue; // an empty pattern would match at every token
            }
            Node n = root;
            for (int id : seq) {
                Node c = n.child(id);
                if (c == null) {
                    c = new Node();
                    n.keys = Arrays.copyOf(n.keys, n.keys.length + 1);
                    n.next = Arrays.copyOf(n.next, n.next.length + 1);
                    n.keys[n.keys.length - 1] = id;
                    n.next[n.next.length - 1] = c;
                }
                n = c;
            }
            n.match = true;
            any = true;
        }
        if (!any) {
            return null;
        }
        ArrayDeque<Node> queue = new ArrayDeque<>();
        for (Node c : root.next) {
            c.fail = root;
            queue.add(c);
        }
        while (!queue.isEmpty()) {
            Node parent = queue.poll();
            for (int i = 0; i < parent.keys.length; i++) {
                int key = parent.keys[i];
                Node child = parent.next[i];
                queue.add(child);
                Node f = parent.fail;
                while (f.child(key) == null && f != root) {
                    f = f.fail;
                }
                Node target = f.child(key);
                child.fail = target != null ? target : root;
                child.match |= child.fail.match;
            }
        }
        return new TokenStopRules(root);
    }

    Cursor cursor() {
        return new Cursor();
    }

    final class Cursor {
        private Node node = root;

        /** {@code StopSequences.Matcher.advance}: consumes one id; true when a sequence completed. */
        boolean advance(int id) {
            Node n = node;
            Node c;
            while ((c = n.child(id)) == null && n != root) {
                n = n.fail;
            }
            if (c != null) {
                n = c;
            }
            node = n;
            return n.match;
        }
    }
}
