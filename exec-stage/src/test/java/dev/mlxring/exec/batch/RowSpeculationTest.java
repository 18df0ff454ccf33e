package dev.mlxring.exec.batch;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.exec.spec.AdaptiveStop;
import dev.mlxring.exec.spec.DraftSource;
import dev.mlxring.exec.spec.ForwardCosts;
import dev.mlxring.exec.spec.PromptLookupSource;
import org.junit.jupiter.api.Test;

/**
 * A greedy row's adaptive stop inside the batch: a prompt-lookup row that stops keeps following its
 * tokens and starts proposing again once its unverified lookups pass the bar; a row whose proposals
 * would cost a forward stops for good and leaves its source alone.
 */
class RowSpeculationTest {
    private static final int[] TEXT = {10, 11, 12, 13, 14, 15, 16, 17};

    /** Verified rounds that propose {@code k} tokens and accept none, for a whole window. */
    private static void failWindow(RowSpeculation row, int k) {
        for (int proposed = 0; proposed < AdaptiveStop.WINDOW_TOKENS; proposed += k) {
            row.verified(k, 0, 99);
        }
    }

    @Test
    void aStoppedLookupRowFollowsItsTokensAndProposesAgain() {
        PromptLookupSource lookup = new PromptLookupSource(1, 3);
        lookup.start(TEXT);
        try (RowSpeculation row = new RowSpeculation(lookup, 3, true, ForwardCosts.FAST_Q8)) {
            failWindow(row, 3);
            assertFalse(row.active(), "a window under the threshold stops its proposals");
            assertTrue(row.follows(), "a lookup row only pauses");
            int committed = 0;
            while (!row.active() && committed < 200) {
                row.observed(TEXT[committed % TEXT.length]);
                committed++;
            }
            assertTrue(row.active(), "still paused after " + committed + " tokens its lookups predicted");
            assertTrue(row.propose(3).length > 0, "it proposes from the tokens it followed");
        }
    }

    @Test
    void aRowWhoseProposalsCostAForwardStopsForGood() {
        PromptLookupSource lookup = new PromptLookupSource(1, 3);
        lookup.start(TEXT);
        DraftSource costly = new DraftSource() {
            @Override
            public void start(int[] prompt) {
                lookup.start(prompt);
            }

            @Override
            public int[] propose(int maxTokens) {
                return lookup.propose(maxTokens);
            }

            @Override
            public void accepted(int acceptedCount, int next) {
                lookup.accepted(acceptedCount, next);
            }

            @Override
            public boolean proposesFreely() {
                return false;
            }

            @Override
            public void close() {}
        };
        try (RowSpeculation row = new RowSpeculation(costly, 3, true, ForwardCosts.FAST_Q8)) {
            failWindow(row, 3);
            assertFalse(row.active());
            assertFalse(row.follows(), "its source is left where it stopped");
        }
    }
}
