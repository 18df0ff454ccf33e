package dev.mlxring.sink;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.TextSink;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Reasoning separation as mlx_lm.server does it: text between the think markers goes to {@code
 * reasoning}, the markers themselves are stripped, a prompt that leaves the block open starts the
 * output in reasoning, and markers are recognised in the text even when split across tokens.
 */
class ReasoningTest {
    private final FakeVocab v = new FakeVocab();
    private final int think = v.special("<think>");
    private final int unthink = v.special("</think>");
    private final ThinkMarkers markers = ThinkMarkers.infer(v, null).orElseThrow();
    private final DetokenizingSinks sinks =
            DetokenizingSinks.builder(v).thinkMarkers(markers).build();

    private SinkRun run(int[] prompt, List<String> stops, int... ids) {
        return SinkRun.run(sinks, prompt, stops, ids);
    }

    @Test
    void inferredFromTheVocabulary() {
        assertEquals("<think>", markers.start());
        assertEquals("</think>", markers.end());
        assertArrayEquals(new int[] {think}, markers.startIds());
        assertArrayEquals(new int[] {unthink}, markers.endIds());
        assertEquals(Optional.empty(), ThinkMarkers.infer(new FakeVocab(), null));
    }

    @Test
    void markerTokensSplitReasoningFromText() {
        SinkRun r = run(new int[0], List.of(), think, v.piece("Let me"), v.piece(" see."), unthink, v.piece("42"));
        assertEquals(List.of("", "Let me", " see.", "", ""), r.reasonings);
        assertEquals(List.of("", "", "", "", "42"), r.texts);
        assertEquals("Let me see.", r.reasoning());
        assertEquals("42", r.text());
    }

    @Test
    void onlyAChatTemplatePromptCanOpenTheBlock() {
        // mlx_lm.server's _tokenize applies the rule to chat requests only; a text completion
        // whose prompt ends in <think> starts in normal text.
        int[] prompt = {v.piece("user"), think};
        int[] ids = {v.piece("hmm"), unthink, v.piece("answer")};
        TextSink sink = sinks.open(SinkRun.plan(new PreparedPrompt(prompt, prompt.length, false), List.of()));
        SinkRun r = SinkRun.run(sink, ids);
        assertEquals("", r.reasoning());
        assertEquals("hmm</think>answer", r.text());
    }

    @Test
    void promptThatOpensTheBlockStartsInReasoning() {
        int[] prompt = {v.piece("user"), v.piece(" asks"), think};
        SinkRun r = run(prompt, List.of(), v.piece("hmm"), unthink, v.piece("answer"));
        assertEquals("hmm", r.reasoning());
        assertEquals("answer", r.text());
        // A prompt whose last block is closed starts in normal text.
        int[] closed = {think, v.piece("x"), unthink, v.piece("q")};
        SinkRun r2 = run(closed, List.of(), v.piece("hmm"), unthink, v.piece("answer"));
        assertEquals("", r2.reasoning());
        assertEquals("hmm</think>answer", r2.text(), "an unmatched end marker in normal text is plain text");
        // Closed, then opened again.
        int[] reopened = {think, v.piece("x"), unthink, v.piece("q"), think};
        assertEquals("hmm", run(reopened, List.of(), v.piece("hmm"), unthink).reasoning());
    }

    @Test
    void reasoningFromPromptCanBeSwitchedOff() {
        DetokenizingSinks off = DetokenizingSinks.builder(v)
                .thinkMarkers(markers)
                .reasoningFromPrompt(false)
                .build();
        SinkRun r = SinkRun.run(off, new int[] {think}, List.of(), v.piece("hmm"), unthink, v.piece("a"));
        assertEquals("hmm</think>a", r.text());
    }

    @Test
    void markersSplitAcrossTokensAreRecognisedInTheText() {
        SinkRun r = run(new int[0], List.of(), v.piece("<th"), v.piece("ink>abc</"), v.piece("think>def"));
        assertEquals("abc", r.reasoning());
        assertEquals("def", r.text());
        assertEquals(List.of("", "", "def"), r.texts);
        assertEquals(List.of("", "abc", ""), r.reasonings);
    }

    @Test
    void aPossibleMarkerIsHeldBackUntilDecided() {
        SinkRun r = run(new int[0], List.of(), v.piece("a <"), v.piece(" b"), v.piece(" <thin"), v.piece("g>"));
        assertEquals(List.of("a ", "< b", " ", "<thing>"), r.texts);
        assertEquals("", r.reasoning());
    }

