package dev.mlxring.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Hand-off latencies through HdrHistogram: percentiles of known samples within its 0.1% resolution, rounds merged, µs out. */
class StageLatenciesTest {
    @SuppressWarnings("unchecked")
    private static Map<String, Object> of(StageLatencies s, String handOff) {
        return (Map<String, Object>) s.toMap().get(handOff);
    }

    @Test
    void percentilesOfKnownSamplesInMicroseconds() {
        StageLatencies s = new StageLatencies();
        for (int us = 1; us <= 1000; us++) {
            s.record("prep_to_plan", us * 1000L); // 1..1000 µs
        }
        s.record("submit_to_prep", -5); // clocks read on two threads: a negative reading counts as 0
        Map<String, Object> m = of(s, "prep_to_plan");
        assertEquals(1000L, m.get("count"));
        assertEquals(500.5, (double) m.get("mean_us"), 500.5 * 1e-3);
        assertEquals(500.0, (double) m.get("p50_us"), 500 * 1e-3);
        assertEquals(900.0, (double) m.get("p90_us"), 900 * 1e-3);
        assertEquals(990.0, (double) m.get("p99_us"), 990 * 1e-3);
        assertEquals(999.0, (double) m.get("p99.9_us"), 999 * 1e-3);
        assertEquals(1000.0, (double) m.get("max_us"), 1000 * 1e-3);
        assertEquals(0.0, (double) of(s, "submit_to_prep").get("max_us"));
        assertEquals(
                List.of("prep_to_plan", "submit_to_prep"), List.copyOf(s.toMap().keySet()), "first-recorded order");
    }

    @Test
    void namedHandOffsComeInTheirOrderAndEmptyOnesAreLeftOut() {
        StageLatencies s = new StageLatencies("submit_to_prep", "prep_to_plan", "plan_to_exec");
        s.record("token_exec_to_sink", 1_000);
        s.record("plan_to_exec", 3_000);
        s.record("submit_to_prep", 2_000);
        assertEquals(
                List.of("submit_to_prep", "plan_to_exec", "token_exec_to_sink"),
                List.copyOf(s.toMap().keySet()));
        StageLatencies pooled = new StageLatencies();
        pooled.add(s);
        assertEquals(List.copyOf(s.toMap().keySet()), List.copyOf(pooled.toMap().keySet()), "pooling keeps the order");
    }

    @Test
    void roundsMergeIntoOneHistogramPerHandOff() {
        StageLatencies a = new StageLatencies();
        StageLatencies b = new StageLatencies();
        for (int i = 0; i < 99; i++) {
            a.record("token_exec_to_sink", 10_000);
        }
        b.record("token_exec_to_sink", 5_000_000);
        b.record("plan_to_exec", 2_000);
        StageLatencies pooled = new StageLatencies();
        pooled.add(a);
        pooled.add(b);
        assertEquals(100, pooled.count("token_exec_to_sink"));
        assertEquals(1, pooled.count("plan_to_exec"));
        assertEquals(99, a.count("token_exec_to_sink"), "the rounds themselves are left as they were");
        Map<String, Object> m = of(pooled, "token_exec_to_sink");
        assertEquals(10.0, (double) m.get("p50_us"), 10 * 1e-3);
        assertEquals(5000.0, (double) m.get("max_us"), 5000 * 1e-3);
    }
}
