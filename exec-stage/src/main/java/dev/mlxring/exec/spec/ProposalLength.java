package dev.mlxring.exec.spec;

import java.util.Arrays;

/**
 * How many tokens a greedy row proposes next round: the length {@code k} that maximises the
 * round's expected tokens per unit of cost, {@code E(k) / cost(k + 1)}, where {@code cost(n)} is
 * the measured cost of a forward of {@code n} positions in plain decode steps and
 * {@code E(k) = 1 + p + p^2 + ... + p^k} the expected tokens of a round whose proposed tokens are
 * each accepted with probability {@code p} (geometric: the first rejection ends the round; the
 * target's own token always follows).
 *
 * <p>{@code p} is the row's own acceptance history, kept apart by its streak: the number of
 * consecutive rounds, up to {@value #MAX_STREAK}, that accepted their whole proposal before this
 * one. Text the row is copying is accepted in long runs, so a row several whole rounds into a copy
 * has a high {@code p} there even while its rounds after a rejection mostly fail. Per streak
 * {@code s}, over the rounds that started at it (a round adds its accepted tokens, and one
 * rejection unless it was accepted whole): {@code p(s) = (accepted + 2 p(s - 1)) / (accepted +
 * rejections + 2)}, with {@code p(-1) = 1/2}; so an unseen streak starts from the one below, and a
 * fresh row at 1/2, where only a one-token proposal pays.
 *
 * <p>The lengths it picks follow the cost curve: the exact CPU kernels decode each weight once per
 * pass of 1, 2, 4 or 8 rows (3 and 5-7 rows take the next pass size with repeated rows), so 3 and 4
 * positions cost about the same and so do 5 to 8; with {@link ForwardCosts#EXACT} it proposes 1, 3 or
 * 7 tokens and no length in between. The fast tiers' kernels price every further position lower
 * ({@link ForwardCosts#FAST_Q8}: 4 positions 1.40 plain steps, 8 positions 1.93), so the same
 * history proposes longer there. Never more than {@code maxTokens} (the request's
 * {@code num_tokens}) nor than the cost table covers. Counts only; touches no model state. Exec
 * thread only.
 */
public final class ProposalLength {
    /** Consecutive whole-accepted rounds the history distinguishes; longer streaks count as this. */
    public static final int MAX_STREAK = 3;

    /** How many proposed tokens the estimate of the streak below counts as, in a streak's estimate. */
    private static final double PRIOR_WEIGHT = 2.0;

    private final int maxTokens;
    /** The tier's costs: a lone row's round ({@link #aloneWidth}) and its first positions ({@link #next}). */
    private final ForwardCosts costs;
    /** {@code costs.lone()}: {@code positionCosts[i]}, a forward of {@code i + 1} positions in plain steps. */
    private final double[] positionCosts;

    private final long[] acceptedByStreak = new long[MAX_STREAK + 1];
    private final long[] rejectedByStreak = new long[MAX_STREAK + 1];
    private int streak;
    /** Rounds recorded that proposed something. */
    private long rounds;

    /** At the exact tier's costs ({@link ForwardCosts#EXACT}). */
    public ProposalLength(int maxTokens) {
        this(maxTokens, ForwardCosts.EXACT);
    }

    /**
     * @param maxTokens the longest proposal (the request's {@code num_tokens})
     * @param positionCosts {@code positionCosts[i]}: a forward of {@code i + 1} positions in plain
     *     steps, in passes of as many positions as it covers; at least two entries, the first 1,
     *     all positive
     * @throws IllegalArgumentException for {@code maxTokens < 1} or a malformed cost table
     */
    public ProposalLength(int maxTokens, double[] positionCosts) {
        this(maxTokens, ForwardCosts.passes(positionCosts));
    }

    /**
     * With the tier's costs: its lone row's forwards ({@link ForwardCosts#lone()}) price the
     * proposal lengths.
     *
     * @throws IllegalArgumentException for {@code maxTokens < 1} or a malformed cost table
     */
    public ProposalLength(int maxTokens, ForwardCosts costs) {
        double[] positionCosts = costs.lone();
        if (maxTokens < 1) {
            throw new IllegalArgumentException("the longest proposal must be at least 1 token, got " + maxTokens);
        }
        if (positionCosts.length < 2
                || positionCosts[0] != 1.0
                || Arrays.stream(positionCosts).anyMatch(c -> !(c > 0) || Double.isInfinite(c))) {
            throw new IllegalArgumentException("position costs must start at 1 (one position is one plain step), "
                    + "cover at least two positions and be positive, got " + Arrays.toString(positionCosts));
        }
        this.maxTokens = maxTokens;
        this.costs = costs;
        this.positionCosts = positionCosts;
    }

    /** The acceptance probability per proposed token the history gives the row's current streak. */
    public double acceptance() {
        double p = 0.5;
        for (int s = 0; s <= streak; s++) {
            p = (acceptedByStreak[s] + PRIOR_WEIGHT * p) / (acceptedByStreak[s] + rejectedByStreak[s] + PRIOR_WEIGHT);
        }
        return p;
    }

    /**
     * The acceptance a round's width is weighed at ({@link RoundWidth}): {@link #acceptance()}
     * once a round was recorded, 1 before, so a fresh row gets its first rounds verified and
     * learns its rate (at the prior of 1/2, a few fresh rows in one batch would never propose).
     */
    public double roundAcceptance() {
        return rounds == 0 ? 1.0 : acceptance();
    }

    /**
     * How much of a lone row's {@code proposedTokens} proposal its round verifies: the
     * {@link RoundWidth} of one row at {@link #roundAcceptance()} (0: a plain step pays more).
     */
    public int aloneWidth(int proposedTokens) {
        return RoundWidth.choose(
                costs, new int[] {proposedTokens}, new double[] {roundAcceptance()}, new boolean[] {true});
    }

    /** The next round's proposal length: 1 up to {@code min(maxTokens, positions the table covers - 1)}. */
    public int next() {
        double p = acceptance();
        int longest = Math.min(maxTokens, positionCosts.length - 1);
        int best = 1;
        double bestRate = 0;
        double expected = 1;
        double power = 1;
        for (int k = 1; k <= longest; k++) {
            power *= p;
            expected += power;
            double rate = expected / positionCosts[k];
            if (rate > bestRate) {
                bestRate = rate;
                best = k;
            }
        }
        return best;
    }

    /**
     * One round's proposal of {@code proposedTokens} (none: the round says nothing, the streak
     * stays), of which {@code acceptedTokens} were accepted.
     *
     * @throws IllegalArgumentException unless {@code 0 <= acceptedTokens <= proposedTokens}
     */
    public void record(int proposedTokens, int acceptedTokens) {
        if (acceptedTokens < 0 || acceptedTokens > proposedTokens) {
            throw new IllegalArgumentException("accepted " + acceptedTokens + " of " + proposedTokens + " proposed");
        }
        if (proposedTokens == 0) {
            return;
        }
        rounds++;
        acceptedByStreak[streak] += acceptedTokens;
        if (acceptedTokens < proposedTokens) {
            rejectedByStreak[streak]++;
            streak = 0;
        } else {
            streak = Math.min(streak + 1, MAX_STREAK);
        }
    }
}
