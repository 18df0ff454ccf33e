package dev.mlxring.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

/** A plan carries resolved sampling settings: one without them is refused at construction. */
class ExecutionPlanTest {
    private static final PreparedPrompt PROMPT = new PreparedPrompt(new int[] {1, 2}, 0);

    @Test
    void refusesAPlanWithoutSamplingSettings() {
        NullPointerException e = assertThrows(
                NullPointerException.class,
                () -> new ExecutionPlan("r", PROMPT, null, 4, new int[0], List.of(), false, 0));
        assertEquals("sampling", e.getMessage());
    }
}
