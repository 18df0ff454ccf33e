package dev.mlxring.exec.shard;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.ExecutionRun;
import dev.mlxring.pipeline.Executor;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.PreparedPrompt;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.testing.CountingConstraint;
import org.junit.jupiter.api.Test;

/**
 * A tensor-parallel leader refuses a constrained plan before any rank runs it (the followers
 * would sample unmasked), and closes the constraint it was handed.
 */
class ShardedConstraintRefusalTest {
    @Test
    void aConstrainedPlanIsRefusedAndItsConstraintClosed() {
        CountingConstraint constraint = new CountingConstraint(words -> false, token -> {});
        Executor local = new Executor() {
            @Override
            public ExecutionRun open(ExecutionPlan plan) {
                throw new AssertionError("the local executor must not run a refused plan");
            }

            @Override
            public void close() {}
        };
        // No channel: a refused plan never reaches the followers.
        ShardedExecutor sharded = new ShardedExecutor(local, null);
        int[] prompt = {1, 2, 3};
        ExecutionPlan plan = ExecutionPlan.builder()
                .requestId("r")
                .prompt(new PreparedPrompt(prompt, prompt.length))
                .sampling(SamplingParams.GREEDY)
                .maxTokens(4)
                .constraint(constraint)
                .build();
        RequestException e = assertThrows(RequestException.class, () -> sharded.open(plan));
        assertEquals(ErrorType.UNSUPPORTED, e.type());
        assertTrue(e.getMessage().contains("tensor-parallel"), e.getMessage());
        assertEquals(1, constraint.closes());
    }
}
