package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.mlxring.mlx.ProjectHome;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher's jar step ({@code build_jars} in {@code mlx-ring}) on a stand-in checkout: a
 * {@code mvn} on the PATH that only counts its runs, a pom and one source file. The jars are rebuilt
 * when a build input changed, and not when a checkout is copied (every file newer than the stamp,
 * none changed) or the command is repeated.
 */
final class LauncherJarStampTest {

    @Test
    void aCopiedCheckoutDoesNotRebuildTheJarsButAnEditedOneDoes(@TempDir Path dir) throws Exception {
        Path original = standInCheckout(dir.resolve("original"));
        Path mvnRuns = dir.resolve("mvn-runs");
        Path fakeBin = fakeMvn(dir.resolve("bin"), mvnRuns);

        runHelp(original, fakeBin);
        assertEquals(1, runs(mvnRuns), "a checkout without jars builds them");
        runHelp(original, fakeBin);
        assertEquals(1, runs(mvnRuns), "nothing changed: no build");

        Path copy = dir.resolve("copy");
        copyTree(original, copy);
        // A copy's files are all newer than its stamp, as `cp -r` leaves them.
        Files.setLastModifiedTime(copy.resolve("build/.jars-stamp"), FileTime.fromMillis(1_000_000L));
        runHelp(copy, fakeBin);
        assertEquals(1, runs(mvnRuns), "a copied checkout with the same content: no build");

        Files.writeString(copy.resolve("mod/src/A.java"), "class A { int changed; }\n");
        runHelp(copy, fakeBin);
        assertEquals(2, runs(mvnRuns), "an edited source: the jars are rebuilt");
    }

    private static Path standInCheckout(Path root) throws IOException {
        Files.createDirectories(root.resolve("mod/src"));
        Files.copy(ProjectHome.get().resolve("mlx-ring"), root.resolve("mlx-ring"));
        root.resolve("mlx-ring").toFile().setExecutable(true);
        Files.writeString(root.resolve("jvm.args"), "\n");
        Files.writeString(root.resolve("pom.xml"), "<project/>\n");
        Files.writeString(root.resolve("mod/pom.xml"), "<project/>\n");
        Files.writeString(root.resolve("mod/src/A.java"), "class A {}\n");
        return root;
    }

    /** A {@code mvn} that appends a line to {@code runs} and leaves the jar the launcher checks for. */
    private static Path fakeMvn(Path bin, Path runs) throws IOException {
        Files.createDirectories(bin);
        Path mvn = bin.resolve("mvn");
        Files.writeString(
                mvn,
                "#!/usr/bin/env bash\necho run >> '" + runs
                        + "'\nmkdir -p ingress/target\n: > ingress/target/ingress.jar\n");
        mvn.toFile().setExecutable(true);
        return bin;
    }

    /** {@code ./mlx-ring generate --help}: builds the jars if needed, then starts the CLI (which fails here). */
    private static void runHelp(Path checkout, Path fakeBin) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(List.of("./mlx-ring", "generate", "--help"))
                .directory(checkout.toFile())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD);
        pb.environment().put("PATH", fakeBin + ":" + pb.environment().getOrDefault("PATH", "/usr/bin:/bin"));
        Process p = pb.start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("mlx-ring did not finish within 60 s");
        }
    }

    private static int runs(Path mvnRuns) throws IOException {
        return Files.exists(mvnRuns) ? Files.readAllLines(mvnRuns).size() : 0;
    }

    private static void copyTree(Path from, Path to) throws IOException {
        try (Stream<Path> paths = Files.walk(from)) {
            for (Path p : paths.toList()) {
                Path target = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(p, target);
                }
            }
        }
    }
}
