package dev.mlxring.ingress.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * One {@code mlx-ring} command run in the test's JVM through {@link Main#run}: its exit status and
 * what it wrote to standard output and standard error (UTF-8).
 */
record CliRun(int status, String out, String err) {
    /** Runs {@code mlx-ring <args>} and returns once the command returns. */
    static CliRun run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = Main.run(
                args,
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new CliRun(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }
}
