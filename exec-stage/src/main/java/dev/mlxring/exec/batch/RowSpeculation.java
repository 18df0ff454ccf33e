package dev.mlxring.exec.batch;

import dev.mlxring.exec.spec.AdaptiveStop;
import dev.mlxring.exec.spec.DraftSource;
import dev.mlxring.exec.spec.ForwardCosts;
import dev.mlxring.exec.spec.ProposalLength;
import dev.mlxring.exec.spec.ShadowRound;

/**
 * One batch row's speculative decoding state, the per-row half of {@code SpeculativeRun}: its
 * {@link DraftSource}, the most tokens it proposes per round ({@code num_draft_tokens}), and for a
 * greedy row the adaptive proposal length and stop (the length {@link ProposalLength} picks from
 * the row's acceptance history, none once {@link AdaptiveStop} stops it), plus its proposed and
 * accepted counts. Owns the source; exec thread only.
 */
final class RowSpeculation implements AutoCloseable {
    private final DraftSource source;
    private final int numDraftTokens;
    /** Null: the row proposes {@link #numDraftTokens} every round (a sampled row). */
    private final AdaptiveStop adaptiveStop;

    /** Null: the row proposes {@link #numDraftTokens} every round (a sampled row). */
    private final ProposalLength proposalLength;

    /** A greedy prompt-lookup row's unverified proposal, scored while it steps plainly; null otherwise. */
    private final ShadowRound shadow;

    private int proposedTokens;
    private int acceptedTokens;

    /**
     * @param source the row's source, already {@link DraftSource#start started} with its whole prompt
     * @param adaptive whether the row adapts its proposal length and may stop proposing (greedy rows)
     * @param costs the model's tier's forward costs, which its proposal length is weighed at
     */
    RowSpeculation(DraftSource source, int numDraftTokens, boolean adaptive, ForwardCosts costs) {
        this.source = source;
        this.numDraftTokens = numDraftTokens;
        this.adaptiveStop = adaptive ? new AdaptiveStop(source.proposesFreely()) : null;
        this.proposalLength = adaptive ? new ProposalLength(numDraftTokens, costs) : null;
        this.shadow = adaptive && source.proposesFreely() ? new ShadowRound() : null;
    }

    /** Whether the row proposes now (its adaptive stop has not stopped or paused its proposals). */
    boolean active() {
        return adaptiveStop == null || !adaptiveStop.stopped();
    }

    /**
     * Whether the row's source follows its tokens: while it proposes, and while its adaptive stop
     * has paused a row that may start again (its shadow rounds score the tokens it commits).
     */
    boolean follows() {
        return active() || adaptiveStop.resumes();
    }

    /**
     * The tokens the row would propose this round: {@code min(remaining, its proposal length, room)},
     * its proposal length being {@link ProposalLength}'s pick for a greedy row, else
     * {@code num_draft_tokens}.
     */
    int wanted(int remaining, int room) {
        int length = proposalLength != null ? proposalLength.next() : numDraftTokens;
        return Math.max(0, Math.min(Math.min(remaining, length), room));
    }

    /** Whether the batch may cut the row's proposal (a greedy row: its tokens do not depend on it). */
    boolean cuttable() {
        return proposalLength != null;
    }

    /** The row's acceptance as the batch's {@code RoundWidth} weighs it: {@link ProposalLength#roundAcceptance()}; 1/2 for a sampled row. */
    double acceptance() {
        return proposalLength == null ? 0.5 : proposalLength.roundAcceptance();
    }

    /** The source's proposal of at most {@code maxTokens} tokens (none for {@code maxTokens <= 0}). */
    int[] propose(int maxTokens) {
        if (shadow != null && maxTokens > 0) {
            shadow.drop();
        }
        return source.propose(Math.max(0, maxTokens));
    }

    /**
     * A plain one-position step committed {@code token} (the batch chose not to verify proposals
     * that step, or the row is paused): the source appends it, as after a round that proposed
     * nothing. Only while the row {@link #follows()}.
     */
    void observed(int token) {
        source.accepted(0, token);
        committedAlone(token);
    }

    /** A token committed without a proposal verified before it: the shadow round scores it. */
    private void committedAlone(int token) {
        if (shadow != null) {
            shadow.committed(token, source, proposalLength, adaptiveStop);
        }
    }

    /**
     * The round verified {@code proposed} tokens and accepted the first {@code accepted}, then
     * committed {@code next}: the source rolls back, the counts grow, the adaptive length follows.
     */
    void verified(int proposed, int accepted, int next) {
        proposedTokens += proposed;
        acceptedTokens += accepted;
        source.accepted(accepted, next);
        if (adaptiveStop != null && proposed > 0) {
            adaptiveStop.record(proposed, accepted);
            proposalLength.record(proposed, accepted);
        }
        if (proposed == 0) {
            committedAlone(next);
        }
    }

    int proposedTokens() {
        return proposedTokens;
    }

    int acceptedTokens() {
        return acceptedTokens;
    }

    @Override
    public void close() {
        source.close();
    }
}
