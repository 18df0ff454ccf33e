package dev.mlxring.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The per-request metrics and their summary, against hand-made event timelines (times in ms from 0). */
class MetricsTest {
    private static final long MS = 1_000_000L;

    /** A successful request sent at {@code sendMs}, text events at {@code eventsMs}, ended at {@code endMs}. */
    static RequestRecord ok(int index, long sendMs, long[] eventsMs, long endMs, int promptTokens, int usageTokens) {
        long[] ns = new long[eventsMs.length];
        for (int i = 0; i < ns.length; i++) {
            ns[i] = eventsMs[i] * MS;
        }
        return new RequestRecord(index, 200, sendMs * MS, ns, endMs * MS, promptTokens, usageTokens, null, null);
    }

    static RequestRecord failed(int index, String errorClass) {
        return new RequestRecord(index, 500, 0, new long[0], 5 * MS, -1, -1, errorClass, "boom");
    }

    @Test
    void ttftItlE2elAndTpotFollowVllmsDefinitions() {
        RequestRecord r = ok(0, 1000, new long[] {1100, 1150, 1250}, 1300, 20, 4);
        assertEquals(100.0, r.ttftMs(), 1e-9);
        assertArrayEquals(new double[] {50.0, 100.0}, r.itlMs(), 1e-9);
        assertEquals(300.0, r.e2elMs(), 1e-9);
        // (E2E − TTFT) / (usage tokens − 1) = 200 / 3: the usage's count, not the 3 events
        assertEquals(4, r.outputTokens());
        assertEquals(200.0 / 3, r.tpotMs(), 1e-9);
        // Without usage the counted events are the output tokens.
        RequestRecord counted = ok(1, 1000, new long[] {1100, 1150, 1250}, 1300, -1, -1);
        assertEquals(3, counted.outputTokens());
        assertEquals(100.0, counted.tpotMs(), 1e-9);
        // One token: no TPOT.
        assertTrue(Double.isNaN(ok(2, 0, new long[] {10}, 10, 5, 1).tpotMs()));
        assertThrows(IllegalArgumentException.class, () -> ok(3, 0, new long[] {20, 10}, 30, 1, 2));
    }

    @Test
    void percentilesInterpolateAsNumpyDoes() {
        Distribution d = Distribution.of(new double[] {4, 1, 3, 2, Double.NaN});
        assertEquals(4, d.count());
        assertEquals(2.5, d.median(), 1e-12);
        assertEquals(3.7, d.percentile(90), 1e-12); // rank 0.9 × 3 = 2.7: 3 + 0.7 × (4 − 3)
        assertEquals(3.97, d.percentile(99), 1e-12);
        assertEquals(3.997, d.percentile(99.9), 1e-12);
        assertEquals(2.5, d.mean(), 1e-12);
        assertEquals(Math.sqrt(1.25), d.std(), 1e-12);
        assertTrue(Double.isNaN(Distribution.of(new double[0]).percentile(50)));
    }

