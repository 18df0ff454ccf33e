package dev.mlxring.exec.spec;

/**
 * A proposal a greedy row made but did not verify, scored against the tokens the row then commits
 * one at a time: while a row's proposals do not pay ({@link RoundWidth} chose no proposal for it),
 * its acceptance would otherwise never change, and a row whose first round failed would never
 * propose again. A greedy row's tokens are the model's argmax whatever it proposed, so the tokens
 * it commits are exactly what a verification would have kept: the shadow round's outcome is the
 * round's own, at no forward's cost. Only for sources whose proposals cost no forward
 * ({@link DraftSource#proposesFreely()}: prompt lookup). Shadow rounds count in the row's
 * acceptance and adaptive stop, not in its {@code usage.speculative}; they go on while the
 * adaptive stop has paused the row, and are what starts it again ({@link AdaptiveStop}). Exec
 * thread only.
 */
public final class ShadowRound {
    private int[] proposal;
    private int matched;

    /** Whether a proposal is being scored. */
    public boolean active() {
        return proposal != null;
    }

    /** Scores {@code tokens} from the next committed token on (none: nothing to score). */
    public void start(int[] tokens) {
        proposal = tokens.length == 0 ? null : tokens.clone();
        matched = 0;
    }

    /** Forgets the proposal being scored (the row proposed for real). */
    public void drop() {
        proposal = null;
    }

    /**
     * The row committed {@code token} one position at a time (its source has appended it): the
     * shadow round's outcome, once known (the first token that differs from the proposal, or the
     * proposal matched whole), is recorded as a round's in {@code length} and {@code stop}; then the
     * next shadow round starts from the source's proposal of the length the row would ask for,
     * whether or not the stop has paused the row. Only for a source that {@link
     * DraftSource#proposesFreely()}.
     */
    public void committed(int token, DraftSource source, ProposalLength length, AdaptiveStop stop) {
        int[] outcome = score(token);
        if (outcome != null) {
            stop.record(outcome[0], outcome[1]);
            length.record(outcome[0], outcome[1]);
        }
        if (proposal == null) {
            start(source.propose(length.next()));
        }
    }

    /** {@code {proposed, accepted}} once the round's outcome is known, else null (or nothing scored). */
    int[] score(int token) {
        if (proposal == null) {
            return null;
        }
        if (proposal[matched] == token) {
            matched++;
            if (matched < proposal.length) {
                return null;
            }
        }
        int[] outcome = {proposal.length, matched};
        proposal = null;
        return outcome;
    }
}
