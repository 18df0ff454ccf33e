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
    static final List<Flag> FLAGS = List.of(
            Flag.valued(
                    "--read-timeout-seconds",
                    "S",
                    ConnectionLimits.DEFAULT_READ_TIMEOUT_SECONDS,
                    "a request's headers, then its body, must each arrive within S seconds, else 408 and the"
                            + " connection closes"),
            Flag.valued(
                    "--idle-timeout-seconds",
                    "S",
                    ConnectionLimits.DEFAULT_IDLE_TIMEOUT_SECONDS,
                    "close a connection on which no request has begun for S seconds"),
            Flag.valued(
                    "--max-connections",
                    "N",
                    ConnectionLimits.DEFAULT_MAX_CONNECTIONS,
                    "open connections at most; one more is answered 503 and closed"));
    static final List<String> NAMES = Flag.names(FLAGS);

    private ConnectionFlags() {}

    static ConnectionLimits parse(CliArgs a) {
        return new ConnectionLimits(
                a.intValue("--read-timeout-seconds", ConnectionLimits.DEFAULT_READ_TIMEOUT_SECONDS, 1) * 1000L,
                a.intValue("--idle-timeout-seconds", ConnectionLimits.DEFAULT_IDLE_TIMEOUT_SECONDS, 1) * 1000L,
                a.intValue("--max-connections", ConnectionLimits.DEFAULT_MAX_CONNECTIONS, 1));
    }
}