    @Test
    void levelSummaryUsesVllmsFieldsOverCompletedRequests() {
        List<RequestRecord> records = List.of(
                ok(0, 0, new long[] {100, 200, 300}, 400, 10, 3),
                ok(1, 0, new long[] {200, 220}, 500, 30, 2),
                failed(2, ErrorClass.HTTP_5XX),
                failed(3, ErrorClass.HTTP_5XX),
                failed(4, ErrorClass.CONNECT));
        Map<String, Object> m = LevelSummary.of(records, 2_000 * MS, Slo.NONE);
        assertEquals(2.0, m.get("duration"));
        assertEquals(2, m.get("completed"));
        assertEquals(3, m.get("failed"));
        assertEquals(40L, m.get("total_input_tokens"));
        assertEquals(5L, m.get("total_output_tokens"));
        assertEquals(1.0, (double) m.get("request_throughput"), 1e-12);
        assertEquals(2.5, (double) m.get("output_throughput"), 1e-12);
        assertEquals(22.5, (double) m.get("total_token_throughput"), 1e-12);
        assertEquals(150.0, (double) m.get("mean_ttft_ms"), 1e-12);
        assertEquals(150.0, (double) m.get("median_ttft_ms"), 1e-12);
        assertEquals(199.0, (double) m.get("p99_ttft_ms"), 1e-9);
        assertEquals(199.9, (double) m.get("p99.9_ttft_ms"), 1e-9);
        // TPOT: (400 − 100) / 2 = 150 and (500 − 200) / 1 = 300
        assertEquals(225.0, (double) m.get("mean_tpot_ms"), 1e-12);
        // ITL pools the gaps 100, 100, 20
        assertEquals(220.0 / 3, (double) m.get("mean_itl_ms"), 1e-9);
        assertEquals(100.0, (double) m.get("median_itl_ms"), 1e-12);
        assertEquals(450.0, (double) m.get("mean_e2el_ms"), 1e-12);
        assertEquals(499.0, (double) m.get("p99_e2el_ms"), 1e-9);
        assertEquals(Map.of(ErrorClass.HTTP_5XX, 2, ErrorClass.CONNECT, 1), m.get("errors_by_class"));
        assertFalse(m.containsKey("request_goodput"), "no SLO, no goodput");
        for (String metric : List.of("ttft", "tpot", "itl", "e2el")) {
            for (String k : List.of("mean_", "median_", "std_", "p50_", "p90_", "p99_", "p99.9_")) {
                assertTrue(m.containsKey(k + metric + "_ms"), k + metric + "_ms");
            }
        }
    }

    @Test
    void goodputCountsRequestsMeetingEverySlo() {
        List<RequestRecord> records = List.of(
                ok(0, 0, new long[] {100, 110, 120}, 130, 1, 3), // TTFT 100, TPOT 15: good
                ok(1, 0, new long[] {300, 310}, 320, 1, 2), // TTFT 300: too slow
                ok(2, 0, new long[] {100, 200, 300}, 300, 1, 3), // TPOT 100: too slow
                ok(3, 0, new long[] {150}, 150, 1, 1), // one token: no TPOT, TTFT fine
                failed(4, ErrorClass.TIMEOUT));
        Slo slo = Slo.parse("ttft=200,tpot=50");
        assertEquals(200.0, slo.ttftMs());
        assertEquals(50.0, slo.tpotMs());
        assertTrue(Double.isNaN(slo.e2elMs()));
        Map<String, Object> m = LevelSummary.of(records, 4_000 * MS, slo);
        assertEquals(0.5, (double) m.get("request_goodput"), 1e-12); // 2 good over 4 s
        assertEquals(0.0, (double)
                LevelSummary.of(records, 1_000 * MS, Slo.parse("e2el=100")).get("request_goodput"));
        assertEquals(1.0, (double)
                LevelSummary.of(records, 1_000 * MS, Slo.parse("e2el=130")).get("request_goodput"));
        for (String bad : List.of("ttft", "ttft=abc", "ttft=-1", "latency=5", "ttft=1,ttft=2")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Slo.parse(bad), bad);
            assertTrue(e.getMessage().startsWith("--slo"), e.getMessage());
        }
        assertNull(Slo.NONE.asMap().get("ttft"));
    }

    @Test
    void poissonAndGammaGapsHaveTheMeanOfTheRate() {
        for (double burstiness : new double[] {1.0, 0.5, 4.0}) {
            LoadLevel.Rate rate = new LoadLevel.Rate(10, burstiness);
            long[] gaps = rate.gapsNs(20_001, new java.util.Random(7));
            assertEquals(0, gaps[0]);
            double[] s = new double[gaps.length - 1];
            for (int i = 1; i < gaps.length; i++) {
                s[i - 1] = gaps[i] / 1e9;
            }
            Distribution d = Distribution.of(s);
            assertEquals(0.1, d.mean(), 0.005, "mean gap at 10 req/s, burstiness " + burstiness);
            // gamma(k, θ): coefficient of variation 1/√k
            assertEquals(1 / Math.sqrt(burstiness), d.std() / d.mean(), 0.05, "burstiness " + burstiness);
        }
        assertArrayEquals(
                new long[3], new LoadLevel.Rate(Double.POSITIVE_INFINITY, 1).gapsNs(3, new java.util.Random()));
    }
}
