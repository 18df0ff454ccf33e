package dev.mlxring.ingress.cli;

import dev.mlxring.ingress.http.ConnectionLimits;
import java.util.List;

/**
 * {@code serve}'s connection flags ({@link ConnectionLimits}): {@code --read-timeout-seconds S}
 * (a request's headers, then its body, must each arrive within S seconds, else 408; default 30),
 * {@code --idle-timeout-seconds S} (a connection with no request begun for S seconds is closed;
 * default 60) and {@code --max-connections N} (connections beyond N are answered 503 and closed;
 * default 1024). Each must be a whole number of at least 1.
 */
final class ConnectionFlags {
    static final List<String> NAMES = List.of("--read-timeout-seconds", "--idle-timeout-seconds", "--max-connections");

    private ConnectionFlags() {}

    static ConnectionLimits parse(CliArgs a) {
        return new ConnectionLimits(
                a.intValue("--read-timeout-seconds", ConnectionLimits.DEFAULT_READ_TIMEOUT_SECONDS, 1) * 1000L,
                a.intValue("--idle-timeout-seconds", ConnectionLimits.DEFAULT_IDLE_TIMEOUT_SECONDS, 1) * 1000L,
                a.intValue("--max-connections", ConnectionLimits.DEFAULT_MAX_CONNECTIONS, 1));
    }
}
