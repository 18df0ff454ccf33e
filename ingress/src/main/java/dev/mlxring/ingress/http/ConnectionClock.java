package dev.mlxring.ingress.http;

import io.undertow.server.Connectors;
import io.undertow.server.HttpServerExchange;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.xnio.IoUtils;
import org.xnio.StreamConnection;
import org.xnio.XnioExecutor;
import org.xnio.conduits.ConduitStreamSourceChannel;

/**
 * One connection's deadlines ({@link ConnectionLimits}): while it waits for a request, the idle
 * timeout; from a request's first byte to the end of its headers, the read timeout; from there to
 * the end of its body, the read timeout again. While a request is handled with its body read —
 * a generation, however long, and the writing of its response, however slowly the client reads —
 * no deadline runs.
 *
 * <p>What a deadline does: idle, the connection is closed; headers, it is answered 408 in OpenAI's
 * error shape (the route is not known yet) and closed; body, the exchange is answered 408 in its
 * route's error shape with {@code Connection: close} where no response has begun, else closed.
 * Each is counted in {@link ServerMetrics#connectionTimedOut} by its kind.
 *
 * <p>Threading: {@link #bytesArrived} and the deadlines run on the connection's IO thread, the
 * exchange events on the threads that start and end exchanges; the state is guarded by this
 * object, and the deadline's I/O runs outside the lock.
 */
final class ConnectionClock {
    private enum State {
        WAITING,
        HEADERS,
        BODY,
        HANDLING,
        TIMED_OUT,
        CLOSED
    }

    private final StreamConnection connection;
    private final ConnectionLimits limits;
    private final ServerMetrics metrics;
    private final Function<String, ErrorShape> shapes;
    private State state = State.WAITING;
    /** The exchange whose body is awaited (state BODY). */
    private HttpServerExchange exchange;

    private XnioExecutor.Key deadline;
    /** Bumped at every state change: a deadline scheduled before it is stale. */
    private long epoch;

    ConnectionClock(
            StreamConnection connection,
            ConnectionLimits limits,
            ServerMetrics metrics,
            Function<String, ErrorShape> shapes) {
        this.connection = connection;
        this.limits = limits;
        this.metrics = metrics;
        this.shapes = shapes;
    }

    /** The connection is open and waits for its first request. */
    synchronized void start() {
        enter(State.WAITING, limits.idleTimeoutMs());
    }

    /** Bytes were read from the connection: while waiting, a request has begun. */
    synchronized void bytesArrived() {
        if (state == State.WAITING) {
            enter(State.HEADERS, limits.readTimeoutMs());
        }
    }

    /** A request's headers are complete and its handler starts; its body, if any, is still to come. */
    synchronized void requestStarted(HttpServerExchange ex) {
        if (state == State.TIMED_OUT || state == State.CLOSED) {
            return;
        }
        if (ex.isRequestComplete()) {
            enter(State.HANDLING, 0);
        } else {
            exchange = ex;
            enter(State.BODY, limits.readTimeoutMs());
        }
    }

    /** The exchange ended: the connection waits for its next request. */
    synchronized void exchangeEnded() {
        if (state != State.TIMED_OUT && state != State.CLOSED) {
            enter(State.WAITING, limits.idleTimeoutMs());
        }
    }

    /** The connection closed; true the first time (the caller counts it out once). */
    synchronized boolean closed() {
        if (state == State.CLOSED) {
            return false;
        }
        enter(State.CLOSED, 0);
        return true;
    }

    /** Moves to {@code next}, cancelling the running deadline and, with {@code timeoutMs > 0}, starting its own. */
    private void enter(State next, long timeoutMs) {
        state = next;
        if (next != State.BODY) {
            exchange = null;
        }
        long at = ++epoch;
        if (deadline != null) {
            deadline.remove();
            deadline = null;
        }
        if (timeoutMs > 0) {
            try {
                deadline = connection.getIoThread().executeAfter(() -> expire(at), timeoutMs, TimeUnit.MILLISECONDS);
            } catch (RejectedExecutionException shuttingDown) {
                // The server is stopping: every connection is being closed anyway.
            }
        }
    }

    /** A deadline passed (IO thread). */
    private void expire(long at) {
        State expired;
        HttpServerExchange ex;
        synchronized (this) {
            if (at != epoch) {
                return;
            }
            deadline = null;
            ex = exchange;
            if (state == State.BODY && ex.isRequestComplete()) {
                // The body was read in time; the handler runs on.
                enter(State.HANDLING, 0);
                return;
            }
            if (state != State.WAITING && state != State.HEADERS && state != State.BODY) {
                return;
            }
            expired = state;
            enter(State.TIMED_OUT, 0);
        }
        switch (expired) {
            case WAITING -> {
                metrics.connectionTimedOut("idle");
                IoUtils.safeClose(connection);
            }
            case HEADERS -> {
                metrics.connectionTimedOut("header");
                ApiError e = timeout("headers");
                RawAnswer.send(connection, RawAnswer.response(408, "Request Timeout", ErrorShape.OPENAI.body(e)));
            }
            default -> {
                metrics.connectionTimedOut("body");
                bodyTimedOut(ex);
            }
        }
    }

    private void bodyTimedOut(HttpServerExchange ex) {
        if (ex.isResponseStarted()) {
            IoUtils.safeClose(connection);
            return;
        }
        // The body's reader (Undertow's receiver) is stopped where it waits, the request is taken
        // as ended (its rest is never read), and the connection closes after the answer.
        ConduitStreamSourceChannel source = connection.getSourceChannel();
        source.suspendReads();
        source.setReadListener(null);
        Connectors.terminateRequest(ex);
        ex.setPersistent(false);
        ObservedHandler.reject(ex, timeout("body"), shapes.apply(ex.getRequestPath()));
    }

    private ApiError timeout(String part) {
        return new ApiError(
                408,
                "invalid_request_error",
                "the request's " + part + " did not arrive within " + limits.readTimeoutMs()
                        + " ms (--read-timeout-seconds)",
                null,
                "request_timeout");
    }
}
