package dev.mlxring.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link MlxLmServe} against shell scripts that speak {@code mlxlm_bench.py --serve}'s protocol:
 * the header, one run per {@code run} command, the script's flags, and each way the script can
 * fail (an early exit, silence, the wrong run) ending in a named error, not a hang.
 */
class MlxLmServeTest {
    private static final Path SH = Path.of("/bin/sh");
    private static final String HEADER =
            "echo '{\"kind\":\"header\",\"mlx_version\":\"0.1\",\"mlx_lm_version\":\"0.2\",\"prompt\":[5,6]}'\n";
    private static final String RUN = "{\"kind\":\"run\",\"run\":%d,\"prompt_tokens\":2,\"generation_tokens\":3,"
            + "\"prompt_tps\":20.0,\"generation_tps\":30.0,\"prompt_time_s\":0.1,\"generation_time_s\":0.1,"
            + "\"peak_memory\":1234,\"tokens\":[7,8,9]}";

    @TempDir
    Path dir;

    private MlxLmServe start(String body, long timeoutNs) throws Exception {
        Path script = dir.resolve("serve.sh");
        Files.writeString(script, body);
        MlxLmServe.Script what =
                new MlxLmServe.Script(dir.resolve("model"), dir.resolve("prompt.json"), 2, 3, 1, 42L, 0, 512);
        return MlxLmServe.start(SH, script, what, dir.resolve("logs/mlx-lm.log"), timeoutNs);
    }

    private static String serving(String runLine) {
        return HEADER + "echo 'a library prints this'\n" + "i=0\n" + "while read cmd; do\n"
                + "  [ \"$cmd\" = quit ] && exit 0\n" + "  printf '" + runLine + "\\n' $i\n" + "  i=$((i+1))\n"
                + "done\n";
    }

    @Test
    void theHeaderThenOneRunPerCommandSkippingStrayLines() throws Exception {
        try (MlxLmServe py = start(serving(RUN), TimeUnit.SECONDS.toNanos(30))) {
            assertEquals("mlx 0.1, mlx-lm 0.2", py.versions());
            assertEquals("[5,6]", py.header().get("prompt").toString());
            for (int i = 0; i < 2; i++) {
                MlxLmServe.Run r = py.run();
                assertEquals(2, r.promptTokens());
                assertEquals(3, r.genTokens());
                assertEquals(20.0, r.promptTps());
                assertEquals(30.0, r.genTps());
                assertEquals(0.1, r.promptSeconds());
                assertEquals(0.1, r.genSeconds());
                assertEquals(1234, r.peakMemoryBytes());
                assertArrayEquals(new int[] {7, 8, 9}, r.tokens());
            }
        }
    }

    @Test
    void theScriptGetsItsFlagsWithTheSeedOnlyWhenSet() {
        MlxLmServe.Script seeded = new MlxLmServe.Script(Path.of("m"), Path.of("p.json"), 2, 3, 4, 42L, 1, 512);
        assertEquals(
                List.of(
                        "--model",
                        "m",
                        "--prompt-tokens",
                        "2",
                        "--gen-tokens",
                        "3",
                        "--runs",
                        "4",
                        "--seed",
                        "42",
                        "--prompt-file",
                        "p.json",
                        "--warmup",
                        "1",
                        "--prefill-step-size",
                        "512",
                        "--serve"),
                seeded.flags());
        MlxLmServe.Script unseeded = new MlxLmServe.Script(Path.of("m"), Path.of("p.json"), 2, 3, 1, null, 1, 512);
        assertTrue(!unseeded.flags().contains("--seed"), unseeded.flags().toString());
    }

    @Test
    void anEarlyExitNamesTheMissingLineAndQuotesTheLog() throws Exception {
        IllegalStateException e = assertThrows(
                IllegalStateException.class,
                () -> start("echo 'no model here' >&2\nexit 3\n", TimeUnit.SECONDS.toNanos(30)));
        assertTrue(e.getMessage().contains("exited before its 'header' line"), e.getMessage());
        assertTrue(e.getMessage().contains("no model here"), e.getMessage());
    }

    @Test
    void silencePastTheTimeoutFailsInsteadOfHanging() throws Exception {
        // answers nothing to "run"; the next line (close's "quit") ends it
        try (MlxLmServe py = start(HEADER + "read cmd\nread cmd\n", TimeUnit.SECONDS.toNanos(3))) {
            IllegalStateException e = assertThrows(IllegalStateException.class, py::run);
            assertTrue(e.getMessage().contains("no 'run' line within"), e.getMessage());
        }
    }

    @Test
    void anAnswerForAnotherRunIsRefused() throws Exception {
        try (MlxLmServe py = start(serving(RUN.replace("\"run\":%d", "\"run\":7%d")), TimeUnit.SECONDS.toNanos(30))) {
            IllegalStateException e = assertThrows(IllegalStateException.class, py::run);
            assertEquals("mlx-lm answered run 70, expected 0", e.getMessage());
        }
    }

    @Test
    void aMissingPythonIsNamed() {
        IllegalStateException e = assertThrows(
                IllegalStateException.class,
                () -> MlxLmServe.start(
                        dir.resolve("no-python"),
                        dir.resolve("serve.sh"),
                        new MlxLmServe.Script(dir, dir.resolve("p.json"), 1, 1, 1, null, 0, 512),
                        dir.resolve("mlx-lm.log"),
                        1));
        assertTrue(e.getMessage().contains("needs the project venv"), e.getMessage());
    }
}
