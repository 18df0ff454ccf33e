package dev.mlxring.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.TextSink;
import dev.mlxring.pipeline.TextSinkFailure;
import dev.mlxring.pipeline.TokenConstraint;
import dev.mlxring.pipeline.ToolCall;
import dev.mlxring.sink.tools.ToolCallParser;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The tool state of mlx_lm.server's text state machine: text between the parser's start and end
 * markers leaves the content and is parsed into {@code CommittedSpan.toolCalls} when the output
 * returns to normal, or at the end for a call still open; a text that does not parse is dropped
 * (on a row whose calls are constrained it fails the request instead); a finish reason "stop" becomes "tool_calls" once a call was made.
 */
class ToolCallTest {
    private static final ObjectMapper JSON =
            new ObjectMapper().enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    /** A test-only json_tools-like parser ({@code json.loads(text.strip())}); records the tools it was given. */
    static final class JsonParser implements ToolCallParser {
        final String start;
        final String end;
        final List<List<Map<String, Object>>> toolsSeen = new ArrayList<>();

        JsonParser(String start, String end) {
            this.start = start;
            this.end = end;
        }

        @Override
        public String type() {
            return "test_json";
        }

        @Override
        public String callStart() {
            return start;
        }

        @Override
        public String callEnd() {
            return end;
        }

        @Override
        @SuppressWarnings("unchecked")
        public List<ToolCall> parse(String text, List<Map<String, Object>> tools) {
            toolsSeen.add(tools);
            Object v;
            try {
                v = JSON.readValue(text.strip(), Object.class);
            } catch (JsonProcessingException e) {
                throw new IllegalArgumentException(e.getOriginalMessage());
            }
            List<ToolCall> out = new ArrayList<>();
            for (Object o : v instanceof List<?> l ? l : List.of(v)) {
                Map<String, Object> m = (Map<String, Object>) o;
                out.add(new ToolCall((String) m.get("name"), m.get("arguments"), (String) m.get("id")));
            }
            return out;
        }
    }

    private final FakeVocab v = new FakeVocab();
    private final int open = v.special("<tool_call>");
    private final int close = v.special("</tool_call>");
    private final JsonParser json = new JsonParser("<tool_call>", "</tool_call>");

    /** Built per run, after the test made its tokens (the detokenizer sizes itself to the vocabulary). */
    private DetokenizingSinks sinks() {
        return DetokenizingSinks.builder(v).toolParser(json).build();
    }

    private static final String CALL = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"n\": 2}}";
    private static final ToolCall PARSED = new ToolCall("get_weather", Map.of("city", "Paris", "n", 2), null);

    private SinkRun run(String end, List<String> stops, int... ids) {
        return SinkRun.run(sinks().open(SinkRun.plan(new int[0], stops)), end, ids);
    }

    @Test
    void callBetweenMarkersBecomesAToolCall() {
        SinkRun r = run("stop", List.of(), v.piece("Let me check."), open, v.piece(CALL), close, v.piece(" Done."));
        assertEquals(List.of("Let me check.", "", "", "", " Done."), r.texts);
        assertEquals(
                List.of(List.of(), List.of(), List.of(), List.of(PARSED), List.of()),
                r.toolCalls,
                "the call is parsed by the token that closes it");
        assertEquals("", r.reasoning());
        assertEquals("tool_calls", r.finishReason, "EOS after a tool call: finish_reason tool_calls");
        SinkRun l = run("length", List.of(), v.piece("Let me check."), open, v.piece(CALL), close, v.piece(" Done."));
        assertEquals(List.of(PARSED), l.allToolCalls());
        assertEquals("length", l.finishReason, "the token limit stays length");
        assertEquals("Let me check. Done.", l.text());
    }

    @Test
    void noToolCallLeavesStopAlone() {
        SinkRun r = run("stop", List.of(), v.piece("plain <tool"));
        assertEquals("stop", r.finishReason);
        assertEquals("plain ", r.text(), "a marker prefix held back at EOS is discarded");
        assertEquals(
                "plain <tool answer",
                run("length", List.of(), v.pieces("plain <tool", " answer")).text());
    }

