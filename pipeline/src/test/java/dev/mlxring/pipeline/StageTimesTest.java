package dev.mlxring.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.testing.RecordingListener;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import dev.mlxring.pipeline.testing.WordStages;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The stage times a host measures hand-offs with: a session's {@link Session#stageNs} in pipeline
 * order after its creation, and every token's span stamped when exec published it and when the
 * sink took it, before the listener saw it; a session that failed in prep never reached exec.
 */
class StageTimesTest {
    private Engine engine;

    @BeforeEach
    void start() {
        engine = Engine.builder()
                .config(EngineConfig.defaults())
                .preparer(WordStages::prepare)
                .planner(WordStages::plan)
                .executor(ScriptedExecutor.counting())
                .sinks(WordStages::textSink)
                .start();
    }

    @AfterEach
    void close() {
        engine.close();
    }

    /** Each span's exec and sink stamps, and the time the listener got it. */
    private static final class Stamps extends RecordingListener {
        final List<long[]> spans = new CopyOnWriteArrayList<>();

        @Override
        public void onCommitted(Session session, CommittedSpan span) {
            spans.add(new long[] {span.tokenId, span.committedNs, span.sinkNs, System.nanoTime()});
            super.onCommitted(session, span);
        }
    }

    @Test
    void aSessionsStagesAreStampedInPipelineOrderAndEachTokensHandOffs() throws Exception {
        Stamps listener = new Stamps();
        Session s = engine.submit(
                GenerationRequest.builder()
                        .model("m")
                        .prompt(new Prompt.Text("a bb c"))
                        .maxTokens(4)
                        .build(),
                listener);
        assertEquals(Lifecycle.COMPLETED, s.result().get(10, TimeUnit.SECONDS).state());
        assertTrue(listener.done.await(10, TimeUnit.SECONDS));
        long previous = s.createdNs();
        for (Session.Stage stage : Session.Stage.values()) {
            long at = s.stageNs(stage);
            assertTrue(at >= previous && at != 0, stage + " at " + at + ", the stage before at " + previous);
            previous = at;
        }
        List<long[]> tokens = listener.spans.stream().filter(x -> x[0] >= 0).toList();
        assertEquals(4, tokens.size());
        assertEquals(
                s.stageNs(Session.Stage.SINK), tokens.getFirst()[2], "the first token's sink time is the session's");
        for (long[] t : tokens) {
            assertTrue(t[1] >= s.stageNs(Session.Stage.FIRST_TOKEN), "published after the first token");
            assertTrue(t[1] <= t[2] && t[2] <= t[3], "exec → sink → listener: " + t[1] + ", " + t[2] + ", " + t[3]);
        }
        for (long[] last : listener.spans.stream().filter(x -> x[0] < 0).toList()) {
            assertEquals(0, last[1], "the final span carries no token, so no token times");
            assertEquals(0, last[2]);
        }
    }

    @Test
    void aSessionThatFailedInPrepNeverReachedExec() throws Exception {
        RecordingListener listener = new RecordingListener();
        Session s = engine.submit(
                GenerationRequest.builder()
                        .model("m")
                        .prompt(new Prompt.Text("FAIL"))
                        .maxTokens(4)
                        .build(),
                listener);
        assertEquals(Lifecycle.FAILED, s.result().get(10, TimeUnit.SECONDS).state());
        assertTrue(s.stageNs(Session.Stage.PREP) >= s.createdNs());
        for (Session.Stage never : List.of(Session.Stage.EXEC, Session.Stage.FIRST_TOKEN, Session.Stage.SINK)) {
            assertEquals(0, s.stageNs(never), never.toString());
        }
    }
}
