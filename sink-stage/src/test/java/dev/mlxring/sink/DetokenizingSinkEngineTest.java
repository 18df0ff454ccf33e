package dev.mlxring.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.mlxring.pipeline.CommittedSpan;
import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.ExecutionRun;
import dev.mlxring.pipeline.Executor;
import dev.mlxring.pipeline.GenerationListener;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.Session;
import dev.mlxring.pipeline.StepResult;
import dev.mlxring.tokenizer.HfTokenizer;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The sink inside the real Engine (SinkHandler on the sink thread) with the default model's
 * tokenizer and a scripted executor: spans arrive in order, a stop string settles the session as
 * "stop" and stops the run, the end at the token limit flushes held-back text, EOS discards it.
 */
class DetokenizingSinkEngineTest {
    static HfTokenizer tok;

    @BeforeAll
    static void load() {
        tok = Oracle.load(Oracle.defaultModel());
    }

    @AfterAll
    static void close() {
        tok.close();
    }

    /** Emits a fixed list of token ids, then finishes with the given reason ("length", or "stop" for EOS). */
    static final class Scripted implements Executor {
        final int[] script;
        final String finishReason;

        Scripted(int[] script, String finishReason) {
            this.script = script;
            this.finishReason = finishReason;
        }

        @Override
        public ExecutionRun open(ExecutionPlan plan) {
            return new ExecutionRun() {
                final StepResult r = new StepResult(0);
                int i;

                @Override
                public StepResult advance() {
                    if (i == script.length) {
                        return r.finished(finishReason);
                    }
                    return r.token(script[i++]);
                }

                @Override
                public int promptTokens() {
                    return plan.prompt().length();
                }

                @Override
                public int completionTokens() {
                    return i;
                }

                @Override
                public void close() {}
            };
        }

        @Override
        public void close() {}
    }

    record Result(String text, Outcome outcome) {}

    static Result generate(int[] script, List<String> stops) throws Exception {
        return generate(script, stops, "length");
    }

    static Result generate(int[] script, List<String> stops, String finishReason) throws Exception {
        Scripted exec = new Scripted(script, finishReason);
        StringBuilder text = new StringBuilder();
        try (Engine engine = Engine.builder()
                .preparer(r -> new PreparedPrompt(((Prompt.Tokens) r.prompt()).ids(), 0))
                .planner((r, p) -> new ExecutionPlan(r.id(), p, SamplingParams.GREEDY, 1000, new int[] {2}, r.stop(), false, 0))
                .executor(exec)
                .sinks(DetokenizingSinks.forTokenizer(tok, s -> tok.encode(s, false)))
                .start()) {
            Session s = engine.submit(new GenerationRequest(null, "m", new Prompt.Tokens(new int[] {1}), null, null,
                    stops, false, 0), new GenerationListener() {
                        @Override
                        public void onCommitted(Session session, CommittedSpan span) {
                            text.append(span.text);
                        }

                        @Override
                        public void onComplete(Session session, Outcome outcome) {}
                    });
            Outcome o = s.result().get(30, TimeUnit.SECONDS);
            return new Result(text.toString(), o);
        }
    }

    @Test
    void normalEndFlushesHeldBackText() throws Exception {
        int sp = tok.tokenId("Ġ").getAsInt();
        int[] hello = tok.encode("Hello, world", false);
        int[] script = java.util.Arrays.copyOf(hello, hello.length + 1);
        script[hello.length] = sp;
        Result r = generate(script, List.of());
        assertEquals("length", r.outcome().finishReason());
        assertEquals("Hello, world ", r.text());
    }

    @Test
    void eosDiscardsHeldBackTextAsMlxLmServer() throws Exception {
        Result r = generate(helloSpace(), List.of(), "stop");
        assertEquals("stop", r.outcome().finishReason());
        assertEquals("Hello, world", r.text());
    }

    @Test
    void stopRevealedByTheFinalFlushSettlesAsStop() throws Exception {
        // "d " completes only when the held lone space is flushed at the end.
        Result r = generate(helloSpace(), List.of("d "), "length");
        assertEquals("stop", r.outcome().finishReason());
        assertEquals("Hello, worl", r.text());
    }

    static int[] helloSpace() {
        int[] hello = tok.encode("Hello, world", false);
        int[] script = java.util.Arrays.copyOf(hello, hello.length + 1);
        script[hello.length] = tok.tokenId("Ġ").getAsInt();
        return script;
    }

    @Test
    void stopStringEndsTheSessionWithStop() throws Exception {
        int[] script = tok.encode("The answer is 4.\n\nUser: next question, which is long enough", false);
        Result r = generate(script, List.of("\n\n"));
        assertEquals("stop", r.outcome().finishReason());
        assertEquals("The answer is 4.", r.text());
    }
}