    @Test
    void severalBlocksAndMarkersInsideOneToken() {
        SinkRun r =
                run(new int[0], List.of(), v.piece("x<think>y</think>z"), think, v.piece("c"), unthink, v.piece("d"));
        assertEquals("xzd", r.text());
        assertEquals("yc", r.reasoning());
        assertEquals("xz", r.texts.get(0));
        assertEquals("y", r.reasonings.get(0));
    }

    @Test
    void unterminatedReasoningIsFlushedIntoReasoning() {
        SinkRun r = run(new int[0], List.of(), think, v.piece("still thinking </thi"));
        assertFalse(r.stopped());
        assertEquals("still thinking ", r.reasonings.get(1));
        assertEquals("</thi", r.finishReasoning);
        assertEquals("", r.text());
    }

    @Test
    void stopStringInsideReasoningEndsGeneration() {
        SinkRun r = run(new int[0], List.of("STOP"), think, v.piece("abc STOP def"), unthink, v.piece("x"));
        assertEquals(1, r.stoppedAt);
        assertEquals("abc ", r.reasoning());
        assertEquals("", r.text());
    }

    @Test
    void withoutMarkersThinkTagsAreText() {
        DetokenizingSinks plain = DetokenizingSinks.builder(v).build();
        assertNull(plain.thinkMarkers());
        SinkRun r = SinkRun.run(plain, new int[] {think}, List.of(), think, v.piece("a"), unthink, v.piece("b"));
        assertEquals("<think>a</think>b", r.text());
        assertEquals("", r.reasoning());
    }

    @Test
    void structuralMarkersAreStrippedFromContent() {
        DetokenizingSinks s = DetokenizingSinks.builder(v)
                .structuralMarkers(List.of("<|open|>response<|sep|>", "<|close|>response<|sep|>"))
                .build();
        SinkRun r = SinkRun.run(
                s,
                new int[0],
                List.of(),
                v.piece("<|open|>resp"),
                v.piece("onse<|sep|>Hi"),
                v.piece("<|close|>response<|sep|>"));
        assertEquals("Hi", r.text());
    }

    @Test
    void multiTokenAndXtmlMarkersAreInferredLikeMlxLm() {
        FakeVocab channel = new FakeVocab();
        channel.special("<|channel>");
        channel.special("<channel|>");
        int thought = channel.piece("thought");
        ThinkMarkers m = ThinkMarkers.infer(channel, s -> switch (s) {
                    case "<|channel>thought" ->
                        new int[] {channel.tokenId("<|channel>").getAsInt(), thought};
                    case "<channel|>" ->
                        new int[] {channel.tokenId("<channel|>").getAsInt()};
                    default -> throw new IllegalArgumentException(s);
                })
                .orElseThrow();
        assertEquals("<|channel>thought", m.start());
        assertEquals("<channel|>", m.end());
        int open = channel.tokenId("<|channel>").getAsInt();
        assertTrue(m.opensInPrompt(new int[] {5, open, thought}));
        assertFalse(m.opensInPrompt(
                new int[] {open, thought, channel.tokenId("<channel|>").getAsInt()}));
        assertFalse(m.opensInPrompt(new int[] {open}), "the whole start sequence is needed");

        FakeVocab xtml = new FakeVocab();
        for (String t : List.of("<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>")) {
            xtml.special(t);
        }
        ThinkMarkers x = ThinkMarkers.infer(xtml, null).orElseThrow();
        assertEquals("<|open|>think<|sep|>", x.start());
        assertEquals("<|close|>think<|sep|>", x.end());
        assertNull(x.startIds(), "no encoder: ids unknown, so no prompt check");
        assertFalse(x.opensInPrompt(new int[] {1, 2}));
        assertEquals(
                List.of("<|open|>response<|sep|>", "<|close|>response<|sep|>", "<|close|>message<|sep|>"),
                ThinkMarkers.inferStructuralMarkers(xtml));
        // Single-token pairs win over the others, in mlx-lm's order.
        FakeVocab both = new FakeVocab();
        both.special("<|think:start|>");
        both.special("<|think:end|>");
        both.special("<longcat_think>");
        both.special("</longcat_think>");
        assertEquals(
                "<longcat_think>", ThinkMarkers.infer(both, null).orElseThrow().start());
    }
}
