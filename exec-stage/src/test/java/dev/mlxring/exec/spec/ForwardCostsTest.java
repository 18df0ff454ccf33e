package dev.mlxring.exec.spec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.mlx.Numerics;
import org.junit.jupiter.api.Test;

/** The tiers' prices of a forward's positions: the exact kernels' passes, the fast tiers' curves. */
class ForwardCostsTest {
    @Test
    void eachTierHasItsOwnCosts() {
        assertSame(ForwardCosts.EXACT, ForwardCosts.of(Numerics.EXACT));
        assertSame(ForwardCosts.FAST, ForwardCosts.of(Numerics.FAST));
        assertSame(ForwardCosts.FAST_Q8, ForwardCosts.of(Numerics.FAST_Q8));
    }

    @Test
    void theExactTierPaysEveryPassOfEightPositions() {
        assertEquals(1.0, ForwardCosts.EXACT.cost(1));
        assertEquals(2.49, ForwardCosts.EXACT.cost(8), 1e-12);
        assertEquals(2 * 2.49, ForwardCosts.EXACT.cost(16), 1e-12);
        assertEquals(2.49 + 1.15, ForwardCosts.EXACT.cost(10), 1e-12);
    }

    @Test
    void theFastTiersFollowTheMeasuredBatchCurveScaledToTheLoneRowsAtEight() {
        ForwardCosts q8 = ForwardCosts.FAST_Q8;
        assertEquals(1.10, q8.cost(2), 1e-12);
        assertEquals(1.93, q8.cost(8), 1e-12);
        double at12 = 1.93 * 20.4 / 16.9;
        double at16 = 1.93 * 24.5 / 16.9;
        double at24 = 1.93 * 34.4 / 16.9;
        double at32 = 1.93 * 42.5 / 16.9;
        assertEquals(at12, q8.cost(12), 1e-12);
        assertEquals(at16, q8.cost(16), 1e-12);
        assertEquals((1.93 + at12) / 2, q8.cost(10), 1e-12, "between measured points: the straight line");
        assertEquals(at32 + (at32 - at24), q8.cost(40), 1e-12, "past the last point: its slope");
        assertTrue(q8.cost(16) < 1.5 * q8.cost(8), "16 positions cost less than twice 8: " + q8.cost(16));
    }

    /** The fast tiers' curves; the exact tier's measured passes are not monotonic (6 positions 2.57, 8 2.49). */
    @Test
    void underTheFastTiersALongerForwardNeverCostsLess() {
        for (ForwardCosts c : new ForwardCosts[] {ForwardCosts.FAST, ForwardCosts.FAST_Q8}) {
            double before = 0;
            for (int m = 1; m <= 96; m++) {
                double cost = c.cost(m);
                assertTrue(cost >= before, c + " at " + m + ": " + cost + " < " + before);
                before = cost;
            }
            assertEquals(8, c.lone().length);
            assertEquals(1.0, c.lone()[0]);
        }
        assertThrows(IllegalArgumentException.class, () -> ForwardCosts.FAST.cost(0));
    }
}
