package dev.mlxring.sink;

import dev.mlxring.pipeline.CommittedSpan;
import java.util.List;

/**
 * The text-level rules of one request, compiled: per output state ({@link #NORMAL}, {@link
 * #REASONING}, {@link #TOOL}) an Aho-Corasick automaton over UTF-16 units of the strings that act
 * in that state (think and tool-call markers switch state and are stripped, structural markers are
 * stripped, stop strings end the text). The automaton and the hold-back rule are mlx-lm's {@code
 * TextStateMachine} ({@code mlx_lm/generate.py}), so text is released at the same points; the
 * difference is that a stop string ends generation here instead of being stripped (see
 * docs/sink.md). Immutable; {@link Cursor} holds one session's position.
 */
final class TextRules {
    static final int NORMAL = 0;
    static final int REASONING = 1;
    static final int TOOL = 2;
    /** Destination of a stop string. */
    private static final int STOP = -1;

    /** Receives the text of one tool call when the output leaves the tool state for normal. */
    @FunctionalInterface
    interface ToolCallEnd {
        void ended(CharSequence toolText, CommittedSpan out);
    }

    /** Per state: the automaton of the strings acting in it (null: no such state), and each pattern's destination. */
    private final AhoCorasick[] automata;

    private final int[][] destinations;
    /** Per state and pattern: the stop string it is, or null for markers. */
    private final String[][] stopStrings;

    private TextRules(AhoCorasick[] automata, int[][] destinations, String[][] stopStrings) {
        this.automata = automata;
        this.destinations = destinations;
        this.stopStrings = stopStrings;
    }

    /** {@link #compile(ThinkMarkers, String, String, List, List)} without a tool state. */
    static TextRules compile(ThinkMarkers think, List<String> structuralMarkers, List<String> stopStrings) {
        return compile(think, null, null, structuralMarkers, stopStrings);
    }

    /**
     * Compiles the rules in mlx-lm's {@code make_text_state_machine} order:
     *
     * <ul>
     *   <li>normal: the think start (to reasoning), the tool-call start (to tool), the structural
     *       markers (stay), the stop strings;
     *   <li>reasoning (with think markers): the think end (to normal), the tool-call start (to
     *       tool), the stop strings;
     *   <li>tool (with a tool-call start): the tool-call end (to normal) unless it is empty, the
     *       stop strings.
     * </ul>
     *
     * A later string identical to an earlier one wins; empty strings are ignored.
     *
     * @param toolCallStart the tool parser's {@code tool_call_start}, or null for no tool state
     * @param toolCallEnd its {@code tool_call_end}; null or empty: a call runs to the end of the output
     */
    static TextRules compile(
            ThinkMarkers think,
            String toolCallStart,
            String toolCallEnd,
            List<String> structuralMarkers,
            List<String> stopStrings) {
        boolean tools = toolCallStart != null;
        AhoCorasick[] automata = new AhoCorasick[3];
        int[][] destinations = new int[3][];
        String[][] stops = new String[3][];
        for (int s = NORMAL; s <= TOOL; s++) {
            if ((s == REASONING && think == null) || (s == TOOL && !tools)) {
                continue;
            }
            AhoCorasick.Builder b = new AhoCorasick.Builder();
            // The builder numbers patterns 0, 1, 2, ... in the order added.
            int[] dest = new int[4 + structuralMarkers.size() + stopStrings.size()];
            String[] stop = new String[dest.length];
            switch (s) {
                case NORMAL -> {
                    if (think != null) {
                        dest[b.add(think.start())] = REASONING;
                    }
                    if (tools) {
                        dest[b.add(toolCallStart)] = TOOL;
                    }
                    structuralMarkers.forEach(m -> dest[b.add(m)] = NORMAL);
                }
                case REASONING -> {
                    dest[b.add(think.end())] = NORMAL;
                    if (tools) {
                        dest[b.add(toolCallStart)] = TOOL;
                    }
                }
                default -> {
                    if (toolCallEnd != null && !toolCallEnd.isEmpty()) {
                        dest[b.add(toolCallEnd)] = NORMAL;
                    }
                }
            }
            stopStrings.forEach(w -> {
                int p = b.add(w);
                dest[p] = STOP;
                stop[p] = w;
            });
            automata[s] = b.build();
            destinations[s] = dest;
            stops[s] = stop;
        }
        return new TextRules(automata, destinations, stops);
    }

    boolean hasState(int state) {
        return automata[state] != null;
    }

    /**
     * @param toolCallEnd called when the output goes from tool to normal (may be null when the rules
     *     have no tool state)
     */
    Cursor cursor(int initialState, ToolCallEnd toolCallEnd) {
        if (!hasState(initialState)) {
            throw new IllegalArgumentException("no such state in these rules: " + initialState);
        }
        return new Cursor(initialState, toolCallEnd);
    }

    Cursor cursor(int initialState) {
        return cursor(initialState, null);
    }

    /**
     * One session's position: the current state, the automaton node, the text held back because
     * it may still be the start of a marker or stop string (mlx-lm's buffer: everything since the
     * automaton last stood at its root), and the text of the tool call in progress
     * (mlx_lm.server's {@code tool_text}).
     */
    final class Cursor {
        private int state;
        private int node = AhoCorasick.ROOT;
        private final StringBuilder held = new StringBuilder();
        private final StringBuilder toolText = new StringBuilder();
        private final ToolCallEnd toolCallEnd;
        private boolean stopped;
        private String matchedStop;

        private Cursor(int state, ToolCallEnd toolCallEnd) {
            this.state = state;
            this.toolCallEnd = toolCallEnd;
        }

        int state() {
            return state;
        }

        /** The stop string that ended the text, or null. */
        String matchedStop() {
            return matchedStop;
        }

        /** The text collected in the tool state since the last tool-to-normal transition. */
        StringBuilder toolText() {
            return toolText;
        }

        /**
         * mlx-lm's {@code TextStateMachine.split}: consumes {@code text}, appends what is decided to
         * {@code out.text} or {@code out.reasoning} (or the tool text) by state, strips markers,
         * holds back possible partial matches. Leaving the tool state for normal hands the tool
         * text to the {@link ToolCallEnd} (mlx_lm.server: a normal segment after a tool one).
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
                        matchedStop = stopStrings[state][p];
                        buf.setLength(0);
                        node = AhoCorasick.ROOT;
                        return true;
                    }
                    int from = state;
                    state = dest;
                    if (from == TOOL && dest == NORMAL) {
                        endToolCall(out);
                    }
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

        /**
         * mlx-lm's {@code TextStateMachine.discard}: drops the held text and accepts nothing more.
         * The tool text collected so far stays (mlx_lm.server parses it after its loop).
         */
        void discard() {
            held.setLength(0);
            node = AhoCorasick.ROOT;
            stopped = true;
        }

        private void endToolCall(CommittedSpan out) {
            if (toolCallEnd != null) {
                toolCallEnd.ended(toolText, out);
            }
            toolText.setLength(0);
        }

        private void emit(CharSequence buf, int from, int to, CommittedSpan out) {
            if (to > from) {
                switch (state) {
                    case REASONING -> out.reasoning.append(buf, from, to);
                    case TOOL -> toolText.append(buf, from, to);
                    default -> out.text.append(buf, from, to);
                }
            }
        }
    }
}
