package dev.mlxring.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.Prompt;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.Session;
import dev.mlxring.pipeline.testing.RecordingListener;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import dev.mlxring.tokenizer.HfTokenizer;
import java.util.List;
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

    record Result(String text, Outcome outcome) {}

    static Result generate(int[] script, List<String> stops) throws Exception {
        return generate(script, stops, "length");
    }

    /**
     * Runs {@code script} through the engine; the run ends with {@code finishReason}: "length" (its
     * max_tokens is the script's length) or "stop" (EOS after the script, well within max_tokens).
     */
    static Result generate(int[] script, List<String> stops, String finishReason) throws Exception {
        int maxTokens = "length".equals(finishReason) ? script.length : 1000;
        try (Engine engine = Engine.builder()
                .preparer(r -> new PreparedPrompt(((Prompt.Tokens) r.prompt()).ids(), 0))
                .planner((r, p) -> ExecutionPlan.builder()
                        .requestId(r.id())
                        .prompt(p)
                        .sampling(SamplingParams.GREEDY)
                        .maxTokens(maxTokens)
                        .stopTokenIds(new int[] {2})
                        .stopStrings(r.stop())
                        .build())
                .executor(new ScriptedExecutor(plan -> script))
                .sinks(DetokenizingSinks.forTokenizer(tok, s -> tok.encode(s, false)))
                .start()) {
            RecordingListener listener = new RecordingListener();
            Session s = engine.submit(
                    GenerationRequest.builder()
                            .model("m")
                            .prompt(new Prompt.Tokens(new int[] {1}))
                            .stop(stops)
                            .build(),
                    listener);
            Outcome o = listener.await(s);
            return new Result(listener.text.toString(), o);
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
