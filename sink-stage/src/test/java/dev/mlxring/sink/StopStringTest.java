package dev.mlxring.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.TextSink;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Stop strings, OpenAI semantics: the text before the first match is delivered, nothing of the
 * match or after it; a possible match spanning tokens is held back until decided; held text is
 * flushed when generation ends without a match.
 */
class StopStringTest {
    private final FakeVocab v = new FakeVocab();
    /** Text-level only (no encoder). */
    private final DetokenizingSinks textOnly = DetokenizingSinks.builder(v).build();

    private SinkRun run(List<String> stops, String... pieces) {
        return SinkRun.run(textOnly, new int[0], stops, v.pieces(pieces));
    }

    @Test
    void noStopsPassesTextThrough() {
        SinkRun r = run(List.of(), "Hello", " world", "!");
        assertEquals(List.of("Hello", " world", "!"), r.texts);
        assertEquals("", r.finishText);
        assertFalse(r.stopped());
    }

    @Test
    void stopInsideOneToken() {
        SinkRun r = run(List.of("STOP"), "ab", "cSTOPd", "never");
        assertEquals(1, r.stoppedAt);
        assertEquals(List.of("ab", "c"), r.texts);
        assertEquals("abc", r.text());
        assertNull(r.finishText, "after a stop, finish() delivers no text");
    }

    @Test
    void stopSpanningTokensIsHeldBackUntilDecided() {
        SinkRun r = run(List.of("world"), "hello wo", "r", "ld and more");
        // "wo" might start "world": held back; "hello " is safe.
        assertEquals("hello ", r.texts.get(0));
        assertEquals("", r.texts.get(1));
        assertEquals("", r.texts.get(2));
        assertEquals(2, r.stoppedAt);
        assertEquals("hello ", r.text());
    }

    @Test
    void heldCandidateReleasedWhenItFails() {
        SinkRun r = run(List.of("world"), "hello wo", "rm", "s");
        assertEquals(List.of("hello ", "worm", "s"), r.texts);
        assertFalse(r.stopped());
    }

    @Test
    void stopAtTheVeryStart() {
        SinkRun r = run(List.of("<|"), "<|", "end|>");
        assertEquals(0, r.stoppedAt);
        assertEquals("", r.text());
        SinkRun r2 = run(List.of("Hi"), "H", "i there");
        assertEquals(1, r2.stoppedAt);
        assertEquals(List.of("", ""), r2.texts);
    }

    @Test
    void overlappingCandidatesFirstCompletedMatchWins() {
        // "bc" completes (at 'c') before "abcd" could.
        SinkRun r = run(List.of("abcd", "bc"), "a", "b", "c", "d");
        assertEquals(2, r.stoppedAt);
        assertEquals("a", r.text());
        // A stop string overlapping itself: "aab" in "aaab".
        SinkRun r2 = run(List.of("aab"), "a", "a", "a", "b");
        assertEquals(3, r2.stoppedAt);
        assertEquals("a", r2.text());
        // Prefix of another stop: the shorter completes first.
        SinkRun r3 = run(List.of("abc", "ab"), "xa", "bc");
        assertEquals("x", r3.text());
    }

    @Test
    void multipleStopsEarliestEndingMatchWins() {
        SinkRun r = run(List.of("END", "\n\n", "###"), "one\n", "two ##", "# three\n\nEND");
        assertEquals(2, r.stoppedAt);
        assertEquals("one\ntwo ", r.text());
        SinkRun r2 = run(List.of("xyz", "y"), "xy", "z");
        assertEquals("x", r2.text());
    }

    @Test
    void neverCompletedPrefixIsFlushedAtTheEnd() {
        SinkRun r = run(List.of("###"), "Done. ", "#", "#");
        assertEquals(List.of("Done. ", "", ""), r.texts);
        assertFalse(r.stopped());
        assertEquals("##", r.finishText);
        assertEquals("Done. ##", r.text());
    }

