package dev.mlxring.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code bench compare}: rows matched by target and level, B/A ratios, and the significance note from the rounds' spreads. */
class ResultsComparisonTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private static String row(String target, int c, double tps, double min, double max, int rounds, double ttft) {
        return """
                {"target": "%s", "max_concurrency": %d, "rounds": %d, "output_throughput": %s,
                 "output_throughput_spread": {"min": %s, "max": %s, "std": 1.0},
                 "median_ttft_ms": %s, "median_tpot_ms": 20.0}""".formatted(target, c, rounds, tps, min, max, ttft);
    }

    private static JsonNode doc(String workload, String... rows) throws IOException {
        return JSON.readTree("""
                {"schema_version": 1, "date": "d", "config": {"workload": "%s", "input_len": "128"},
                 "results": [%s]}""".formatted(workload, String.join(",", rows)));
    }

    @Test
    void rowsMatchByTargetAndLevelWithRatiosAndSignificance() throws IOException {
        JsonNode a = doc(
                "random",
                row("ours", 1, 100, 95, 105, 3, 50),
                row("ours", 4, 300, 290, 310, 3, 80),
                row("mlxlm", 1, 50, 50, 50, 1, 60));
        JsonNode b = doc(
                "random",
                row("ours", 1, 102, 98, 106, 3, 49),
                row("ours", 4, 360, 350, 370, 3, 70),
                row("mlxlm", 1, 40, 40, 40, 1, 60),
                row("ours", 8, 500, 500, 500, 3, 90));
        String md = ResultsComparison.markdown(a, "a.json", b, "b.json");
        assertTrue(
                md.contains("| ours | c=1 | 100.0 | 102.0 | 1.020× | 50.0 | 49.0 | 20.0 | 20.0 | ranges overlap"), md);
        assertTrue(
                md.contains("| ours | c=4 | 300.0 | 360.0 | 1.200× |")
                        && md.contains("B higher beyond the rounds' spread"),
                md);
        assertTrue(md.contains("| mlxlm | c=1 | 50.0 | 40.0 | 0.800× |") && md.contains("one round on a side"), md);
        assertTrue(!md.contains("c=8"), "a row only B has is not compared");
        assertTrue(!md.contains("differ in"), md);
        String lower = ResultsComparison.significance(
                JSON.readTree(row("x", 1, 100, 95, 105, 2, 1)), JSON.readTree(row("x", 1, 80, 70, 90, 2, 1)));
        assertEquals("B lower beyond the rounds' spread", lower);
    }

    @Test
    void differentWorkloadsAreCalledOutAndBadFilesRefused() throws IOException {
        String md = ResultsComparison.markdown(
                doc("random", row("a", 1, 1, 1, 1, 1, 1)), "A", doc("agent-edit", row("a", 1, 1, 1, 1, 1, 1)), "B");
        assertTrue(md.contains("differ in workload \"random\" vs \"agent-edit\""), md);
        Files.writeString(dir.resolve("results.json"), "{\"schema_version\": 9, \"results\": []}");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ResultsComparison.read(dir));
        assertTrue(e.getMessage().contains("schema_version 9"), e.getMessage());
        Files.writeString(dir.resolve("x.json"), "{\"results\": 1}");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ResultsComparison.read(dir.resolve("x.json")))
                .getMessage()
                .contains("not a bench serve results JSON"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ResultsComparison.read(dir.resolve("none")))
                .getMessage()
                .contains("no such results file"));
    }
}
