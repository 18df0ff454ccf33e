package dev.mlxring.exec.spec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The prompt-lookup rule of {@link PromptLookupSource}, on hand-made token rows (no model). */
class PromptLookupSourceTest {

    private static int[] propose(int[] row, int minN, int maxN, int k) {
        PromptLookupSource s = new PromptLookupSource(minN, maxN);
        s.start(row);
        return s.propose(k);
    }

    @Test
    void theLongestMatchingSuffixWinsOverAnEarlierShorterOne() {
        // Suffix "2 3": the 1-gram "3" first occurs at 1 (followed by 9); the 2-gram "2 3" at 4 (followed by 5 6).
        int[] row = {7, 3, 9, 1, 2, 3, 5, 6, 2, 3};
        assertArrayEquals(new int[] {5, 6}, propose(row, 1, 2, 2));
        assertArrayEquals(new int[] {9}, propose(row, 1, 1, 1));
    }

    @Test
    void theEarliestOccurrenceIsTakenAndTheProposalStopsAtTheRowsEnd() {
        int[] row = {4, 8, 1, 4, 8, 2, 4, 8};
        assertArrayEquals(new int[] {1, 4, 8}, propose(row, 2, 2, 3));
        // The only earlier "8" ends one token before the end: the proposal is that one token.
        assertArrayEquals(new int[] {8}, propose(new int[] {5, 8, 8}, 1, 1, 4));
    }

    @Test
    void nothingIsProposedWithoutAMatchOrWithoutBudget() {
        assertArrayEquals(new int[0], propose(new int[] {1, 2, 3, 4}, 1, 3, 3));
        assertArrayEquals(new int[0], propose(new int[] {1, 1}, 1, 1, 0));
        assertArrayEquals(new int[0], propose(new int[] {6}, 1, 1, 3));
    }

    @Test
    void acceptedTokensAndTheTargetsTokenExtendTheRow() {
        PromptLookupSource s = new PromptLookupSource(1, 2);
        s.start(new int[] {1, 2, 3, 1});
        assertArrayEquals(new int[] {2, 3}, s.propose(2));
        s.accepted(1, 9); // row: 1 2 3 1 2 9
        assertArrayEquals(new int[0], s.propose(2));
        s.accepted(0, 3); // row: 1 2 3 1 2 9 3 -> "9 3" absent, "3" at 2 followed by 1 2
        assertArrayEquals(new int[] {1, 2}, s.propose(2));
        assertThrows(IllegalArgumentException.class, () -> s.accepted(3, 0));
    }

    @Test
    void sizesOutsideOneToMaxAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> new PromptLookupSource(0, 2));
        assertThrows(IllegalArgumentException.class, () -> new PromptLookupSource(3, 2));
    }
}
