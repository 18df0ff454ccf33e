package dev.mlxring.ingress.cli;

import dev.mlxring.mlx.MlxLaunch;
import dev.mlxring.mlx.ProjectHome;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code mlx-ring serve} as the two ranks of a tensor-parallel group on loopback, for the
 * sharded server tests: either under MLX's own launcher ({@code mlx.launch -n 2}, as a user runs
 * it), or as two processes given the environment {@code mlx.launch} gives its ranks
 * ({@code MLX_RANK}, an {@code MLX_HOSTFILE} of {@code 127.0.0.1:port+rank}), so a test can stop
 * or kill one rank and watch the other. Output goes to a log file; {@link #base} is rank 0's
 * address once it serves.
 */
final class ShardedRanks implements AutoCloseable {
    private static final Pattern BANNER = Pattern.compile("on http://([^ ]+):(\\d+) ");

    private final List<Process> processes;
    private final Path log;
    final String base;

    private ShardedRanks(List<Process> processes, Path log, String base) {
        this.processes = processes;
        this.log = log;
        this.base = base;
    }

    private static List<String> serve(List<String> args) {
        List<String> a = new ArrayList<>(List.of("serve", "--port", "0"));
        a.addAll(args);
        return MlxLaunch.javaCommand("dev.mlxring.ingress.cli.Main", a);
    }

    /** {@code mlx.launch -n 2 -- java ... serve --port 0 ARGS}. */
    static ShardedRanks launch(List<String> args) throws IOException, InterruptedException {
        return serving(() -> {
            Path log = Files.createTempFile("mlxring-sharded-", ".log");
            Process p = new ProcessBuilder(MlxLaunch.command(2, MlxLaunch.freePorts(2), serve(args)))
                    .directory(ProjectHome.get().toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile())
                    .start();
            return new ShardedRanks(List.of(p), log, null);
        });
    }

    /** {@code serve} on two ranks as two processes with mlx.launch's environment, logging to one file. */
    static ShardedRanks direct(List<String> args) throws IOException, InterruptedException {
        return serving(() -> directCommand(serve(args)));
    }

    private interface Start {
        ShardedRanks start() throws IOException;
    }

    /**
     * Starts the ranks until they serve: a port {@link MlxLaunch#freePorts} found free may be
     * bound by another process before a rank binds it, and the ranks then stop with "Address
     * already in use"; up to three starts, each on ports drawn anew.
     */
    private static ShardedRanks serving(Start start) throws IOException, InterruptedException {
        for (int attempt = 1; ; attempt++) {
            ShardedRanks started = start.start();
            try {
                return new ShardedRanks(started.processes, started.log, awaitBanner(started.processes, started.log));
            } catch (IOException e) {
                Files.deleteIfExists(started.log);
                if (attempt == 3 || e.getMessage() == null || !e.getMessage().contains("Address already in use")) {
                    throw e;
                }
            }
        }
    }

    /** {@code command} on two ranks as two processes with mlx.launch's environment (no banner awaited). */
    static ShardedRanks directCommand(List<String> command) throws IOException {
        Path log = Files.createTempFile("mlxring-sharded-", ".log");
        Path hostfile = Files.createTempFile("mlxring-hostfile-", ".json");
        int port = MlxLaunch.freePorts(2);
        Files.writeString(hostfile, "[[\"127.0.0.1:" + port + "\"], [\"127.0.0.1:" + (port + 1) + "\"]]");
        List<Process> ps = new ArrayList<>();
        for (int rank = 0; rank < 2; rank++) {
            ProcessBuilder pb = new ProcessBuilder(command)
                    .directory(ProjectHome.get().toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
            pb.environment().put("MLX_RANK", Integer.toString(rank));
            pb.environment().put("MLX_HOSTFILE", hostfile.toString());
            ps.add(pb.start());
        }
        return new ShardedRanks(ps, log, null);
    }

    /** Waits (at most {@code seconds}) until the log holds {@code text}. */
    void awaitLog(String text, int seconds) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!logText().contains(text)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no '" + text + "' in the log within " + seconds + " s:\n" + logText());
            }
            Thread.sleep(20);
        }
    }

    /** The process started for rank {@code rank} by {@link #directCommand}. */
    Process process(int rank) {
        return processes.get(rank);
    }

    private static String awaitBanner(List<Process> ps, Path log) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(240);
        while (System.nanoTime() < deadline) {
            boolean alive = ps.stream().allMatch(Process::isAlive);
            for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
                Matcher m = BANNER.matcher(line);
                if (m.find()) {
                    return "http://" + m.group(1) + ":" + m.group(2);
                }
            }
            if (!alive) {
                break;
            }
            Thread.sleep(50);
        }
        ps.forEach(p -> p.descendants().forEach(ProcessHandle::destroyForcibly));
        ps.forEach(Process::destroyForcibly);
        throw new IOException("the ranks did not start serving:\n" + Files.readString(log));
    }

    /** The java process of rank {@code rank} (its environment says MLX_RANK=rank). */
    ProcessHandle rank(int rank) throws IOException {
        List<ProcessHandle> all = new ArrayList<>();
        for (Process p : processes) {
            all.add(p.toHandle());
            p.descendants().forEach(all::add);
        }
        for (ProcessHandle h : all) {
            Path environ = Path.of("/proc", Long.toString(h.pid()), "environ");
            if (!Files.isReadable(environ) || !h.info().command().orElse("").endsWith("java")) {
                continue;
            }
            for (String kv : new String(Files.readAllBytes(environ), StandardCharsets.UTF_8).split("\0")) {
                if (kv.equals("MLX_RANK=" + rank)) {
                    return h;
                }
            }
        }
        throw new IllegalStateException("no java process of rank " + rank + " among " + all);
    }

    /** Sends {@code signal} (e.g. STOP) to a process by its id. */
    static void signal(ProcessHandle h, String signal) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(h.pid())).start();
        if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            throw new IOException("kill -" + signal + " " + h.pid() + " failed");
        }
    }

    /** Waits for every process started here to exit; returns the exit codes, or null on timeout. */
    List<Integer> awaitExit(int seconds) throws InterruptedException {
        List<Integer> codes = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        for (Process p : processes) {
            if (!p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                return null;
            }
            codes.add(p.exitValue());
        }
        return codes;
    }

    String logText() throws IOException {
        return Files.readString(log, StandardCharsets.UTF_8);
    }

    @Override
    public void close() throws IOException {
        for (Process p : processes) {
            List<ProcessHandle> children = p.descendants().toList();
            p.destroyForcibly();
            children.forEach(ProcessHandle::destroyForcibly);
        }
        Files.deleteIfExists(log);
    }
}
