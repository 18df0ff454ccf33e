package dev.mlxring.exec.spec;

/**
 * When a row stops proposing, and when it starts again: its acceptance is read over consecutive
 * windows of at least {@value #WINDOW_TOKENS} proposed tokens, and a window whose accepted tokens
 * fall below {@value #MIN_ACCEPTANCE} of its proposed ones stops the row's proposals (each later
 * round is a one-position step). The threshold is the break-even of the default model on a
 * two-core CPU: a round verifying one proposed token costs about 1.1 to 1.3 plain steps ({@code
 * VerifyForwardProfile}), so below 0.3 accepted per proposed token speculation loses.
 *
 * <p>A row whose proposals cost nothing to make ({@link DraftSource#proposesFreely()}: prompt lookup)
 * only pauses: while stopped it keeps scoring the proposals it would have made ({@link ShadowRound},
 * no forward), and a window of those accepted at {@value #RESUME_ACCEPTANCE} or more starts its
 * proposals again. Text that changes character within one answer (an agent's preamble, then a
 * file copied from the prompt) would otherwise lose its copyable part to the preamble's first
 * failed rounds. The higher bar to resume keeps free writing, whose shadow rounds hover around
 * the stop's threshold, from flapping. A row with a draft model stops for good: scoring its
 * proposals would cost the draft's forwards. Counts only; touches no model state. Exec thread
 * only.
 */
public final class AdaptiveStop {
    /** Proposed tokens per window. */
    public static final int WINDOW_TOKENS = 32;
    /** The least accepted/proposed ratio a window may have without stopping the row. */
    public static final double MIN_ACCEPTANCE = 0.3;
    /** The accepted/proposed ratio of a window of shadow rounds that starts a paused row again. */
    public static final double RESUME_ACCEPTANCE = 0.5;

    private final boolean resumes;
    private int proposed;
    private int accepted;
    private boolean stopped;
    private int stops;

    /** A stop for good (a draft model's row). */
    public AdaptiveStop() {
        this(false);
    }

    /** @param resumes whether windows recorded while stopped (shadow rounds) may start the row again */
    public AdaptiveStop(boolean resumes) {
        this.resumes = resumes;
    }

    /**
     * One round's proposal of {@code proposedTokens}, of which {@code acceptedTokens} were accepted:
     * a verified round's, or while stopped a shadow round's.
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
            if (!stopped && accepted < MIN_ACCEPTANCE * proposed) {
                stopped = true;
                stops++;
            } else if (stopped && resumes && accepted >= RESUME_ACCEPTANCE * proposed) {
                stopped = false;
            }
            proposed = 0;
            accepted = 0;
        }
    }

    /** Whether the row does not propose now (for good, unless it {@link #resumes()}). */
    public boolean stopped() {
        return stopped;
    }

    /** How many times the row has stopped (a pause that ended counts too). */
    public int stops() {
        return stops;
    }

    /** Whether the row may start proposing again after a stop. */
    public boolean resumes() {
        return resumes;
    }
}