    @Test
    void markersSplitAcrossTokens() {
        SinkRun r = run(
                "stop",
                List.of(),
                v.pieces(
                        "ok<tool",
                        "_call>{\"name\": \"get_weather\", ",
                        "\"arguments\": {\"city\": \"Paris\", \"n\": 2}}</tool_",
                        "call>after",
                        "<tool_ca",
                        "ll>[]</tool_call>"));
        assertEquals(List.of("ok", "", "", "after", "", ""), r.texts);
        assertEquals(List.of(PARSED), r.toolCalls.get(3));
        assertEquals(List.of(PARSED), r.allToolCalls(), "an empty list parses to no calls");
        assertEquals("tool_calls", r.finishReason);
    }

    @Test
    void severalCallsAndSeveralPerText() {
        String two = "[" + CALL + ", {\"name\": \"g\", \"arguments\": {}, \"id\": \"call_7\"}]";
        SinkRun r = run("stop", List.of(), open, v.piece(CALL), close, v.piece("\n"), open, v.piece(two), close);
        ToolCall g = new ToolCall("g", Map.of(), "call_7");
        assertEquals(List.of(PARSED, PARSED, g), r.allToolCalls());
        assertEquals(List.of(PARSED, g), r.toolCalls.get(6));
        assertEquals("\n", r.text());
    }

    @Test
    void parseFailureDropsThatCallOnly() {
        SinkRun r = run("stop", List.of(), open, v.piece("{not json"), close, open, v.piece(CALL), close);
        assertEquals(List.of(PARSED), r.allToolCalls());
        assertEquals("tool_calls", r.finishReason);
        // An empty call is attempted too (and fails); mlx_lm.server still counts it as made.
        SinkRun empty = run("stop", List.of(), v.piece("a"), open, close, v.piece("b"));
        assertEquals(List.of(), empty.allToolCalls());
        assertEquals("ab", empty.text());
        assertEquals("tool_calls", empty.finishReason);
        assertEquals(3, json.toolsSeen.size());
    }

    /** A plan whose row is masked (as plan makes one for a forced tool choice); the mask is never driven here. */
    private static ExecutionPlan constrainedPlan(List<Map<String, Object>> tools) {
        TokenConstraint mask = new TokenConstraint() {
            @Override
            public boolean allowedTokens(int[] words) {
                throw new AssertionError("the sink never drives the mask");
            }

            @Override
            public void consume(int token) {
                throw new AssertionError("the sink never drives the mask");
            }

            @Override
            public String error() {
                return null;
            }

            @Override
            public void close() {}
        };
        return ExecutionPlan.builder()
                .requestId("test")
                .prompt(new PreparedPrompt(new int[0], 0, true))
                .sampling(SamplingParams.GREEDY)
                .maxTokens(1000)
                .tools(tools)
                .constraint(mask)
                .build();
    }

    @Test
    void aConstrainedRowsCallThatDoesNotParseFailsTheRequest() {
        List<Map<String, Object>> tools =
                List.of(Map.of("type", "function", "function", Map.of("name", "get_weather")));
        int bad = v.piece("{not json");
        int call = v.piece(CALL);
        TextSinkFailure e = assertThrows(
                TextSinkFailure.class,
                () -> SinkRun.run(sinks().open(constrainedPlan(tools)), "stop", open, bad, close));
        assertEquals(ErrorType.INTERNAL, e.type());
        assertTrue(
                e.getMessage()
                        .startsWith(
                                "the tool call the tool choice held to its grammar does not parse as " + "test_json"),
                e.getMessage());
        TextSinkFailure cut = assertThrows(
                TextSinkFailure.class,
                () -> SinkRun.run(
                        sinks().open(constrainedPlan(tools)),
                        "length",
                        open,
                        v.piece("{\"name\": \"get_weather\", \"argu")));
        assertEquals(ErrorType.INVALID_REQUEST, cut.type());
        assertTrue(cut.getMessage().startsWith("max_tokens must leave room for the whole tool call"), cut.getMessage());
        SinkRun ok = SinkRun.run(sinks().open(constrainedPlan(tools)), "stop", open, call, close);
        assertEquals(List.of(PARSED), ok.allToolCalls());
        assertEquals("tool_calls", ok.finishReason);
        SinkRun free = SinkRun.run(
                sinks().open(SinkRun.plan(new PreparedPrompt(new int[0], 0, true), List.of(), tools)),
                "stop",
                open,
                bad,
                close);
        assertEquals(List.of(), free.allToolCalls(), "an unconstrained row drops the call, as mlx_lm.server does");
    }

