package dev.mlxring.exec.spec;

/**
 * When a row stops proposing: its acceptance is read over consecutive windows of at least
 * {@value #WINDOW_TOKENS} proposed tokens, and the first window whose accepted tokens fall below
 * {@value #MIN_ACCEPTANCE} of its proposed ones stops the row's proposals for the rest of the run
 * (each later round is a one-position step). The threshold is the break-even of the default model
 * on a two-core CPU: a round verifying one proposed token costs about 1.1 to 1.3 plain steps
 * ({@code VerifyForwardProfile}), so below 0.3 accepted per proposed token speculation loses.
 * Counts only; touches no model state. Exec thread only.
 */
public final class AdaptiveStop {
    /** Proposed tokens per window. */
    public static final int WINDOW_TOKENS = 32;
    /** The least accepted/proposed ratio a window may have without stopping the row. */
    public static final double MIN_ACCEPTANCE = 0.3;

    private int proposed;
    private int accepted;
    private boolean stopped;

    /**
     * One round's proposal of {@code proposedTokens}, of which {@code acceptedTokens} were accepted.
     *
     * @throws IllegalArgumentException unless {@code 0 <= acceptedTokens <= proposedTokens}
     */
    public void record(int proposedTokens, int acceptedTokens) {
        if (acceptedTokens < 0 || acceptedTokens > proposedTokens) {
            throw new IllegalArgumentException("accepted " + acceptedTokens + " of " + proposedTokens + " proposed");
        }
        proposed += proposedTokens;
        accepted += acceptedTokens;
        if (proposed >= WINDOW_TOKENS) {
            if (accepted < MIN_ACCEPTANCE * proposed) {
                stopped = true;
            }
            proposed = 0;
            accepted = 0;
        }
    }

    /** Whether the row has stopped proposing (for good). */
    public boolean stopped() {
        return stopped;
    }
}
