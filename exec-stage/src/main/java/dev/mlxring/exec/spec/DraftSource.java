package dev.mlxring.exec.spec;

/**
 * Where one row's speculative proposals come from: a draft model ({@link DraftModelSource}), prompt
 * lookup ({@link PromptLookupSource}), and later MTP heads or EAGLE. The target verifies each
 * proposal in one forward of {@code proposal + 1} positions and tells the source how much it kept.
 *
 * <p>Protocol, per row: {@link #start} once with the whole prompt (before the target prefills it);
 * then rounds of {@link #propose} and {@link #accepted}. After {@code accepted(n, next)} the row's
 * tokens are its prompt, every token committed so far, the round's first {@code n} proposed
 * tokens and {@code next}. A source keeps no state shared with other rows, so rows of a batch
 * each hold their own. Exec thread only.
 */
public interface DraftSource extends AutoCloseable {
    /** Takes the row's prompt (at least one token). */
    void start(int[] prompt);

    /**
     * Proposes up to {@code maxTokens} tokens to follow the row's tokens; an empty array when
     * there is nothing to propose (the round then verifies one position: a plain decode step).
     */
    int[] propose(int maxTokens);

    /**
     * The target kept the first {@code acceptedCount} tokens of the last proposal and committed
     * {@code next} after them; the source rolls its own state back to that length.
     */
    void accepted(int acceptedCount, int next);

    /**
     * Whether a proposal costs no forward (a lookup, not a model), so the row may make proposals it
     * does not verify and score them against the tokens it commits ({@link ShadowRound}).
     */
    default boolean proposesFreely() {
        return false;
    }

    @Override
    void close();
}
