package dev.mlxring.sink;

import dev.mlxring.pipeline.CommittedSpan;
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

    /** Per state: the automaton of the strings acting in it, and each pattern's destination. */
    private final AhoCorasick[] automata;
    private final int[][] destinations;
    private final boolean hasReasoning;

    private TextRules(AhoCorasick[] automata, int[][] destinations, boolean hasReasoning) {
        this.automata = automata;
        this.destinations = destinations;
        this.hasReasoning = hasReasoning;
    }

    /**
     * Compiles the rules in mlx-lm's {@code make_text_state_machine} order: the think start (normal)
     * or end (reasoning), then structural markers (normal), then the stop strings (every state). A
     * later string identical to an earlier one wins; empty strings are ignored.
     */
    static TextRules compile(ThinkMarkers think, List<String> structuralMarkers, List<String> stopStrings) {
        int states = think == null ? 1 : 2;
        AhoCorasick[] automata = new AhoCorasick[states];
        int[][] destinations = new int[states][];
        for (int s = 0; s < states; s++) {
            AhoCorasick.Builder b = new AhoCorasick.Builder();
            // The builder numbers patterns 0, 1, 2, ... in the order added.
            int[] dest = new int[(think != null ? 1 : 0) + (s == NORMAL ? structuralMarkers.size() : 0)
                    + stopStrings.size()];
            if (think != null) {
                dest[b.add(s == NORMAL ? think.start() : think.end())] = s == NORMAL ? REASONING : NORMAL;
            }
            if (s == NORMAL) {
                structuralMarkers.forEach(m -> dest[b.add(m)] = NORMAL);
            }
            stopStrings.forEach(w -> dest[b.add(w)] = STOP);
            automata[s] = b.build();
            destinations[s] = dest;
        }
        return new TextRules(automata, destinations, think != null);
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
        private int node = AhoCorasick.ROOT;
        private final StringBuilder held = new StringBuilder();
        private boolean stopped;

        private Cursor(int state) {
            this.state = state;
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
            if (buf.isEmpty() && automata[state].isEmpty()) {
                emit(text, 0, text.length(), out); // nothing to match in this state
                return false;
            }
            int start = buf.length();
            buf.append(text);
            AhoCorasick automaton = automata[state];
            int n = node;
            int begin = 0;
            int consumed = 0;
            for (int i = start, len = buf.length(); i < len; i++) {
                n = automaton.step(n, buf.charAt(i));
                int p = automaton.pattern(n);
                if (p != AhoCorasick.NONE) {
                    emit(buf, begin, i + 1 - automaton.patternLength(p), out);
                    begin = consumed = i + 1;
                    int dest = destinations[state][p];
                    if (dest == STOP) {
                        stopped = true;
                        buf.setLength(0);
                        node = AhoCorasick.ROOT;
                        return true;
                    }
                    state = dest;
                    automaton = automata[state];
                    n = AhoCorasick.ROOT;
                } else if (n == AhoCorasick.ROOT) {
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
            node = AhoCorasick.ROOT;
        }

        /** mlx-lm's {@code TextStateMachine.discard}: drops the held text and accepts nothing more. */
        void discard() {
            held.setLength(0);
            node = AhoCorasick.ROOT;
            stopped = true;
        }

        private void emit(CharSequence buf, int from, int to, CommittedSpan out) {
            if (to > from) {
                (state == REASONING ? out.reasoning : out.text).append(buf, from, to);
            }
        }
    }
}
