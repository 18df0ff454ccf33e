package dev.mlxring.sink;

import java.util.List;

/**
 * Token-level stop sequences: mlx-lm's {@code StopSequences} (an Aho-Corasick automaton over token
 * ids), built from each stop string's canonical encoding ({@code tokenizer.encode(stop,
 * add_special_tokens=False)}), as mlx_lm.server's {@code make_stop_sequences} does. Immutable;
 * {@link Cursor} holds one session's position. No allocation per token.
 */
final class TokenStopRules {
    private final AhoCorasick automaton;
    /** Per pattern: the stop string whose encoding it is (null when not named). */
    private final String[] names;

    private TokenStopRules(AhoCorasick automaton, String[] names) {
        this.automaton = automaton;
        this.names = names;
    }

    /** @return the automaton, or null if no sequence is non-empty */
    static TokenStopRules compile(List<int[]> sequences) {
        return compile(sequences, null);
    }

    /**
     * @param names the stop string of each sequence (same order), reported by {@link
     *     Cursor#matched()}; null: none
     * @return the automaton, or null if no sequence is non-empty
     */
    static TokenStopRules compile(List<int[]> sequences, List<String> names) {
        AhoCorasick.Builder b = new AhoCorasick.Builder();
        String[] named = new String[sequences.size()];
        for (int i = 0; i < sequences.size(); i++) {
            int p = b.add(sequences.get(i));
            named[p] = names == null ? null : names.get(i);
        }
        AhoCorasick a = b.build();
        return a.isEmpty() ? null : new TokenStopRules(a, named);
    }

    Cursor cursor() {
        return new Cursor();
    }

    final class Cursor {
        private int node = AhoCorasick.ROOT;

        /** {@code StopSequences.Matcher.advance}: consumes one id; true when a sequence completed. */
        boolean advance(int id) {
            node = automaton.step(node, id);
            return automaton.pattern(node) != AhoCorasick.NONE;
        }

        /** The stop string of the sequence that completed at the last {@link #advance}, or null. */
        String matched() {
            int p = automaton.pattern(node);
            return p == AhoCorasick.NONE ? null : names[p];
        }
    }
}