    @Test
    void theRequestsToolsReachTheParser() {
        List<Map<String, Object>> tools =
                List.of(Map.of("type", "function", "function", Map.of("name", "get_weather")));
        int call = v.piece(CALL);
        TextSink sink = sinks().open(SinkRun.plan(new PreparedPrompt(new int[0], 0, true), List.of(), tools));
        SinkRun.run(sink, "stop", open, call, close);
        assertEquals(List.of(tools), json.toolsSeen);
    }

    @Test
    void eosWithACallStillOpen() {
        // mlx_lm.server parses the open call after its loop; EOS discards the held-back "</tool".
        SinkRun r = run("stop", List.of(), open, v.piece(CALL), v.piece("</tool"));
        assertEquals(List.of(PARSED), r.finishToolCalls);
        assertEquals("tool_calls", r.finishReason);
        // At the token limit the held-back text is flushed into the call, which then fails to parse.
        SinkRun l = run("length", List.of(), open, v.piece(CALL), v.piece("</tool"));
        assertEquals(List.of(), l.allToolCalls());
        assertEquals("length", l.finishReason);
        assertEquals("", l.text());
    }

    @Test
    void callCutOffByTheTokenLimit() {
        SinkRun r = run("length", List.of(), v.piece("x"), open, v.piece("{\"name\": \"get_weather\", \"argu"));
        assertEquals(List.of(), r.allToolCalls());
        assertEquals("x", r.text());
        assertEquals("length", r.finishReason);
        // Cut off right after the start marker: no tool text, no call made.
        SinkRun e = run("stop", List.of(), v.piece("x"), open);
        assertEquals("stop", e.finishReason);
    }

    @Test
    void stopStringsActInsideToolText() {
        // The stop string ends the text inside the call; what came before it is parsed at the end.
        SinkRun r = run("length", List.of("STOP"), v.piece("a"), open, v.piece(CALL), v.piece("STOP"), v.piece("more"));
        assertEquals(3, r.stoppedAt);
        assertEquals(List.of(PARSED), r.finishToolCalls);
        assertEquals("tool_calls", r.finishReason, "a stop after a tool call reports tool_calls");
        assertEquals("a", r.text());
        // Cut inside the JSON: the call is dropped, but one was made.
        SinkRun cut = run("length", List.of("Paris"), open, v.piece(CALL), close);
        assertEquals(1, cut.stoppedAt);
        assertEquals(List.of(), cut.allToolCalls());
        assertEquals("tool_calls", cut.finishReason);
        // A stop string equal to the end marker wins over it (the later rule).
        SinkRun same = run("length", List.of("</tool_call>"), open, v.piece(CALL), close, v.piece("x"));
        assertEquals(2, same.stoppedAt);
        assertEquals(List.of(PARSED), same.finishToolCalls);
        assertEquals("tool_calls", same.finishReason);
        // A stop after a completed call, in normal text.
        SinkRun after = run("length", List.of("END"), open, v.piece(CALL), close, v.piece("ok END"));
        assertEquals(List.of(PARSED), after.toolCalls.get(2));
        assertEquals("tool_calls", after.finishReason);
        assertEquals("ok ", after.text());
    }

