package dev.mlxring.ingress.cli;

import dev.mlxring.mlx.ProjectHome;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code mlx-ring serve} as a real child process (the test JVM's class path and {@code jvm.args}),
 * for what only a process shows: signals, exit codes, the logging set-up. Its stderr (the log,
 * access lines included) goes to a file the test can wait on.
 */
final class ServerProcess implements AutoCloseable {
    private static final Pattern BANNER = Pattern.compile("on http://([^ ]+):(\\d+) ");

    final Process process;
    final Path log;
    final String base;

    private ServerProcess(Process process, Path log, String base) {
        this.process = process;
        this.log = log;
        this.base = base;
    }

    /** Starts {@code serve --port 0 <args>} and returns once it prints the address it serves on. */
    static ServerProcess start(String... args) throws IOException {
        return start(List.of(), args);
    }

    /**
     * Starts {@code java <jvmOptions> ... serve --port 0 <args>} and returns once it prints the
     * address it serves on.
     */
    static ServerProcess start(List<String> jvmOptions, String... args) throws IOException {
        Path home = ProjectHome.get();
        // A command the server runs under (e.g. heaptrack -o FILE), for attributing its memory.
        String prefix = System.getProperty("mlxring.bench.serverPrefix", "").trim();
        List<String> cmd = new ArrayList<>(prefix.isEmpty() ? List.of() : List.of(prefix.split("\\s+")));
        cmd.addAll(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "@" + home.resolve("jvm.args"),
                "-Dmlxring.home=" + home));
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of(
                "-cp", System.getProperty("java.class.path"), "dev.mlxring.ingress.cli.Main", "serve", "--port", "0"));
        cmd.addAll(List.of(args));
        Path log = Files.createTempFile("mlxring-serve-", ".log");
        Process p = new ProcessBuilder(cmd).redirectError(log.toFile()).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line;
        while ((line = out.readLine()) != null) {
            Matcher m = BANNER.matcher(line);
            if (m.find()) {
                return new ServerProcess(p, log, "http://" + m.group(1) + ":" + m.group(2));
            }
        }
        p.destroyForcibly();
        throw new IOException(
                "serve exited (" + p.onExit().join().exitValue() + ") before serving:\n" + Files.readString(log));
    }

    /** The server JVM's process id (a descendant of {@link #process} when it runs under a prefix). */
    long serverPid() {
        return process.descendants()
                .filter(h -> h.info().command().orElse("").endsWith("/bin/java"))
                .mapToLong(ProcessHandle::pid)
                .findFirst()
                .orElse(process.pid());
    }

    String logText() throws IOException {
        return Files.readString(log, StandardCharsets.UTF_8);
    }

    /** Waits (at most {@code seconds}) for a log line matching {@code line}; returns it. */
    String awaitLogLine(Predicate<String> line, int seconds) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            // Read the liveness first: a process that was already gone has written its whole log.
            boolean alive = process.isAlive();
            for (String l : logText().split("\n")) {
                if (line.test(l)) {
                    return l;
                }
            }
            if (!alive || System.nanoTime() > deadline) {
                throw new AssertionError("no such log line within " + seconds + " s (process "
                        + (alive ? "alive" : "exited") + "); log:\n" + logText());
            }
            Thread.sleep(20);
        }
    }

    /** SIGTERM (what {@link Process#destroy()} sends on Linux and macOS). */
    void sigterm() {
        process.destroy();
    }

    @Override
    public void close() throws IOException {
        long serverPid = serverPid();
        if (process.isAlive() && serverPid != process.pid()) {
            // The server runs under a prefix command: it exits normally so that the prefix can
            // write out what it recorded.
            ProcessHandle.of(serverPid).ifPresent(ProcessHandle::destroy);
            process.onExit()
                    .orTimeout(120, TimeUnit.SECONDS)
                    .exceptionally(e -> null)
                    .join();
            ProcessHandle.of(serverPid).ifPresent(ProcessHandle::destroyForcibly);
        }
        if (process.isAlive()) {
            process.destroyForcibly();
        }
        Files.deleteIfExists(log);
    }
}
