package dev.mlxring.ingress.http;

import io.undertow.server.HttpHandler;
import io.undertow.server.protocol.http.HttpServerConnection;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.xnio.ChannelListener;
import org.xnio.ChannelListeners;
import org.xnio.IoUtils;
import org.xnio.StreamConnection;

/**
 * Every accepted connection passes here before Undertow sees it. Within
 * {@link ConnectionLimits#maxConnections} it is counted, given its {@link ConnectionClock} (fed by
 * an {@link ArrivalConduit} under Undertow's reads) and handed to {@code next}; over the cap it is
 * answered 503 with {@code Retry-After} and closed ({@link RawAnswer}), never dropped silently.
 * {@link #watch} wraps the root handler so each clock sees its exchanges start and end.
 *
 * <p>Thread-safe: connections are accepted on IO threads and close on any thread.
 */
final class ConnectionGate implements ChannelListener<StreamConnection> {
    private final ConnectionLimits limits;
    private final ServerMetrics metrics;
    private final Function<String, ErrorShape> shapes;
    private final ChannelListener<StreamConnection> next;
    private final AtomicInteger open = new AtomicInteger();
    private final Map<StreamConnection, ConnectionClock> clocks = new ConcurrentHashMap<>();
    private final byte[] refusal;

    /**
     * @param shapes the error shape of a route by its path (a body timeout answers in it)
     * @param next Undertow's open listener
     */
    ConnectionGate(
            ConnectionLimits limits,
            ServerMetrics metrics,
            Function<String, ErrorShape> shapes,
            ChannelListener<StreamConnection> next) {
        this.limits = limits;
        this.metrics = metrics;
        this.shapes = shapes;
        this.next = next;
        ApiError busy = new ApiError(
                503,
                "server_overloaded",
                "the server holds its maximum of " + limits.maxConnections()
                        + " connections (--max-connections); retry shortly",
                null,
                "too_many_connections");
        this.refusal = RawAnswer.response(503, "Service Unavailable", ErrorShape.OPENAI.body(busy), "Retry-After: 1");
    }

    /** Connections open now (refused ones not counted). */
    int open() {
        return open.get();
    }

    @Override
    public void handleEvent(StreamConnection connection) {
        if (open.incrementAndGet() > limits.maxConnections()) {
            open.decrementAndGet();
            metrics.connectionRefused();
            try {
                connection.getIoThread().execute(() -> RawAnswer.send(connection, refusal));
            } catch (RejectedExecutionException stopping) {
                IoUtils.safeClose(connection);
            }
            return;
        }
        ConnectionClock clock = new ConnectionClock(connection, limits, metrics, shapes);
        clocks.put(connection, clock);
        connection
                .getSourceChannel()
                .setConduit(new ArrivalConduit(connection.getSourceChannel().getConduit(), clock));
        clock.start();
        try {
            next.handleEvent(connection);
        } finally {
            // Undertow sets its own close listener on the connection: ours runs after it.
            ChannelListener<? super StreamConnection> undertows = connection.getCloseListener();
            connection.setCloseListener(c -> {
                try {
                    ChannelListeners.invokeChannelListener(c, undertows);
                } finally {
                    closed(c, clock);
                }
            });
            if (!connection.isOpen()) {
                closed(connection, clock);
            }
        }
    }

    private void closed(StreamConnection connection, ConnectionClock clock) {
        if (clock.closed()) {
            clocks.remove(connection);
            open.decrementAndGet();
        }
    }

    /** {@code root} with each request's start and end told to its connection's clock. */
    HttpHandler watch(HttpHandler root) {
        return ex -> {
            ConnectionClock clock =
                    ex.getConnection() instanceof HttpServerConnection c ? clocks.get(c.getChannel()) : null;
            if (clock != null) {
                clock.requestStarted(ex);
                ex.addExchangeCompleteListener((exchange, nextListener) -> {
                    try {
                        clock.exchangeEnded();
                    } finally {
                        nextListener.proceed();
                    }
                });
            }
            root.handleRequest(ex);
        };
    }
}
