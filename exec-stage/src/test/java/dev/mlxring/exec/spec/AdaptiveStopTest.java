package dev.mlxring.exec.spec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The window rule: a full window below the threshold stops the row; anything else does not; a row
 * that resumes starts again after a full window at the resume bar.
 */
class AdaptiveStopTest {
    private static final int K = 4;

    /** Rounds of {@code K} proposed tokens with {@code accepted} accepted, until {@code proposed} tokens. */
    private static void rounds(AdaptiveStop stop, int proposed, int accepted) {
        for (int p = 0; p < proposed; p += K) {
            stop.record(K, accepted);
        }
    }

    @Test
    void aWindowBelowTheThresholdStopsTheRowOnlyOnceItIsFull() {
        AdaptiveStop stop = new AdaptiveStop();
        rounds(stop, AdaptiveStop.WINDOW_TOKENS - K, 0);
        assertFalse(stop.stopped(), "not before a whole window");
        stop.record(K, 0);
        assertTrue(stop.stopped());
        stop.record(K, K);
        assertTrue(stop.stopped(), "for good");
    }

    @Test
    void aWindowAtTheThresholdKeepsProposingAndWindowsDoNotCarryOver() {
        AdaptiveStop stop = new AdaptiveStop();
        int atThreshold = (int) Math.ceil(AdaptiveStop.MIN_ACCEPTANCE * K);
        rounds(stop, AdaptiveStop.WINDOW_TOKENS, atThreshold);
        assertFalse(stop.stopped());
        rounds(stop, AdaptiveStop.WINDOW_TOKENS, K);
        rounds(stop, AdaptiveStop.WINDOW_TOKENS - K, 0);
        assertFalse(stop.stopped(), "an earlier good window does not count towards this one, nor does it save it");
        stop.record(K, 0);
        assertTrue(stop.stopped());
    }

    @Test
    void aPausedRowStartsAgainOnlyAfterAWholeWindowAtTheResumeBar() {
        AdaptiveStop stop = new AdaptiveStop(true);
        assertTrue(stop.resumes());
        rounds(stop, AdaptiveStop.WINDOW_TOKENS, 0);
        assertTrue(stop.stopped());
        int underBar = (int) Math.ceil(AdaptiveStop.RESUME_ACCEPTANCE * K) - 1;
        assertTrue(underBar >= AdaptiveStop.MIN_ACCEPTANCE * K - 1, "a window between the two bars");
        rounds(stop, AdaptiveStop.WINDOW_TOKENS, underBar);
        assertTrue(stop.stopped(), "a window under the resume bar keeps the row paused");
        int atBar = (int) Math.ceil(AdaptiveStop.RESUME_ACCEPTANCE * K);
        rounds(stop, AdaptiveStop.WINDOW_TOKENS - K, atBar);
        assertTrue(stop.stopped(), "not before a whole window");
        stop.record(K, atBar);
        assertFalse(stop.stopped(), "a whole window at the bar starts it again");
        rounds(stop, AdaptiveStop.WINDOW_TOKENS, 0);
        assertTrue(stop.stopped(), "and it stops again as it first did");
        assertEquals(2, stop.stops());
    }

    @Test
    void refusesMoreAcceptedThanProposed() {
        assertThrows(IllegalArgumentException.class, () -> new AdaptiveStop().record(2, 3));
        assertThrows(IllegalArgumentException.class, () -> new AdaptiveStop().record(2, -1));
    }
}
