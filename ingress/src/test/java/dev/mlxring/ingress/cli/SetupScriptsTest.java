package dev.mlxring.ingress.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.mlx.ProjectHome;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher's set-up steps rebuild nothing that did not change and say nothing when nothing is
 * to do: the MLX shim's stamp keys on content (a checkout in another folder keeps its shim), and
 * the default model's step keeps the GGUF's hash instead of hashing 98 MB on every command.
 */
class SetupScriptsTest {
    private static final Path HOME = ProjectHome.get();

    private record Result(int status, String output) {}

    private static Result bash(Path dir, long timeoutSeconds, String... command) throws Exception {
        Process p = new ProcessBuilder(command)
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .start();
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            p.waitFor();
            return new Result(
                    -1,
                    "timed out after " + timeoutSeconds + " s: "
                            + new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        }
        return new Result(p.exitValue(), new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
    }

    private static void copyTree(Path from, Path to) throws IOException {
        try (Stream<Path> files = Files.walk(from)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Path t = to.resolve(from.relativize(f).toString());
                if (Files.isDirectory(f)) {
                    Files.createDirectories(t);
                } else {
                    Files.copy(f, t, StandardCopyOption.COPY_ATTRIBUTES);
                }
            }
        }
    }

    /**
     * A checkout elsewhere (its venv reached by another path, its files' times kept as a move keeps
     * them) finds its shim up to date: build_shim.sh returns at once, silently, and leaves it as
     * it is. A stamp that named the venv's folder recompiled the shim (minutes) instead.
     */
    @Test
    void aMovedCheckoutKeepsItsShim(@TempDir Path moved) throws Exception {
        Path native_ = HOME.resolve("build/native");
        String stamp = Files.readString(native_.resolve("libmlxr.stamp"));
        assertTrue(
                stamp.contains("runpath=$ORIGIN/"),
                "the shim was not set up by this build_shim.sh (run" + " ./mlx-ring setup): " + stamp);
        copyTree(HOME.resolve("scripts"), moved.resolve("scripts"));
        copyTree(HOME.resolve("mlx-native/src/main/c"), moved.resolve("mlx-native/src/main/c"));
        Path venv = Files.createSymbolicLink(
                moved.resolve(".venv"), HOME.resolve(".venv").toRealPath());
        try {
            checkMovedShim(moved, native_);
        } finally {
            Files.delete(venv); // the link only, before @TempDir's clean-up reaches it
        }
    }

    private static void checkMovedShim(Path moved, Path native_) throws Exception {
        Files.createDirectories(moved.resolve("build/native"));
        for (String f : List.of("libmlxr.so", "libmlxr.stamp")) {
            Files.copy(
                    native_.resolve(f), moved.resolve("build/native").resolve(f), StandardCopyOption.COPY_ATTRIBUTES);
        }
        Path shim = moved.resolve("build/native/libmlxr.so");
        long before = Files.getLastModifiedTime(shim).toMillis();

        Result r = bash(moved, 60, "bash", "scripts/build_shim.sh");
        assertEquals(new Result(0, ""), r, "build_shim.sh in a moved checkout");
        assertEquals(before, Files.getLastModifiedTime(shim).toMillis(), "the shim was rebuilt");
        // The library hash it had to take once (another path) is kept: the next run does not take it.
        assertTrue(Files.readString(moved.resolve("build/native/libmlxr.libmlx-sha256"))
                .startsWith(moved.resolve(".venv").toString()));
        assertEquals(new Result(0, ""), bash(moved, 60, "bash", "scripts/build_shim.sh"));
    }

    /**
     * With --hash-cache the GGUF is hashed once per path, size and mtime; with --quiet an up-to-date
     * conversion prints nothing. The conversion in models/ is only read (it is up to date).
     */
    @Test
    void theModelStepHashesTheGgufOnceAndIsQuietWhenUpToDate(@TempDir Path tmp) throws Exception {
        String python = HOME.resolve(".venv/bin/python").toString();
        String script = HOME.resolve("scripts/convert_gguf.py").toString();
        String out = HOME.resolve(GenerateCommand.DEFAULT_MODEL).toString();
        Path cache = tmp.resolve("gguf-sha256.json");

        Result first = bash(HOME, 120, python, script, "--hash-cache", cache.toString(), "--out", out);
        assertEquals(0, first.status(), first.output());
        assertTrue(first.output().contains("hashing source") && first.output().contains("up to date"), first.output());
        assertTrue(Files.readString(cache).contains("\"sha256\""), Files.readString(cache));

        Result second = bash(HOME, 120, python, script, "--hash-cache", cache.toString(), "--out", out);
        assertEquals(0, second.status(), second.output());
        assertFalse(second.output().contains("hashing source"), second.output());
        assertTrue(second.output().contains("up to date"), second.output());

        assertEquals(
                new Result(0, ""),
                bash(HOME, 120, python, script, "--quiet", "--hash-cache", cache.toString(), "--out", out));

        // A recorded size that is not the file's: hashed again.
        Files.writeString(cache, Files.readString(cache).replaceFirst("\"size\": \\d+", "\"size\": 1"));
        Result stale = bash(HOME, 120, python, script, "--hash-cache", cache.toString(), "--out", out);
        assertTrue(stale.output().contains("hashing source"), stale.output());
    }
}
