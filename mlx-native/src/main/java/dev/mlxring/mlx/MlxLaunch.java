package dev.mlxring.mlx;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs a command as the ranks of an MLX distributed group on this host, through MLX's own
 * launcher ({@code mlx.launch -n N --starting-port P -- COMMAND}, ring backend over loopback:
 * each rank gets {@code MLX_RANK} and an {@code MLX_HOSTFILE} of {@code 127.0.0.1:P+rank}), as a
 * user runs {@code mlx.launch -n 2 -- ./mlx-ring serve}. For the live sharding oracles and the
 * tests that start the engine's ranks.
 */
public final class MlxLaunch {
    private MlxLaunch() {}

    /** The launcher's argv for {@code ranks} local ranks listening from {@code startingPort}. */
    public static List<String> command(int ranks, int startingPort, List<String> rankCommand) {
        Path launcher = ProjectHome.python().resolveSibling("mlx.launch");
        if (!Files.isExecutable(launcher)) {
            throw new IllegalStateException(
                    "mlx.launch is missing from the venv (" + launcher + "): run ./mlx-ring setup");
        }
        List<String> cmd = new ArrayList<>(List.of(
                launcher.toString(),
                "-n",
                Integer.toString(ranks),
                "--starting-port",
                Integer.toString(startingPort),
                "--"));
        cmd.addAll(rankCommand);
        return cmd;
    }

    /**
     * Runs {@code rankCommand} on {@code ranks} local ranks and waits at most {@code timeoutSeconds};
     * returns the ranks' stdout and stderr as the launcher relays them.
     *
     * @throws IllegalStateException when it times out or any rank exits non-zero (which the launcher
     *     reports on stderr, exiting 0 itself), with the output's tail
     */
    public static String run(int ranks, List<String> rankCommand, long timeoutSeconds) {
        for (int attempt = 1; ; attempt++) {
            try {
                return runOnce(ranks, rankCommand, timeoutSeconds);
            } catch (IllegalStateException e) {
                // A port freePorts found free was taken before a rank bound it: launch on others.
                if (attempt == 3 || e.getMessage() == null || !e.getMessage().contains("Address already in use")) {
                    throw e;
                }
            }
        }
    }

    private static String runOnce(int ranks, List<String> rankCommand, long timeoutSeconds) {
        List<String> cmd = command(ranks, freePorts(ranks), rankCommand);
        try {
            Path log = Files.createTempFile("mlxring-launch", ".log");
            try {
                ProcessBuilder pb = new ProcessBuilder(cmd)
                        .redirectErrorStream(true)
                        .redirectOutput(log.toFile())
                        .directory(ProjectHome.get().toFile());
                pb.environment().put("PYTHONIOENCODING", "utf-8");
                pb.environment().put("HF_HUB_OFFLINE", "1");
                Process p = pb.start();
                boolean done = p.waitFor(timeoutSeconds, TimeUnit.SECONDS);
                if (!done) {
                    p.descendants().forEach(ProcessHandle::destroyForcibly);
                    p.destroyForcibly();
                }
                String out = Files.readString(log, StandardCharsets.UTF_8);
                // mlx.launch itself exits 0 when a rank fails; it says so on stderr instead.
                boolean rankFailed = out.contains("] Node with rank ")
                        && (out.contains(" exited with code ") || out.contains(" was killed"));
                if (!done || p.exitValue() != 0 || rankFailed) {
                    throw new IllegalStateException((!done
                                    ? "timed out after " + timeoutSeconds + " s"
                                    : rankFailed ? "a rank failed" : "exit " + p.exitValue())
                            + ": " + String.join(" ", cmd) + "\n--- output (tail) ---\n"
                            + out.substring(Math.max(0, out.length() - 6000)));
                }
                return out;
            } finally {
                Files.deleteIfExists(log);
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + String.join(" ", cmd) + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running " + String.join(" ", cmd), e);
        }
    }

    /**
     * A base port with the {@code n} ports from it, and the one below it, free right now: the ring
     * listens on base + rank and rank 0's control channel on base - 1
     * ({@code ShardLaunch.controlAddress}). Drawn below the kernel's ephemeral range, where no
     * outgoing connection takes a port between this check and the ranks' binds (picked inside it, the
     * port below an ephemeral one was sometimes another connection's, and rank 0 failed with "Address
     * already in use"). Another process may still bind one first; {@link #run} then launches again.
     */
    public static int freePorts(int n) {
        int below = ephemeralLow() - 1;
        java.util.SplittableRandom rnd = new java.util.SplittableRandom();
        for (int attempt = 0; attempt < 200; attempt++) {
            int base = 10_001 + rnd.nextInt(Math.max(1, below - n - 10_001));
            boolean free = true;
            for (int port = base - 1; port < base + n && free; port++) {
                try (ServerSocket s = new ServerSocket(port)) {
                    free = true;
                } catch (IOException e) {
                    free = false;
                }
            }
            if (free) {
                return base;
            }
        }
        throw new IllegalStateException("no " + (n + 1) + " consecutive free ports found below " + below);
    }

    /** The low end of Linux's ephemeral port range (32768 where it cannot be read). */
    private static int ephemeralLow() {
        try {
            String range = Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range"))
                    .trim();
            int low = Integer.parseInt(range.split("\\s+")[0]);
            return low > 12_000 ? low : 32_768;
        } catch (IOException | RuntimeException e) {
            return 32_768;
        }
    }

    /**
     * The argv of a JVM running {@code mainClass} with this JVM's class path and the project's
     * {@code jvm.args}: what a test hands to {@link #run} as one rank's command.
     */
    public static List<String> javaCommand(String mainClass, List<String> args) {
        Path home = ProjectHome.get();
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "@" + home.resolve("jvm.args"),
                "-Dmlxring.home=" + home,
                "-cp",
                System.getProperty("java.class.path"),
                mainClass));
        cmd.addAll(args);
        return cmd;
    }
}
