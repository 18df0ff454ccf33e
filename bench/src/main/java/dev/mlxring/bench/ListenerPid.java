package dev.mlxring.bench;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;

/**
 * The process listening on a local TCP port, found through {@code /proc/net/tcp}{@code {,6}} (the
 * listening socket's inode) and {@code /proc/PID/fd} (the process holding it): how {@code bench
 * serve} tells a loopback target's own CPU from the rest of the machine's. Linux only; empty
 * elsewhere, for a port nobody here listens on, or for a process this user cannot inspect.
 */
public final class ListenerPid {
    private static final String LISTEN = "0A";

    private ListenerPid() {}

    public static OptionalLong of(int port) {
        String inode = null;
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            inode = inode != null ? inode : listeningInode(Path.of(table), port);
        }
        if (inode == null) {
            return OptionalLong.empty();
        }
        String socket = "socket:[" + inode + "]";
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
            for (Path proc : procs) {
                try (DirectoryStream<Path> fds = Files.newDirectoryStream(proc.resolve("fd"))) {
                    for (Path fd : fds) {
                        try {
                            if (Files.readSymbolicLink(fd).toString().equals(socket)) {
                                return OptionalLong.of(
                                        Long.parseLong(proc.getFileName().toString()));
                            }
                        } catch (IOException | UnsupportedOperationException e) {
                            // gone, or not ours to read
                        }
                    }
                } catch (IOException | SecurityException e) {
                    // a process we may not inspect
                }
            }
        } catch (IOException e) {
            return OptionalLong.empty();
        }
        return OptionalLong.empty();
    }

    private static String listeningInode(Path table, int port) {
        if (!Files.isReadable(table)) {
            return null;
        }
        String hexPort = String.format("%04X", port);
        try {
            for (String line : Files.readAllLines(table)) {
                String[] f = line.trim().split("\\s+");
                if (f.length > 9 && f[1].endsWith(":" + hexPort) && f[3].equals(LISTEN)) {
                    return f[9];
                }
            }
        } catch (IOException e) {
            return null;
        }
        return null;
    }
}
