package dev.mlxring.ingress.http;

/**
 * How long the server waits on a client that is sending nothing it can use, and how many
 * connections it holds at once.
 *
 * <p>{@code readTimeoutMs} bounds the reading of one request: its request line and headers must
 * arrive within it of the request's first byte (else 408 and the connection is closed), and its
 * body within it of the headers' end (else 408 in the route's error shape, and close). It never
 * bounds a response: a generation runs, and a client reads its stream, as long as they take.
 * {@code idleTimeoutMs} closes a connection on which no request has begun for that long (a new
 * connection, or a keep-alive one between requests). Over {@code maxConnections} open
 * connections, a new one is answered 503 with {@code Retry-After} and closed.
 *
 * @param readTimeoutMs {@code --read-timeout-seconds} × 1000; at least 1
 * @param idleTimeoutMs {@code --idle-timeout-seconds} × 1000; at least 1
 * @param maxConnections {@code --max-connections}; at least 1
 */
public record ConnectionLimits(long readTimeoutMs, long idleTimeoutMs, int maxConnections) {
    /** {@code --read-timeout-seconds} default. */
    public static final int DEFAULT_READ_TIMEOUT_SECONDS = 30;
    /** {@code --idle-timeout-seconds} default: what a keep-alive client had before the flag. */
    public static final int DEFAULT_IDLE_TIMEOUT_SECONDS = 60;
    /** {@code --max-connections} default. */
    public static final int DEFAULT_MAX_CONNECTIONS = 1024;
    /** The defaults: 30 s to read a request, 60 s idle, 1024 connections. */
    public static final ConnectionLimits DEFAULTS = new ConnectionLimits(
            DEFAULT_READ_TIMEOUT_SECONDS * 1000L, DEFAULT_IDLE_TIMEOUT_SECONDS * 1000L, DEFAULT_MAX_CONNECTIONS);

    public ConnectionLimits {
        if (readTimeoutMs < 1 || idleTimeoutMs < 1 || maxConnections < 1) {
            throw new IllegalArgumentException(
                    "readTimeoutMs, idleTimeoutMs and maxConnections must be at least 1, got " + readTimeoutMs + ", "
                            + idleTimeoutMs + ", " + maxConnections);
        }
    }
}
