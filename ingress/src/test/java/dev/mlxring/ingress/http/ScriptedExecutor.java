package dev.mlxring.ingress.http;

import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.ExecutionRun;
import dev.mlxring.pipeline.Executor;
import dev.mlxring.pipeline.StepResult;
import java.util.function.Function;

/**
 * exec's stage double for the HTTP tests (no model): per plan, emits the ids {@code script} gives
 * for it, each with logprob -0.5 and itself as the one top alternative; finishes with "length" at
 * the plan's max_tokens, else with "stop" (EOS) after the last id. With a step delay, each step
 * sleeps that long first (on the exec thread), so requests stay running while a test acts. With
 * {@link #alternatives}, each token instead has the plan's {@code topLogprobs} alternatives.
 */
final class ScriptedExecutor implements Executor {
    private final Function<ExecutionPlan, int[]> script;
    private final long stepDelayMs;
    private final boolean alternatives;
    /** What every run reports as read from the prefix cache (capped at its prompt). */
    volatile int cachedTokens;

    ScriptedExecutor(Function<ExecutionPlan, int[]> script) {
        this(script, 0);
    }

    ScriptedExecutor(Function<ExecutionPlan, int[]> script, long stepDelayMs) {
        this(script, stepDelayMs, false);
    }

    private ScriptedExecutor(Function<ExecutionPlan, int[]> script, long stepDelayMs, boolean alternatives) {
        this.script = script;
        this.stepDelayMs = stepDelayMs;
        this.alternatives = alternatives;
    }

    /**
     * Ids 1..max_tokens, each token {@code id} with the plan's {@code topLogprobs} alternatives
     * {@code 100 * id + k} of logprob {@code -(topLogprobs - k)}: listed least likely first.
     */
    static ScriptedExecutor alternatives() {
        return new ScriptedExecutor(plan -> java.util.stream.IntStream.rangeClosed(1, plan.maxTokens()).toArray(),
                0, true);
    }

    /** Ids 1..max_tokens: every run ends with "length". */
    static ScriptedExecutor counting() {
        return new ScriptedExecutor(plan -> java.util.stream.IntStream.rangeClosed(1, plan.maxTokens()).toArray());
    }

    @Override
    public ExecutionRun open(ExecutionPlan plan) {
        int[] ids = script.apply(plan);
        return new ExecutionRun() {
            final StepResult r = new StepResult(Math.max(1, plan.topLogprobs()));
            int produced;

            @Override
            public StepResult advance() {
                if (stepDelayMs > 0) {
                    try {
                        Thread.sleep(stepDelayMs);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                if (produced == plan.maxTokens()) {
                    return r.finished("length");
                }
                if (produced == ids.length) {
                    return r.finished("stop");
                }
                int id = ids[produced++];
                r.token(id);
                r.logprob = -0.5f;
                if (alternatives) {
                    r.topCount = plan.topLogprobs();
                    for (int k = 0; k < r.topCount; k++) {
                        r.topIds[k] = 100 * id + k;
                        r.topLogprobs[k] = -(r.topCount - k);
                    }
                    return r;
                }
                r.topCount = 1;
                r.topIds[0] = id;
                r.topLogprobs[0] = -0.5f;
                return r;
            }

            @Override
            public int promptTokens() {
                return plan.prompt().length();
            }

            @Override
            public int completionTokens() {
                return produced;
            }

            @Override
            public int cachedTokens() {
                return Math.min(cachedTokens, plan.prompt().length());
            }

            @Override
            public void close() {}
        };
    }

    @Override
    public void close() {}
}
