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

    private TokenStopRules(AhoCorasick automaton) {
        this.automaton = automaton;
    }

    /** @return the automaton, or null if no sequence is non-empty */
    static TokenStopRules compile(List<int[]> sequences) {
        AhoCorasick.Builder b = new AhoCorasick.Builder();
        sequences.forEach(b::add);
        AhoCorasick a = b.build();
        return a.isEmpty() ? null : new TokenStopRules(a);
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
    }
}
