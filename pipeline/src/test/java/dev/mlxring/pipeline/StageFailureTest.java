package dev.mlxring.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.testing.RecordingListener;
import dev.mlxring.pipeline.testing.ScriptedExecutor;
import dev.mlxring.pipeline.testing.WordStages;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * No request can wedge a stage: a request whose processing throws inside any stage — a runtime
 * exception, or an {@link Error} that bypasses the stages' own catches and reaches their
 * Disruptor exception handlers — ends in exactly one FAILED outcome, and the engine keeps
 * serving the next request with every stage thread alive.
 */
class StageFailureTest {
    /** Where the poisoned request throws; the prompt word "BOOM-<stage>" triggers it. */
    enum Where {
        PREP,
        PLAN,
        EXEC_OPEN,
        EXEC_STEP,
        SINK_OPEN,
        SINK_TOKEN,
        SINK_FINISH
    }

    /** What it throws. */
    enum What {
        RUNTIME(() -> new IllegalArgumentException("unpaired surrogate U+D800")),
        ERROR(() -> new AssertionError("invariant broken"));

        final Supplier<Throwable> make;

        What(Supplier<Throwable> make) {
            this.make = make;
        }
    }

    private static volatile Where where;
    private static volatile What what;
    private ScriptedExecutor exec;
    private Engine engine;

    private static boolean poisoned(String text, Where stage) {
        return where == stage && text.contains("BOOM");
    }

    private static void boom() {
        Throwable t = what.make.get();
        if (t instanceof RuntimeException r) {
            throw r;
        }
        throw (Error) t;
    }

    private static String text(ExecutionPlan plan) {
        return plan.stopStrings().isEmpty() ? "" : plan.stopStrings().get(0);
    }

    @BeforeEach
    void start() {
        exec = ScriptedExecutor.counting();
        Executor failing = new Executor() {
            @Override
            public ExecutionRun open(ExecutionPlan plan) throws RequestException {
                if (poisoned(text(plan), Where.EXEC_OPEN)) {
                    boom();
                }
                ExecutionRun run = exec.open(plan);
                if (!poisoned(text(plan), Where.EXEC_STEP)) {
                    return run;
                }
                return new ExecutionRun() {
                    int steps;

                    @Override
                    public StepResult advance() {
                        if (++steps == 3) {
                            boom();
                        }
                        return run.advance();
                    }

                    @Override
                    public int promptTokens() {
                        return run.promptTokens();
                    }

                    @Override
                    public int completionTokens() {
                        return run.completionTokens();
                    }

                    @Override
                    public void close() {
                        run.close();
                    }
                };
            }

            @Override
            public void close() {
                exec.close();
            }
        };
        engine = Engine.builder()
                .preparer(r -> {
                    if (poisoned(((Prompt.Text) r.prompt()).text(), Where.PREP)) {
                        boom();
                    }
                    return WordStages.prepare(r);
                })
                .planner((r, p) -> {
                    if (poisoned(((Prompt.Text) r.prompt()).text(), Where.PLAN)) {
                        boom();
                    }
                    // The poisoned prompt travels to exec and sink as the plan's first stop string.
                    String t = ((Prompt.Text) r.prompt()).text();
                    return ExecutionPlan.builder()
                            .requestId(r.id())
                            .prompt(p)
                            .sampling(SamplingParams.GREEDY)
                            .maxTokens(r.maxTokens())
                            .stopTokenIds(new int[] {0})
                            .stopStrings(t.contains("BOOM") ? List.of(t) : List.of())
                            .build();
                })
                .executor(failing)
                .sinks(plan -> {
                    if (poisoned(text(plan), Where.SINK_OPEN)) {
                        boom();
                    }
                    TextSink inner = WordStages.textSink(plan);
                    return new TextSink() {
                        int tokens;

                        @Override
                        public boolean onToken(int tokenId, CommittedSpan span) {
                            if (++tokens == 2 && poisoned(text(plan), Where.SINK_TOKEN)) {
                                boom();
                            }
                            return inner.onToken(tokenId, span);
                        }

                        @Override
                        public String finish(String finishReason, CommittedSpan span) {
                            if (poisoned(text(plan), Where.SINK_FINISH)) {
                                boom();
                            }
                            return inner.finish(finishReason, span);
                        }
                    };
                })
                .start();
    }

    @AfterEach
    void stop() {
        engine.close();
        where = null;
        what = null;
    }

    private static GenerationRequest request(String prompt, int maxTokens) {
        return GenerationRequest.builder()
                .model("m")
                .prompt(new Prompt.Text(prompt))
                .maxTokens(maxTokens)
                .build();
    }

    private Outcome run(String prompt, int maxTokens) throws Exception {
        var r = new RecordingListener();
        Session s = engine.submit(request(prompt, maxTokens), r);
        Outcome o = s.result().get(10, TimeUnit.SECONDS);
        assertTrue(r.done.await(10, TimeUnit.SECONDS), "the listener hears the end");
        assertEquals(List.of(o), r.outcomeList(), "exactly one onComplete");
        return o;
    }

    @ParameterizedTest(name = "{0} throws {1}")
    @EnumSource(Where.class)
    void aRuntimeExceptionFailsOnlyThatRequest(Where stage) throws Exception {
        poisonAndCheck(stage, What.RUNTIME);
    }

    @ParameterizedTest(name = "{0} throws {1}")
    @EnumSource(Where.class)
    void anErrorFailsOnlyThatRequest(Where stage) throws Exception {
        poisonAndCheck(stage, What.ERROR);
    }

    private void poisonAndCheck(Where stage, What kind) throws Exception {
        where = stage;
        what = kind;
        for (int round = 0; round < 2; round++) {
            Outcome bad = run("BOOM here", 5);
            assertEquals(Lifecycle.FAILED, bad.state(), "poisoned request in " + stage + ": " + bad);
            assertEquals(Outcome.ErrorType.INTERNAL, bad.errorType());
            assertTrue(
                    bad.message().contains(kind == What.RUNTIME ? "unpaired surrogate" : "invariant broken"),
                    bad.message());
            Outcome good = run("a b c", 4);
            assertEquals(Lifecycle.COMPLETED, good.state(), "the engine keeps serving after " + stage);
            assertEquals("length", good.finishReason());
        }
        assertTrue(engine.health().ready(), engine.health().reason());
        assertEquals(0, engine.admittedCount(), "every admission slot was given back");
        assertEquals(exec.openRuns.get(), exec.closedRuns.get(), "every opened run was closed");
    }
}
