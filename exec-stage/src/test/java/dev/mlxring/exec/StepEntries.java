package dev.mlxring.exec;

import dev.mlxring.exec.generate.ModelExecutor;
import dev.mlxring.pipeline.BatchStep;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.ExecutionRun;
import dev.mlxring.pipeline.StepResult;
import dev.mlxring.pipeline.Usage;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A run's steps as text a test compares to the bit: each token as {@code token:logprob bits}
 * followed by {@code :id=logprob bits} per top logprob (the floats' raw bits), and the end as
 * {@code end:<finish reason>}.
 */
final class StepEntries {
    private StepEntries() {}

    /** A serial run's entries, its end included, and its usage. */
    record Serial(List<String> entries, Usage usage) {}

    /** The entry of a {@link StepResult.Kind#TOKEN} step. */
    static String describe(StepResult r) {
        StringBuilder b = new StringBuilder().append(r.token).append(':').append(Float.floatToRawIntBits(r.logprob));
        for (int i = 0; i < r.topCount; i++) {
            b.append(':').append(r.topIds[i]).append('=').append(Float.floatToRawIntBits(r.topLogprobs[i]));
        }
        return b.toString();
    }

    /**
     * One batch unit's results into each plan's entries ({@code out}, keyed by plan index through
     * {@code planOfRow}); a row that ends also leaves its usage in {@code usages}.
     */
    static void collect(
            BatchStep step,
            Map<Integer, Integer> planOfRow,
            Map<Integer, List<String>> out,
            Map<Integer, Usage> usages) {
        for (int e = 0; e < step.count; e++) {
            int p = planOfRow.get(step.rows[e]);
            StepResult r = step.results[e];
            if (r.kind == StepResult.Kind.TOKEN) {
                out.get(p).add(describe(r));
            } else {
                out.get(p).add("end:" + r.finishReason);
                usages.put(p, step.usages[e]);
            }
        }
    }

    /** Runs {@code plan} through {@code executor}'s serial path until it finishes. */
    static Serial serial(ModelExecutor executor, ExecutionPlan plan) throws Exception {
        List<String> out = new ArrayList<>();
        try (ExecutionRun run = executor.open(plan)) {
            while (true) {
                StepResult r = run.advance();
                if (r.kind == StepResult.Kind.TOKEN) {
                    out.add(describe(r));
                } else if (r.kind == StepResult.Kind.FINISHED) {
                    out.add("end:" + r.finishReason);
                    return new Serial(out, new Usage(run.promptTokens(), run.completionTokens(), run.cachedTokens()));
                }
            }
        }
    }
}
