package dev.mlxring.exec.spec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

class RoundWidthTest {
    private static int choose(int[] lengths, double p, boolean cuttable) {
        double[] acceptance = new double[lengths.length];
        Arrays.fill(acceptance, p);
        boolean[] cut = new boolean[lengths.length];
        Arrays.fill(cut, cuttable);
        return RoundWidth.choose(ForwardCosts.EXACT, lengths, acceptance, cut);
    }

    private static int[] rows(int n, int length) {
        int[] lengths = new int[n];
        Arrays.fill(lengths, length);
        return lengths;
    }

    /** The exact tier's cost of a round's positions is ForwardCostsTest's. */
    @Test
    void aRoundExpectsItsCommittedTokenAndEachProposalAsLikelyAsItsPrefix() {
        assertEquals(1 + 0.5 + 0.25, RoundWidth.expectedTokens(0.5, 2), 1e-12);
    }

    @Test
    void aLoneRowVerifiesWhatFillsItsPass() {
        // 1 + 0.9 over 1.15 steps beats 1 over 1; 4 positions (3 proposed) cost 1.79 and yield 3.44.
        assertEquals(3, choose(new int[] {3}, 0.9, true));
        assertEquals(7, choose(new int[] {7}, 0.95, true));
        // Two proposed tokens pay the three-position price (1.72): one of them is worth more alone.
        assertEquals(1, choose(new int[] {2}, 0.7, true));
        // At a low acceptance a proposal costs more than it yields.
        assertEquals(0, choose(new int[] {1}, 0.1, true));
    }

    @Test
    void eightRowsFillTheirPassAndNoProposalPays() {
        // 8 rows already fill one pass of 8: every further position costs its full share, so even
        // proposals that are always accepted only tie with the plain step, and ties go to the smaller K.
        assertEquals(0, choose(rows(8, 7), 1.0, true));
        assertEquals(0, choose(rows(8, 1), 0.9, true));
        assertEquals(0, choose(rows(16, 3), 1.0, true));
    }

    @Test
    void underTheFastTiersEightRowsStillGainFromProposals() {
        double[] p65 = new double[8];
        Arrays.fill(p65, 0.65);
        boolean[] cut = new boolean[8];
        Arrays.fill(cut, true);
        // fast-q8: plain 8 / 1.93 = 4.15 a step; K=1: 8 x 1.65 over 16 positions (2.80) = 4.72.
        assertEquals(1, RoundWidth.choose(ForwardCosts.FAST_Q8, rows(8, 3), p65, cut));
        // the exact tier's second pass costs a whole one: no proposal pays
        assertEquals(0, RoundWidth.choose(ForwardCosts.EXACT, rows(8, 3), p65, cut));
        double[] p90 = new double[8];
        Arrays.fill(p90, 0.9);
        // rows copying at 0.9: K=3, 8 x 3.44 over 32 positions (4.85) = 5.67 a step
        assertEquals(3, RoundWidth.choose(ForwardCosts.FAST_Q8, rows(8, 3), p90, cut));
    }

    @Test
    void aFewRowsShareThePassWithTheirProposals() {
        // 2 rows: plain 2 / 1.15; K=3 is 8 positions (2.49) for 2 E(0.8, 3) = 5.90 tokens.
        assertEquals(3, choose(rows(2, 3), 0.8, true));
        // 4 rows: plain 4 / 1.79 = 2.23; K=1: 8 positions for 4 x 1.7 = 6.8, 2.73 a step.
        assertEquals(1, choose(rows(4, 3), 0.7, true));
        // 4 rows whose proposals are seldom kept: plain.
        assertEquals(0, choose(rows(4, 1), 0.3, true));
    }

    @Test
    void oneRowsProposalIsNotWorthTheOthersPositions() {
        // One greedy row of four proposes: K=1 makes all four run two positions.
        assertEquals(
                0,
                RoundWidth.choose(ForwardCosts.EXACT, new int[] {3, 0, 0, 0}, new double[] {1, 0, 0, 0}, new boolean[] {
                    true, false, false, false
                }));
    }

    @Test
    void aSampledRowsProposalIsTheFloor() {
        // A sampled row keeps its whole proposal (its key draws follow it), even where it loses.
        assertEquals(
                5,
                RoundWidth.choose(
                        ForwardCosts.EXACT,
                        new int[] {5, 1, 1, 1, 1, 1, 1, 1},
                        new double[] {0.5, 1, 1, 1, 1, 1, 1, 1},
                        new boolean[] {false, true, true, true, true, true, true, true}));
        // and a greedy row's longer proposal may still raise K above it.
        assertEquals(
                3,
                RoundWidth.choose(
                        ForwardCosts.EXACT, new int[] {1, 3}, new double[] {0.5, 0.95}, new boolean[] {false, true}));
    }

    @Test
    void malformedInputIsRefused() {
        assertThrows(
                IllegalArgumentException.class,
                () -> RoundWidth.choose(
                        ForwardCosts.EXACT, new int[] {1}, new double[] {0.5, 0.5}, new boolean[] {true}));
        assertThrows(
                IllegalArgumentException.class,
                () -> RoundWidth.choose(ForwardCosts.EXACT, new int[] {-1}, new double[] {0.5}, new boolean[] {true}));
    }
}
