package dev.mlxring.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** bench decode's arithmetic on scripted timings: rates, medians and spreads, the ratio to mlx-lm, token agreement, the alternating order. */
class DecodeReportTest {
    private static final Map<String, Object> MACHINE = Map.of("cpu", "test cpu", "cores", 2, "load_1m", 1.5);

    @Test
    void ratesFollowStreamGenerateAndRowsSummariseTheRuns() {
        int[] ref = {5, 6, 7, 8};
        List<DecodeRun> runs = List.of(
                // ours: 64 prompt tokens in 0.5 s (128 tok/s), 4 tokens in 0.4 s (10 tok/s)
                new DecodeRun("ours-exact", 1, 64, 4, 0.5, 0.4, 0.1, ref),
                new DecodeRun("mlx-lm", 1, 64, 4, 0.25, 0.8, 0.2, ref),
                new DecodeRun("llama.cpp", 1, 64, 4, 0.2, 0.2, 0.9, null),
                new DecodeRun("llama.cpp", 2, 64, 4, 0.4, 0.4, 0.3, null),
                new DecodeRun("mlx-lm", 2, 64, 4, 0.5, 0.8, 0.1, ref),
                new DecodeRun("ours-exact", 2, 64, 4, 1.0, 0.2, 0.0, ref),
                new DecodeRun("ours-fast", 1, 64, 4, 0.5, 0.4, 0.0, new int[] {5, 6, 9, 9}));
        assertEquals(128.0, runs.getFirst().prefillTps(), 1e-9);
        assertEquals(10.0, runs.getFirst().decodeTps(), 1e-9);
        Map<String, Object> doc = DecodeReport.document(
                "mlx-ring bench decode --test",
                MACHINE,
                Map.of("prompt_tokens", 64),
                List.of("ours-exact", "ours-fast", "mlx-lm", "llama.cpp"),
                runs,
                "mlx-lm",
                0.5);
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> rows = (List<Map<String, Object>>) doc.get("engines");
        assertEquals(4, rows.size());
        Map<String, Object> exact = rows.get(0);
        assertEquals("ours-exact", exact.get("engine"));
        assertEquals(2, exact.get("runs"));
        assertEquals(96.0, (double) exact.get("prefill_tps_median"), 1e-9); // 128 and 64
        assertEquals(64.0, (double) exact.get("prefill_tps_min"), 1e-9);
        assertEquals(15.0, (double) exact.get("decode_tps_median"), 1e-9); // 10 and 20
        assertEquals(5.0, (double) exact.get("decode_tps_std"), 1e-9);
        // mlx-lm decodes 4 / 0.8 = 5 tok/s both rounds: ours is 3x
        assertEquals(3.0, (double) exact.get("decode_vs_reference"), 1e-9);
        assertEquals(Boolean.TRUE, exact.get("tokens_match_reference"));
        assertNull(exact.get("first_token_mismatch"));
        assertEquals(Boolean.FALSE, exact.get("cpu_flagged"));
        Map<String, Object> fast = rows.get(1);
        assertEquals(Boolean.FALSE, fast.get("tokens_match_reference"));
        assertEquals(2, fast.get("first_token_mismatch"));
        Map<String, Object> mlxLm = rows.get(2);
        assertEquals(1.0, (double) mlxLm.get("decode_vs_reference"), 1e-9);
        assertNull(mlxLm.get("tokens_match_reference"), "the reference is not compared with itself");
        Map<String, Object> llama = rows.get(3);
        assertEquals(15.0, (double) llama.get("decode_tps_median"), 1e-9); // 20 and 10
        assertEquals(0.9, (double) llama.get("foreign_cpu_cores_max"), 1e-9);
        assertEquals(Boolean.TRUE, llama.get("cpu_flagged"));
        assertNull(llama.get("tokens_match_reference"), "llama-bench gives no tokens");
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> all = (List<Map<String, Object>>) doc.get("runs");
        assertEquals(7, all.size());
        assertEquals(320.0, (double) all.get(2).get("prefill_tps"), 1e-9);
        String md = DecodeReport.markdown(doc);
        assertTrue(
                md.contains("| ours-exact | 2 | 96.0 (64.0–128.0) | 15.00 (10.00–20.00) | 3.00 | same | 0.10 |"), md);
        assertTrue(md.contains("| ours-fast | 1 |") && md.contains("| differ from 2 |"), md);
        assertTrue(md.contains("| llama.cpp | 2 |") && md.contains("0.90 **FLAGGED** |"), md);
    }

    @Test
    void withoutMlxLmThereIsNoRatioAndNoTokenCheck() {
        Map<String, Object> doc = DecodeReport.document(
                "c",
                MACHINE,
                Map.of(),
                List.of("ours-mlx"),
                List.of(new DecodeRun("ours-mlx", 1, 8, 2, 0.1, 0.1, Double.NaN, new int[] {1, 2})),
                null,
                0.5);
        @SuppressWarnings("unchecked")
        Map<String, Object> row = ((List<Map<String, Object>>) doc.get("engines")).getFirst();
        assertNull(row.get("decode_vs_reference"));
        assertNull(row.get("tokens_match_reference"));
        assertNull(row.get("foreign_cpu_cores_max"));
        assertEquals(Boolean.FALSE, row.get("cpu_flagged"));
    }

    @Test
    void enginesAlternateRoundByRoundAndRunsTakeTime() {
        assertEquals(
                List.of(
                        new DecodeOrder.Slot(1, "a"),
                        new DecodeOrder.Slot(1, "b"),
                        new DecodeOrder.Slot(1, "c"),
                        new DecodeOrder.Slot(2, "c"),
                        new DecodeOrder.Slot(2, "b"),
                        new DecodeOrder.Slot(2, "a"),
                        new DecodeOrder.Slot(3, "a"),
                        new DecodeOrder.Slot(3, "b"),
                        new DecodeOrder.Slot(3, "c")),
                DecodeOrder.of(List.of("a", "b", "c"), 3));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> new DecodeRun("x", 1, 8, 2, 0, 0.1, 0, null));
        assertTrue(e.getMessage().startsWith("x: a run takes a positive time"), e.getMessage());
        assertEquals(-1, DecodeReport.firstDifference(new int[] {1, 2}, new int[] {1, 2}));
        assertEquals(1, DecodeReport.firstDifference(new int[] {1, 2}, new int[] {1}));
    }
}