    @Test
    void formatWithoutEndMarkerRunsToTheEnd() {
        // Mistral style: tool_call_end is "", the call is everything after the start marker.
        JsonParser mistral = new JsonParser("[TOOL_CALLS]", "");
        int start = v.special("[TOOL_CALLS]");
        int[] ids = v.pieces(
                "Sure.",
                "{\"name\": \"get_weather\", ",
                "\"arguments\": {\"city\": \"Paris\", \"n\": 2}}",
                CALL + "\n",
                "\nnext");
        DetokenizingSinks m = DetokenizingSinks.builder(v).toolParser(mistral).build();
        SinkRun r = SinkRun.run(m.open(SinkRun.plan(new int[0], List.of())), "stop", ids[0], start, ids[1], ids[2]);
        assertEquals("Sure.", r.text());
        assertEquals(List.of(PARSED), r.finishToolCalls);
        assertEquals("tool_calls", r.finishReason);
        // With a stop string, the tool state holds back its prefixes like any other state.
        SinkRun s = SinkRun.run(m.open(SinkRun.plan(new int[0], List.of("\n\n"))), "stop", start, ids[3], ids[4]);
        assertEquals(2, s.stoppedAt);
        assertEquals(List.of(PARSED), s.finishToolCalls);
        assertEquals("tool_calls", s.finishReason);
    }

    @Test
    void thinkingThenTool() {
        int think = v.special("<think>");
        int unthink = v.special("</think>");
        int[] ids = v.pieces(
                "I should call.",
                CALL,
                "Result soon.",
                "hmm",
                "Calling.",
                "{\"name\": \"f\", \"arguments\": \"</think>\"}");
        DetokenizingSinks t = DetokenizingSinks.builder(v)
                .thinkMarkers(ThinkMarkers.infer(v, null).orElseThrow())
                .toolParser(json)
                .build();
        // reasoning -> tool on the start marker (mlx-lm adds that edge when thinking), tool -> normal.
        SinkRun r = SinkRun.run(
                t.open(SinkRun.plan(new int[0], List.of())), "stop", think, ids[0], open, ids[1], close, ids[2]);
        assertEquals("I should call.", r.reasoning());
        assertEquals("Result soon.", r.text());
        assertEquals(List.of(PARSED), r.toolCalls.get(4));
        assertEquals("tool_calls", r.finishReason);
        // normal -> reasoning -> normal -> tool, with the think edge first in normal.
        SinkRun r2 = SinkRun.run(
                t.open(SinkRun.plan(new int[0], List.of())),
                "length",
                think,
                ids[3],
                unthink,
                ids[4],
                open,
                ids[1],
                close);
        assertEquals("hmm", r2.reasoning());
        assertEquals("Calling.", r2.text());
        assertEquals(List.of(PARSED), r2.allToolCalls());
        // The end-think marker inside tool text is tool text.
        SinkRun r3 = SinkRun.run(t.open(SinkRun.plan(new int[0], List.of())), "stop", open, ids[5], close);
        assertEquals(List.of(new ToolCall("f", "</think>", null)), r3.allToolCalls());
        assertEquals("", r3.reasoning() + r3.text());
    }

    @Test
    void tokenLevelStopInsideACall() {
        // A stop string's canonical token sequence: the held-back text is discarded, the tool
        // text so far is parsed after the loop (mlx_lm.server's discard then post-loop parse).
        int stopTok = v.piece("<<END>>");
        int[] ids = v.pieces(CALL, "</tool");
        DetokenizingSinks enc = DetokenizingSinks.builder(v)
                .toolParser(json)
                .encoder(s -> s.equals("<<END>>") ? new int[] {stopTok} : new int[0])
                .build();
        SinkRun r = SinkRun.run(
                enc.open(SinkRun.plan(new int[0], List.of("<<END>>"))), "length", open, ids[0], ids[1], stopTok);
        assertEquals(3, r.stoppedAt);
        assertEquals(List.of(PARSED), r.finishToolCalls);
        assertEquals("tool_calls", r.finishReason);
    }

    @Test
    void withoutAParserMarkupStaysInTheText() {
        int call = v.piece(CALL);
        DetokenizingSinks plain = DetokenizingSinks.builder(v).build();
        SinkRun r = SinkRun.run(plain.open(SinkRun.plan(new int[0], List.of())), "stop", open, call, close);
        assertEquals("<tool_call>" + CALL + "</tool_call>", r.text());
        assertEquals("stop", r.finishReason);
        assertTrue(r.allToolCalls().isEmpty());
        assertSame(null, plain.toolParser());
        assertSame(json, sinks().toolParser());
    }
}