    @Test
    void eosDiscardsHeldBackTextLikeMlxLmServer() {
        int[] ids = v.pieces("Done. ", "#", "#");
        SinkRun r = SinkRun.run(textOnly.open(SinkRun.plan(new int[0], List.of("###"))), "stop", ids);
        assertEquals("", r.finishText);
        assertEquals("Done. ", r.text());
        DetokenizingSinks flushing =
                DetokenizingSinks.builder(v).flushAtEos(true).build();
        SinkRun f = SinkRun.run(flushing.open(SinkRun.plan(new int[0], List.of("###"))), "stop", ids);
        assertEquals("Done. ##", f.text());
    }

    @Test
    void eosDiscardsALoneTrailingSpace() {
        // The byte-level detokenizer holds a lone space token until the next token.
        int[] ids = v.pieces("Hi", " ");
        SinkRun r = SinkRun.run(textOnly.open(SinkRun.plan(new int[0], List.of())), "stop", ids);
        assertEquals("Hi", r.text());
        SinkRun l = SinkRun.run(textOnly.open(SinkRun.plan(new int[0], List.of())), "length", ids);
        assertEquals("Hi ", l.text());
    }

    @Test
    void aStopRevealedByTheFinalFlushIsReported() {
        // The lone space reaches the text only when the detokenizer is finalized.
        int[] ids = v.pieces("Hi", " ");
        SinkRun r = SinkRun.run(textOnly.open(SinkRun.plan(new int[0], List.of("i "))), "length", ids);
        assertTrue(r.stoppedAtFinish);
        assertEquals("H", r.text());
    }

    @Test
    void afterAStopNothingMoreIsDelivered() {
        int axb = v.piece("axb");
        int more = v.piece("more");
        TextSink sink = textOnly.open(SinkRun.plan(new int[0], List.of("x")));
        CommittedSpan span = new CommittedSpan(0);
        assertTrue(sink.onToken(axb, span));
        assertEquals("a", span.text.toString());
        span.clear();
        assertTrue(sink.onToken(more, span));
        assertEquals("", span.text.toString());
        assertEquals("stop", sink.finish("stop", span));
        assertEquals("", span.text.toString());
    }

    @Test
    void emptyStopStringIsIgnored() {
        SinkRun r = run(List.of("", "zz"), "ab", "c");
        assertFalse(r.stopped());
        assertEquals("abc", r.text());
    }

    @Test
    void stopStringMadeOfMultiByteCharactersSplitAcrossByteTokens() {
        // 😀 = F0 9F 98 80, delivered one byte per token: the detokenizer releases it whole.
        int[] ids = {v.piece("ok "), v.bytes(0xF0), v.bytes(0x9F), v.bytes(0x98), v.bytes(0x80), v.piece("tail")};
        SinkRun r = SinkRun.run(textOnly, new int[0], List.of("😀"), ids);
        assertEquals(4, r.stoppedAt);
        assertEquals("ok ", r.text());
        SinkRun r2 = SinkRun.run(textOnly, new int[0], List.of("😁"), ids);
        assertFalse(r2.stopped());
        assertEquals("ok 😀tail", r2.text());
    }

    @Test
    void heldLoneSpaceBeforeTheStopStringIsDeliveredOnATextMatch() {
        // The byte-level detokenizer holds a lone space token until the next token.
        SinkRun r = run(List.of("\n"), "Hello", " ", "\n", "x");
        assertEquals(2, r.stoppedAt);
        assertEquals("Hello ", r.text());
    }

