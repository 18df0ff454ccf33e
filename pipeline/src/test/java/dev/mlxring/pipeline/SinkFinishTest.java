package dev.mlxring.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.testing.RecordingListener;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import dev.mlxring.pipeline.testing.WordStages;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The {@link TextSink#finish} contract as the sink stage applies it: called once for every
 * completed session (also after a stop-string match, with "stop"), its return value is the
 * outcome's finish reason, and its span reaches the listener when it carries tool calls.
 */
class SinkFinishTest {
    private Engine engine;
    private final List<String> finishedWith = new CopyOnWriteArrayList<>();
    private volatile boolean failFinish;
    /** Thrown by finish (when set) instead of "boom". */
    private volatile RuntimeException finishFailure;
    /** Thrown by onToken at token 2 (when set). */
    private volatile RuntimeException tokenFailure;

    /** Text "<id> "; token 2 completes a tool call; stop string "S<id>" stops at that token. */
    private TextSink sink(ExecutionPlan plan) {
        return new TextSink() {
            @Override
            public boolean onToken(int tokenId, CommittedSpan span) {
                if (tokenId == 2 && tokenFailure != null) {
                    throw tokenFailure;
                }
                if (plan.stopStrings().contains("S" + tokenId)) {
                    return true;
                }
                span.text.append(tokenId).append(' ');
                if (tokenId == 2) {
                    span.toolCalls.add(new ToolCall("f", Map.of("x", 1), null));
                }
                return false;
            }

            @Override
            public String finish(String finishReason, CommittedSpan span) {
                finishedWith.add(finishReason);
                if (finishFailure != null) {
                    throw finishFailure;
                }
                if (failFinish) {
                    throw new IllegalStateException("boom");
                }
                span.toolCalls.add(new ToolCall("late", List.of(), "id1"));
                return "stop".equals(finishReason) ? "tool_calls" : finishReason;
            }
        };
    }

    /** Records text and tool-call names per span. */
    private static final class Calls extends RecordingListener {
        final List<String> names = new CopyOnWriteArrayList<>();

        @Override
        public void onCommitted(Session session, CommittedSpan span) {
            super.onCommitted(session, span);
            span.toolCalls.forEach(c -> names.add(c.name()));
        }
    }

    private Outcome run(int maxTokens, String... stops) throws Exception {
        engine = Engine.builder()
                .config(EngineConfig.defaults())
                .preparer(WordStages::prepare)
                .planner(WordStages::plan)
                .executor(ScriptedExecutor.counting())
                .sinks(this::sink)
                .start();
        Calls r = new Calls();
        Session s = engine.submit(
                GenerationRequest.builder()
                        .model("m")
                        .prompt(new Prompt.Text("a"))
                        .maxTokens(maxTokens)
                        .stop(List.of(stops))
                        .build(),
                r);
        Outcome o = s.result().get(10, TimeUnit.SECONDS);
        assertTrue(r.done.await(10, TimeUnit.SECONDS));
        last = r;
        return o;
    }

    private Calls last;

    @AfterEach
    void close() {
        if (engine != null) {
            engine.close();
        }
    }

    @Test
    void finishDecidesTheReasonAndItsSpanIsDelivered() throws Exception {
        Outcome o = run(3);
        assertEquals("length", o.finishReason());
        assertEquals(List.of("length"), finishedWith);
        assertEquals("1 2 3 ", last.text.toString());
        assertEquals(List.of("f", "late"), last.names, "the finish span carries tool calls only, and is delivered");
    }

    @Test
    void finishRunsAfterAStopStringAndCanReportToolCalls() throws Exception {
        Outcome o = run(50, "S4");
        assertEquals(Lifecycle.COMPLETED, o.state());
        assertEquals("tool_calls", o.finishReason());
        assertEquals(List.of("stop"), finishedWith, "finish is called once, with stop");
        assertEquals("1 2 3 ", last.text.toString());
        assertEquals(List.of("f", "late"), last.names);
    }

    @Test
    void aFailingFinishFailsTheSession() throws Exception {
        failFinish = true;
        Outcome o = run(2);
        assertEquals(Lifecycle.FAILED, o.state());
        assertEquals(Outcome.ErrorType.INTERNAL, o.errorType());
        assertTrue(o.message().contains("boom"), o.message());
        assertEquals(List.of("f"), last.names);
    }

    @Test
    void aTextSinkFailureFailsTheSessionWithItsTypeAndMessage() throws Exception {
        finishFailure = new TextSinkFailure(Outcome.ErrorType.INVALID_REQUEST, "max_tokens must leave room");
        Outcome o = run(2);
        assertEquals(Lifecycle.FAILED, o.state());
        assertEquals(Outcome.ErrorType.INVALID_REQUEST, o.errorType());
        assertEquals("max_tokens must leave room", o.message());
        finishFailure = null;
        engine.close();
        tokenFailure = new TextSinkFailure(Outcome.ErrorType.INVALID_REQUEST, "max_tokens must fit");
        Outcome t = run(5);
        assertEquals(Lifecycle.FAILED, t.state());
        assertEquals(Outcome.ErrorType.INVALID_REQUEST, t.errorType());
        assertEquals("max_tokens must fit", t.message());
    }
}
