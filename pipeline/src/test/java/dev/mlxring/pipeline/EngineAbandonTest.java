package dev.mlxring.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.testing.RecordingListener;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import dev.mlxring.pipeline.testing.WordStages;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@link Engine#abandonInFlight}: with the exec thread blocked inside a unit (as in a collective
 * waiting on a lost rank), every session still in flight, running or queued, settles once as
 * FAILED with the reason, health says why, and what exec publishes for them once it comes back is
 * dropped by the sink.
 */
class EngineAbandonTest {
    private static GenerationRequest text(String prompt, int maxTokens) {
        return GenerationRequest.builder()
                .model("m")
                .prompt(new Prompt.Text(prompt))
                .maxTokens(maxTokens)
                .build();
    }

    @Test
    void aBlockedExecFailsEverySessionInFlightOnceAndHealthSaysWhy() throws Exception {
        ScriptedExecutor exec = ScriptedExecutor.counting();
        CountDownLatch stuck = new CountDownLatch(1);
        CountDownLatch reached = new CountDownLatch(1);
        exec.decodeGate = stuck;
        exec.decodeGateReached = reached;
        try (Engine engine = Engine.builder()
                .config(EngineConfig.defaults())
                .preparer(WordStages::prepare)
                .planner(WordStages::plan)
                .executor(exec)
                .sinks(WordStages::textSink)
                .start()) {
            var running = new RecordingListener();
            var queued = new RecordingListener();
            Session a = engine.submit(text("a b", 4), running);
            Session b = engine.submit(text("c d", 4), queued);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            assertTrue(reached.await(10, TimeUnit.SECONDS), "the first session blocks in its decode");
            assertEquals(Lifecycle.RUNNING, a.state(), "the first session runs");

            engine.abandonInFlight("rank 1 stopped answering");
            Outcome oa = running.await(a);
            Outcome ob = queued.await(b);
            for (Outcome o : List.of(oa, ob)) {
                assertEquals(Lifecycle.FAILED, o.state());
                assertEquals("rank 1 stopped answering", o.message());
            }
            EngineHealth h = engine.health();
            assertFalse(h.ready());
            assertTrue(h.reason().contains("blocked: rank 1 stopped answering"), h.reason());

            // Exec comes back and finishes the run it was in: its tokens and terminal are dropped.
            stuck.countDown();
            while (exec.closedRuns.get() < 1 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertEquals(1, exec.closedRuns.get(), "exec finished the blocked run");
            assertEquals(1, exec.openRuns.get(), "and did not start the queued session that had settled");
            assertEquals(1, running.outcomeList().size(), "exactly one outcome, the abandon's");
            assertEquals("", running.text.toString(), "no token after the session settled");
        }
    }

    @Test
    void closeDoesNotWaitForEverOnAnExecThatWasAbandoned() throws Exception {
        ScriptedExecutor exec = ScriptedExecutor.counting();
        CountDownLatch stuck = new CountDownLatch(1);
        CountDownLatch reached = new CountDownLatch(1);
        exec.decodeGate = stuck;
        exec.decodeGateReached = reached;
        Engine engine = Engine.builder()
                .config(EngineConfig.defaults())
                .preparer(WordStages::prepare)
                .planner(WordStages::plan)
                .executor(exec)
                .sinks(WordStages::textSink)
                .start();
        try {
            var running = new RecordingListener();
            Session a = engine.submit(text("a b", 4), running);
            assertTrue(reached.await(10, TimeUnit.SECONDS), "the session blocks in its decode");
            engine.abandonInFlight("rank 1 stopped answering");
            assertEquals(Lifecycle.FAILED, running.await(a).state());
            var closed = new CountDownLatch(1);
            Thread closer = new Thread(() -> {
                engine.close();
                closed.countDown();
            });
            closer.start();
            assertTrue(
                    closed.await(Engine.EXEC_SETTLE_WAIT_NS / 1_000_000_000L + 15, TimeUnit.SECONDS),
                    "close returned though exec is still blocked");
        } finally {
            stuck.countDown(); // let the exec thread go
        }
    }
}
