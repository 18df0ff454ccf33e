package dev.mlxring.sink;

import dev.mlxring.pipeline.CommittedSpan;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.List;

/**
 * The text-level rules of one request, compiled: per output state ({@link #NORMAL}, {@link
 * #REASONING}) an Aho-Corasick automaton over UTF-16 units of the strings that act in that state
 * (think markers switch state and are stripped, structural markers are stripped, stop strings end
 * the text). The automaton and the hold-back rule are mlx-lm's {@code TextStateMachine} ({@code
 * mlx_lm/generate.py}), so text is released at the same points; the difference is that a stop
 * string ends generation here instead of being stripped (see docs/sink.md). Immutable; {@link
 * Cursor} holds one session's position.
 */
final class TextRules {
    static final int NORMAL = 0;
    static final int REASONING = 1;
    /** Destination of a stop string. */
    private static final int STOP = -1;

    private final Node[] roots;
    private final boolean hasReasoning;

    private static final class Node {
        char[] keys = new char[0];
        Node[] next = new Node[0];
        Node fail;
        /** The pattern that ends here (own, or inherited through the fail link), or null. */
        Match match;

        Node child(char c) {
            char[] k = keys;
            for (int i = 0; i < k.length; i++) {
                if (k[i] == c) {
                    return next[i];
                }
            }
            return null;
        }

        Node childOrCreate(char c) {
            Node n = child(c);
            if (n == null) {
                n = new Node();
                keys = Arrays.copyOf(keys, keys.length + 1);
                next = Arrays.copyOf(next, next.length + 1);
                keys[keys.length - 1] = c;
                next[next.length - 1] = n;
            }
            return n;
        }
    }

    private record Match(int length, int dest) {}

    private record Edge(String text, int dest) {}

    private TextRules(Node[] roots, boolean hasReasoning) {
        this.roots = roots;
        this.hasReasoning = hasReasoning;
    }

    /**
     * Compiles the rules in mlx-lm's {@code make_text_state_machine} order: the think start (normal)
     * or end (reasoning), then structural markers (normal), then the stop strings (every state). A
     * later string identical to an earlier one wins; empty strings are ignored.
     */
    static TextRules compile(ThinkMarkers think, List<String> structuralMarkers, List<String> stopStrings) {
        int states = think == null ? 1 : 2;
        Node[] roots = new Node[states];
        for (int s = 0; s < states; s++) {
            var edges = new java.util.ArrayList<Edge>();
            if (think != null) {
                edges.add(s == NORMAL ? new Edge(think.start(), REASONING) : new Edge(think.end(), NORMAL));
            }
            if (s == NORMAL) {
                structuralMarkers.forEach(m -> edges.add(new Edge(m, NORMAL)));
            }
            stopStrings.forEach(w -> edges.add(new Edge(w, STOP)));
            roots[s] = build(edges);
        }
        return new TextRules(roots, think != null);
    }

    private static Node build(List<Edge> edges) {
        Node root = new Node();
        for (Edge e : edges) {
            if (e.text().isEmpty()) {
                continue;
            }
            Node n = root;
            for (int i = 0; i < e.text().length(); i++) {
                n = n.childOrCreate(e.text().charAt(i));
            }
            n.match = new Match(e.text().length(), e.dest());
        }
        ArrayDeque<Node> queue = new ArrayDeque<>();
        for (Node c : root.next) {
            c.fail = root;
            queue.add(c);
        }
        while (!queue.isEmpty()) {
            Node parent = queue.poll();
            for (int i = 0; i < parent.keys.length; i++) {
                char key = parent.keys[i];
                Node child = parent.next[i];
                queue.add(child);
                Node f = parent.fail;
                while (f.child(key) == null && f != root) {
                    f = f.fail;
                }
                Node target = f.child(key);
                child.fail = target != null ? target : root;
                if (child.match == null && child.fail.match != null) {
                    child.match = child.fail.match;
                }
            }
        }
        return root;
    }

    Cursor cursor(int initialState) {
        if (initialState == REASONING && !hasReasoning) {
            throw new IllegalArgumentException("no think markers: cannot start in reasoning");
        }
        return new Cursor(initialState);
    }

    /**
     * One session's position: the current state, the automaton node, and the text held back because
     * it may still be the start of a marker or stop string (mlx-lm's buffer: everything since the
     * automaton last stood at its root).
     */
    final class Cursor {
        private int state;
        private Node node;
        private final StringBuilder held = new StringBuilder();
        private boolean stopped;

        private Cursor(int state) {
            this.state = state;
            this.node = roots[state];
        }

        int state() {
            return state;
        }

        /**
         * mlx-lm's {@code TextStateMachine.split}: consumes {@code text}, appends what is decided to
         * {@code out.text} or {@code out.reasoning} by state, strips markers, holds back possible
         * partial matches.
         *
         * @return true when a stop string matched: the text before it was delivered, the rest is
         *     dropped and the cursor accepts nothing more
         */
        boolean feed(CharSequence text, CommittedSpan out) {
            if (stopped) {
                return true;
            }
            StringBuilder buf = held;
            if (buf.isEmpty() && roots[state].keys.length == 0) {
                emit(text, 0, text.length(), out); // nothing to match in this state
                return false;
            }
            int start = buf.length();
            buf.append(text);
            Node root = roots[state];
            Node n = node;
            int begin = 0;
            int consumed = 0;
            for (int i = start, len = buf.length(); i < len; i++) {
                char ch = buf.charAt(i);
                Node c;
                while ((c = n.child(ch)) == null && n != root) {
                    n = n.fail;
                }
                if (c != null) {
                    n = c;
                }
                Match m = n.match;
                if (m != null) {
                    emit(buf, begin, i + 1 - m.length(), out);
                    begin = consumed = i + 1;
                    if (m.dest() == STOP) {
                        stopped = true;
                        buf.setLength(0);
                        node = root;
                        return true;
                    }
                    state = m.dest();
                    root = roots[state];
                    n = root;
                } else if (n == root) {
                    consumed = i + 1;
                }
            }
            emit(buf, begin, consumed, out);
            buf.delete(0, consumed);
            node = n;
            return false;
        }

        /** mlx-lm's {@code TextStateMachine.flush}: releases the held text in the current state. */
        void flush(CommittedSpan out) {
            if (!stopped) {
                emit(held, 0, held.length(), out);
            }
            held.setLength(0);
            node = roots[state];
        }

        /** mlx-lm's {@code TextStateMachine.discard}: drops the held text and accepts nothing more. */
        void discard() {
            held.setLength(0);
            node = roots[state];
            stopped = true;
        }

        private void emit(CharSequence buf, int from, int to, CommittedSpan out) {
            if (to > from) {
                (state == REASONING ? out.reasoning : out.text).append(buf, from, to);
            }
        }
    }
}
