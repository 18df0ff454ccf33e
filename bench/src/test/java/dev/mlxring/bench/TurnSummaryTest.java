package dev.mlxring.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** TTFT by turn from hand-made timelines: which request is which turn, and the statistics over each group. */
class TurnSummaryTest {
    private static final long MS = 1_000_000;

    private static RequestRecord ok(int index, long ttftMs, int promptTokens) {
        return new RequestRecord(
                index,
                200,
                0,
                new long[] {ttftMs * MS, ttftMs * MS + MS},
                ttftMs * MS + 2 * MS,
                promptTokens,
                2,
                null,
                null);
    }

    @Test
    void turnOneAndTheLaterTurnsAreSummarisedApart() {
        // Two conversations of three turns; the second conversation's third turn failed.
        List<BenchPrompt> prompts = List.of(
                new BenchPrompt(null, "c0 t1", 4, 10, 1, List.of()),
                new BenchPrompt(null, "c0 t2", 4, 10, 2, List.of()),
                new BenchPrompt(null, "c0 t3", 4, 10, 3, List.of()),
                new BenchPrompt(null, "c1 t1", 4, 10, 1, List.of()),
                new BenchPrompt(null, "c1 t2", 4, 10, 2, List.of()),
                new BenchPrompt(null, "c1 t3", 4, 10, 3, List.of()));
        List<RequestRecord> records = List.of(
                ok(0, 100, 50),
                ok(1, 20, 70),
                ok(2, 30, 90),
                ok(3, 300, 60),
                ok(4, 40, 80),
                new RequestRecord(5, 429, 0, new long[0], MS, -1, -1, ErrorClass.HTTP_429, "busy"));
        Map<String, Object> m = TurnSummary.of(records, prompts);
        @SuppressWarnings("unchecked")
        Map<String, Object> first = (Map<String, Object>) m.get("ttft_first_turn");
        assertEquals(2, first.get("completed"));
        assertEquals(200.0, (double) first.get("mean_ttft_ms"), 1e-9);
        assertEquals(200.0, (double) first.get("median_ttft_ms"), 1e-9);
        assertEquals(100 + 0.9 * 200, (double) first.get("p90_ttft_ms"), 1e-9);
        assertEquals(55.0, (double) first.get("mean_prompt_tokens"), 1e-9);
        @SuppressWarnings("unchecked")
        Map<String, Object> later = (Map<String, Object>) m.get("ttft_later_turns");
        assertEquals(3, later.get("completed"));
        assertEquals(30.0, (double) later.get("median_ttft_ms"), 1e-9);
        assertEquals(30.0, (double) later.get("mean_ttft_ms"), 1e-9);
        assertEquals(80.0, (double) later.get("mean_prompt_tokens"), 1e-9);
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> byTurn = (List<Map<String, Object>>) m.get("ttft_by_turn");
        assertEquals(3, byTurn.size());
        assertEquals(2, byTurn.get(1).get("turn"));
        assertEquals(30.0, (double) byTurn.get(1).get("median_ttft_ms"), 1e-9);
        assertEquals(1, byTurn.get(2).get("completed"));
        assertEquals(30.0, (double) byTurn.get(2).get("p99_ttft_ms"), 1e-9);
    }
}