    @Test
    void canonicalTokenSequenceStopsLikeMlxLmServer() {
        // With an encoder, the stop string's own token sequence ends generation on that token and
        // the response that carries it contributes no text, held-back text included (mlx_lm.server).
        int sp = v.piece(" ");
        int nl = v.piece("\n");
        DetokenizingSinks withTokens = DetokenizingSinks.builder(v)
                .encoder(s -> switch (s) {
                    case "\n" -> new int[] {nl};
                    case "User:" -> v.pieces("User", ":");
                    default -> throw new IllegalArgumentException(s);
                })
                .build();
        SinkRun r = SinkRun.run(withTokens, new int[0], List.of("\n"), v.piece("Hello"), sp, nl, v.piece("x"));
        assertEquals(2, r.stoppedAt);
        assertEquals("Hello", r.text(), "mlx_lm.server drops the held space with the stop token's response");
        // A stop string that is a token sequence is also caught before the text could show it.
        SinkRun r2 = SinkRun.run(
                withTokens, new int[0], List.of("User:"), v.piece("Hi"), v.piece("User"), v.piece(":"), v.piece(" x"));
        assertEquals(2, r2.stoppedAt);
        assertEquals("Hi", r2.text());
        // A non-canonical spelling is still caught in the text (OpenAI semantics).
        SinkRun r3 =
                SinkRun.run(withTokens, new int[0], List.of("User:"), v.piece("Hi"), v.piece("Us"), v.piece("er: x"));
        assertEquals(2, r3.stoppedAt);
        assertEquals("Hi", r3.text());
    }

    @Test
    void reportsWhichStopStringEndedTheText() {
        // Text level: the match that ends first, whichever its place in the list.
        assertEquals("bc", run(List.of("abcd", "bc"), "a", "b", "c", "d").matchedStop);
        assertEquals("world", run(List.of("zzz", "world"), "hello wo", "r", "ld and more").matchedStop);
        // Revealed only by the final flush at the token limit.
        assertEquals("a ", run(List.of("a "), "xa", " ").matchedStop);
        // No match: null, at the token limit and at EOS.
        assertNull(run(List.of("world"), "hello wo", "rm", "s").matchedStop);
        assertNull(
                SinkRun.run(textOnly.open(SinkRun.plan(new int[0], List.of("x"))), "stop", v.pieces("ab")).matchedStop);
        // Token level: the stop string whose canonical sequence completed.
        int nl = v.piece("\n");
        DetokenizingSinks withTokens = DetokenizingSinks.builder(v)
                .encoder(s -> switch (s) {
                    case "\n" -> new int[] {nl};
                    case "User:" -> v.pieces("User", ":");
                    default -> throw new IllegalArgumentException(s);
                })
                .build();
        assertEquals(
                "User:",
                SinkRun.run(
                                withTokens,
                                new int[0],
                                List.of("\n", "User:"),
                                v.piece("Hi"),
                                v.piece("User"),
                                v.piece(":"))
                        .matchedStop);
        assertEquals("\n", SinkRun.run(withTokens, new int[0], List.of("User:", "\n"), v.piece("Hi"), nl).matchedStop);
    }

    @Test
    void tokenLevelStopsCanBeSwitchedOff() {
        int nl = v.piece("\n");
        DetokenizingSinks textLevel = DetokenizingSinks.builder(v)
                .encoder(s -> new int[] {nl})
                .tokenLevelStops(false)
                .build();
        SinkRun r = SinkRun.run(textLevel, new int[0], List.of("\n"), v.piece("Hello"), v.piece(" "), nl);
        assertEquals("Hello ", r.text());
    }

    @Test
    void stopMatchRevealedOnlyByTheFinalFlushStillCutsTheText() {
        // The lone space is released by finalize(); "a " then matches: nothing from the match on.
        SinkRun r = run(List.of("a "), "xa", " ");
        assertFalse(r.stopped());
        assertEquals("x", r.text());
    }

    @Test
    void rulesAreCachedPerStopList() {
        int xs = v.piece("xs");
        int x = v.piece("x");
        TextSink a = textOnly.open(SinkRun.plan(new int[0], List.of("s")));
        TextSink b = textOnly.open(SinkRun.plan(new int[0], List.of("s")));
        CommittedSpan span = new CommittedSpan(0);
        assertTrue(a.onToken(xs, span));
        span.clear();
        assertFalse(b.onToken(x, span), "sessions do not share state");
        assertEquals("x", span.text.toString());
    }
}
