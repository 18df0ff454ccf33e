package dev.mlxring.exec.spec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The cost model: the length with the most expected tokens per unit of cost for the row's
 * acceptance at its streak, within {@code maxTokens} and the cost table.
 */
class ProposalLengthTest {
    /** A copying row: every round accepted whole. */
    private static TreeSet<Integer> lengthsWhileCopying(ProposalLength length, int rounds) {
        TreeSet<Integer> seen = new TreeSet<>();
        for (int i = 0; i < rounds; i++) {
            int k = length.next();
            seen.add(k);
            length.record(k, k);
        }
        return seen;
    }

    @Test
    void aFreshRowProposesOneTokenWhereALongerRoundDoesNotPayAtEvenOdds() {
        ProposalLength length = new ProposalLength(7);
        assertEquals(0.5, length.acceptance());
        assertEquals(1, length.next(), "at p = 1/2: 1.5 tokens for 1.15 steps beats 1.875 for 1.79");
    }

    @Test
    void aCopyingRowGrowsThroughThePassSizesOnlyAndReachesTheLongest() {
        TreeSet<Integer> seen = lengthsWhileCopying(new ProposalLength(7), 40);
        assertEquals(new TreeSet<>(java.util.List.of(1, 3, 7)), seen, "2, 4, 5 and 6 cost as much as a longer one");
    }

    @Test
    void theFastQ8TiersCheaperPositionsMakeTheSameHistoryProposeLonger() {
        ProposalLength exact = new ProposalLength(7);
        ProposalLength q8 = new ProposalLength(7, ForwardCosts.FAST_Q8);
        for (int i = 0; i < 20; i++) {
            exact.record(3, 2);
            q8.record(3, 2);
        }
        assertEquals(41.0 / 62, q8.acceptance(), 1e-12);
        // exact: 1.66 tokens for 1.15 steps beats 2.39 for 1.79; fast-q8: 2.39 for 1.40 is the best rate
        assertEquals(1, exact.next());
        assertEquals(3, q8.next());
    }

    @Test
    void theLengthNeverExceedsMaxTokensNorTheCostTable() {
        assertEquals(3, lengthsWhileCopying(new ProposalLength(3), 40).last());
        assertEquals(7, lengthsWhileCopying(new ProposalLength(20), 40).last(), "the table covers 8 positions");
        double[] flat = {1.0, 1.0, 1.0};
        assertEquals(2, new ProposalLength(5, flat).next(), "free positions: the longest the table covers");
    }

    @Test
    void aRejectionReturnsTheRowToItsHistoryAfterRejections() {
        ProposalLength length = new ProposalLength(7);
        lengthsWhileCopying(length, 20);
        assertEquals(7, length.next());
        // rounds after a rejection fail at once, and each such round ends the streak again
        length.record(7, 2);
        for (int i = 0; i < 8; i++) {
            int k = length.next();
            length.record(k, 0);
        }
        assertTrue(length.acceptance() < 0.2, "the after-rejection history: " + length.acceptance());
        assertEquals(1, length.next());
        // the copying history is kept: three whole rounds later the row proposes the longest again
        for (int i = 0; i < ProposalLength.MAX_STREAK; i++) {
            int k = length.next();
            length.record(k, k);
        }
        assertEquals(7, length.next(), "a streak of " + ProposalLength.MAX_STREAK + " reads the copying history");
    }

    @Test
    void malformedArgumentsAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> new ProposalLength(0));
        assertThrows(IllegalArgumentException.class, () -> new ProposalLength(3, new double[] {1.0}));
        assertThrows(IllegalArgumentException.class, () -> new ProposalLength(3, new double[] {2.0, 2.5}));
        assertThrows(IllegalArgumentException.class, () -> new ProposalLength(3, new double[] {1.0, -1.0}));
        ProposalLength length = new ProposalLength(3);
        assertThrows(IllegalArgumentException.class, () -> length.record(2, 3));
        assertThrows(IllegalArgumentException.class, () -> length.record(2, -1));
    }
}
