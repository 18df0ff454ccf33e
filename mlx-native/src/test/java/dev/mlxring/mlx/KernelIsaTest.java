package dev.mlxring.mlx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Which instruction set runs the native kernels: the widest the CPU has, or the one
 * {@code MLXR_KERNEL_ISA} names (read once per process, so the forced cases run in a child JVM).
 */
class KernelIsaTest {

    @Test
    void selectsTheWidestThisCpuHas() {
        assumeTrue(System.getenv("MLXR_KERNEL_ISA") == null, "MLXR_KERNEL_ISA is set for this JVM");
        Optional<KernelIsa> expected = KernelIsa.AVX512.onThisCpu()
                ? Optional.of(KernelIsa.AVX512)
                : KernelIsa.AVX2.onThisCpu() ? Optional.of(KernelIsa.AVX2) : Optional.empty();
        assertEquals(expected, KernelIsa.selected());
        assertEquals(Mlx.nativeKernelsAvailable(), KernelIsa.AVX2.onThisCpu());
    }

    @Test
    void environmentForcesAvx2AndRejectsWhatItCannotRun() throws Exception {
        assumeTrue(KernelIsa.AVX2.onThisCpu(), "this CPU runs no native kernels");
        assertEquals("AVX2", probe("avx2"));
        String bad = probe("sse9");
        assertTrue(bad.startsWith("error: ") && bad.contains("MLXR_KERNEL_ISA") && bad.contains("sse9"), bad);
        if (!KernelIsa.AVX512.onThisCpu()) {
            String lacking = probe("avx512");
            assertTrue(lacking.contains("MLXR_KERNEL_ISA") && lacking.contains("does not have"), lacking);
        }
    }

    /** What {@link Probe} prints in a child JVM with {@code MLXR_KERNEL_ISA=value}. */
    private static String probe(String value) throws IOException, InterruptedException {
        Path home = ProjectHome.get();
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "@" + home.resolve("jvm.args"),
                "-Dmlxring.home=" + home,
                "-cp",
                System.getProperty("java.class.path"),
                Probe.class.getName()));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("MLXR_KERNEL_ISA", value);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "probe did not exit");
        String[] lines = out.split("\n");
        return lines[lines.length - 1].strip();
    }

    /** Prints the selected instruction set, or "error: " and the message. */
    static final class Probe {
        public static void main(String[] args) {
            try {
                System.out.println(KernelIsa.selected().map(Enum::name).orElse("none"));
            } catch (MlxException e) {
                System.out.println("error: " + e.getMessage());
            }
        }
    }
}
