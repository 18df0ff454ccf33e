package dev.mlxring.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * {@link BatchStep} holds every entry a step commits, also when a speculating row commits several
 * tokens in one step (more than the two entries per row it starts with room for), in order.
 */
class BatchStepTest {
    @Test
    void aStepHoldsMoreEntriesThanTwoPerRowInOrder() {
        BatchStep step = new BatchStep(2, 0);
        int entries = 11;
        for (int i = 0; i < entries - 1; i++) {
            step.add(i % 2).token(100 + i);
        }
        step.finish(1, "length", Usage.NONE);
        assertEquals(entries, step.count);
        for (int i = 0; i < entries - 1; i++) {
            assertEquals(i % 2, step.rows[i]);
            assertEquals(100 + i, step.results[i].token);
        }
        assertEquals(StepResult.Kind.FINISHED, step.results[entries - 1].kind);
        assertEquals(Usage.NONE, step.usages[entries - 1]);
        step.clear();
        assertEquals(0, step.count);
    }
}
