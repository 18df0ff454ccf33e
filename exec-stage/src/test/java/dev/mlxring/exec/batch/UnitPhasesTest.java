package dev.mlxring.exec.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The unit trace's phase clocks: what a lap charges, what drain prints and zeroes. */
class UnitPhasesTest {
    private static Map<String, Double> parse(String line) {
        Map<String, Double> out = new LinkedHashMap<>();
        for (String kv : line.trim().split(" ")) {
            int eq = kv.indexOf('=');
            out.put(kv.substring(0, eq), Double.parseDouble(kv.substring(eq + 1)));
        }
        return out;
    }

    @Test
    void lapsChargeTheTimeSinceTheLastMarkAndDrainZeroes() throws InterruptedException {
        UnitPhases.drain(); // whatever an earlier test left
        UnitPhases.mark();
        Thread.sleep(20);
        UnitPhases.lap(UnitPhases.STEP);
        UnitPhases.lap(UnitPhases.PROMPT);
        Thread.sleep(5);
        UnitPhases.add(UnitPhases.STEP_WAIT, 7_000_000L); // after the sleep: it must not move the mark
        UnitPhases.lap(UnitPhases.PUBLISH);

        Map<String, Double> first = parse(UnitPhases.drain());
        assertEquals(
                java.util.List.of(
                        "snapSubmit", "step", "admit", "join", "prompt", "snapCopy", "publish", "stepWait", "stepRead"),
                first.keySet().stream().limit(9).toList(),
                "the phases, in the trace's order");
        assertTrue(first.get("step") >= 20.0, "the sleep is charged to the step: " + first);
        assertTrue(first.get("prompt") >= 0.0, "a lap charges no negative time: " + first);
        assertEquals(7.0, first.get("stepWait"), 1e-9, "add charges what it is given");
        assertTrue(first.get("publish") >= 5.0, "the sleep before add is charged to the next lap: " + first);

        Map<String, Double> second = parse(UnitPhases.drain());
        for (String phase : first.keySet().stream().limit(9).toList()) {
            assertEquals(0.0, second.get(phase), "drained: " + phase);
        }
    }
}
