package dev.mlxring.exec.spec;

/**
 * A batch's verification width: the proposal length {@code K} every row of one round runs
 * {@code K + 1} positions for, chosen for the most expected tokens per unit of the round's cost.
 * A round over {@code n} rows costs a forward of {@code n (K + 1)} positions, and a plain step
 * one of {@code n}; so what a proposal is worth depends on the whole batch, not on its row alone.
 *
 * <p>{@code rate(K) = sum over rows of E_row(K) / cost(n (K + 1))}: a row that may be cut (a
 * greedy row: its tokens are the model's argmax whatever it proposed) yields
 * {@code E(min(length, K)) = 1 + p + ... + p^min(length, K)} at its acceptance {@code p}; a row
 * that may not (a sampled row: its key draws follow its proposal length) yields its whole
 * proposal's {@code E} at {@code p = 1/2}, whatever {@code K}, and makes {@code K} at least its
 * length; a row that proposes nothing yields 1. {@code K = 0} (no proposal verified: a plain step)
 * is a candidate unless an uncuttable row proposes. Of equal rates the smaller {@code K} wins.
 *
 * <p>{@code cost(m)}, in plain single-row steps, is the tier's {@link ForwardCosts}. The exact
 * CPU kernels decode each weight once per pass of at most 8 positions, so where the batch already
 * fills its passes (8 rows and more on the default model) each further position costs its full
 * share and no proposal pays, while a lone row or a few rows fill their passes' free positions with
 * proposals. The fast tiers' kernels take a call's positions in one pass, so a position costs less
 * the more there are (fast-q8: 16 positions 1.45 times 8), and a batch's proposals can pay at 8
 * rows too. Stateless; any thread.
 */
public final class RoundWidth {
    private RoundWidth() {}

    /**
     * The round's {@code K}.
     *
     * @param costs the tier's cost of a forward of so many positions
     * @param lengths per row, the tokens it proposes (0: none)
     * @param acceptance per row, its acceptance per proposed token (read for cuttable rows only)
     * @param cuttable per row, whether its proposal may be cut to {@code K}
     * @return the largest uncuttable length at least, and at most the longest length
     * @throws IllegalArgumentException when the arrays differ in length or a length is negative
     */
    public static int choose(ForwardCosts costs, int[] lengths, double[] acceptance, boolean[] cuttable) {
        int n = lengths.length;
        if (acceptance.length != n || cuttable.length != n) {
            throw new IllegalArgumentException(
                    "per-row arrays differ in length: " + n + ", " + acceptance.length + ", " + cuttable.length);
        }
        int floor = 0;
        int longest = 0;
        double fixed = 0;
        for (int e = 0; e < n; e++) {
            if (lengths[e] < 0) {
                throw new IllegalArgumentException("row " + e + " proposes " + lengths[e] + " tokens");
            }
            longest = Math.max(longest, lengths[e]);
            if (!cuttable[e] || lengths[e] == 0) {
                floor = Math.max(floor, cuttable[e] ? 0 : lengths[e]);
                fixed += expectedTokens(0.5, lengths[e]);
            }
        }
        int best = floor;
        double bestRate = -1;
        for (int k = floor; k <= longest; k++) {
            double tokens = fixed;
            for (int e = 0; e < n; e++) {
                if (cuttable[e] && lengths[e] > 0) {
                    tokens += expectedTokens(acceptance[e], Math.min(lengths[e], k));
                }
            }
            double rate = tokens / costs.cost((long) n * (k + 1));
            // A longer round must gain more than rounding: a tie keeps the cheaper width.
            if (rate > bestRate * (1 + 1e-9)) {
                bestRate = rate;
                best = k;
            }
        }
        return best;
    }

    /** {@code 1 + p + ... + p^k}: a round's expected tokens when each proposed token is kept at {@code p}. */
    static double expectedTokens(double p, int k) {
        double sum = 1;
        double power = 1;
        for (int i = 0; i < k; i++) {
            power *= p;
            sum += power;
        }
        return sum;
    }
}
