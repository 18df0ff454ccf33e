package dev.mlxring.exec.spec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ShadowRoundTest {
    @Test
    void aRoundEndsAtTheFirstTokenThatDiffersOrWhenMatchedWhole() {
        ShadowRound r = new ShadowRound();
        r.start(new int[] {5, 6, 7});
        assertNull(r.score(5));
        assertNull(r.score(6));
        assertArrayEquals(new int[] {3, 2}, r.score(9), "the third token differed: 2 of 3 kept");
        assertFalse(r.active());
        r.start(new int[] {1, 2});
        assertNull(r.score(1));
        assertArrayEquals(new int[] {2, 2}, r.score(2), "matched whole");
        r.start(new int[] {4});
        assertArrayEquals(new int[] {1, 0}, r.score(3));
        r.start(new int[0]);
        assertFalse(r.active(), "an empty proposal scores nothing");
        assertNull(r.score(3));
        r.start(new int[] {8});
        r.drop();
        assertNull(r.score(8), "a dropped round scores nothing");
    }

    /**
     * A row that learned a low acceptance (one rejected round) learns a high one again from the
     * tokens it commits plainly, when its lookups keep matching them: the shadow rounds record as
     * verified rounds would, and each starts the next from the source.
     */
    @Test
    void shadowRoundsTeachTheRowItsAcceptance() {
        ProposalLength length = new ProposalLength(7);
        AdaptiveStop stop = new AdaptiveStop();
        length.record(1, 0);
        double low = length.roundAcceptance();
        // the row's text repeats "10 11 12 13": the lookup proposes what follows
        PromptLookupSource source = new PromptLookupSource(1, 3);
        int[] text = {10, 11, 12, 13, 10, 11, 12, 13};
        source.start(text);
        ShadowRound shadow = new ShadowRound();
        int[] next = {10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13};
        for (int token : next) {
            source.accepted(0, token);
            shadow.committed(token, source, length, stop);
        }
        assertTrue(length.roundAcceptance() > 0.8, low + " -> " + length.roundAcceptance());
        assertTrue(shadow.active(), "a round is being scored");
        assertFalse(stop.stopped());
        assertEquals(true, source.proposesFreely());
    }

    /**
     * A prompt-lookup row the adaptive stop has paused keeps scoring its lookups against the tokens
     * it commits, and once a whole window of them passes the resume bar it proposes again.
     */
    @Test
    void shadowRoundsStartAPausedRowAgain() {
        ProposalLength length = new ProposalLength(7);
        AdaptiveStop stop = new AdaptiveStop(true);
        stop.record(AdaptiveStop.WINDOW_TOKENS, 0);
        assertTrue(stop.stopped());
        PromptLookupSource source = new PromptLookupSource(1, 3);
        source.start(new int[] {10, 11, 12, 13, 14, 15, 16, 17});
        ShadowRound shadow = new ShadowRound();
        int committed = 0;
        while (stop.stopped() && committed < 200) {
            int token = 10 + committed % 8;
            source.accepted(0, token);
            shadow.committed(token, source, length, stop);
            committed++;
        }
        assertFalse(stop.stopped(), "still paused after " + committed + " tokens its lookups predicted");
        assertTrue(committed >= AdaptiveStop.WINDOW_TOKENS, "a whole window of shadow rounds first: " + committed);
    }
}
