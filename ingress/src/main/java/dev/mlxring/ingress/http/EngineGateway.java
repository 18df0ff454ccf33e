package dev.mlxring.ingress.http;

import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.GenerationListener;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.OverloadedException;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.Session;
import io.undertow.server.HttpServerExchange;
import io.undertow.server.ServerConnection;
import io.undertow.util.AttachmentKey;

/**
 * The one request path every ingress codec takes into the engine: the served-model check,
 * submission with back-pressure (a full request ring answers 429, a closed engine 503),
 * cancellation when the client disconnects, and prep-only token counting. Codecs differ only in
 * how they parse requests and frame output. Thread-safe (the engine is).
 */
public final class EngineGateway {
    private final Engine engine;
    private final HttpServer.Config config;
    private final ServerMetrics metrics;

    EngineGateway(Engine engine, HttpServer.Config config, ServerMetrics metrics) {
        this.engine = engine;
        this.config = config;
        this.metrics = metrics;
    }

    /** The exchange side of one session, answering errors in {@code shape}. */
    public ExchangeWriter writer(HttpServerExchange ex, ErrorShape shape) {
        return new ExchangeWriter(ex, shape, metrics);
    }

    public HttpServer.Config config() {
        return config;
    }

    /**
     * A request may name the served model, {@code default_model} or a named adapter's
     * {@code <model>:<NAME>} ({@link AdapterNames}); anything else is 404 naming it.
     */
    public void checkModel(String model) {
        AdapterNames adapters = config.defaults().adapters();
        if (!adapters.serves(model, config.modelId())) {
            throw new ApiError(
                    404,
                    "invalid_request_error",
                    "model '" + model + "' is not served here (serving "
                            + String.join(
                                    ", ",
                                    adapters.modelIds(config.modelId()).stream()
                                            .map(m -> "'" + m + "'")
                                            .toList())
                            + ")",
                    "model",
                    "model_not_found");
        }
    }

    /**
     * Submits {@code request}; output goes to {@code listener} on the sink thread and is written
     * through {@code out}. Keeps the exchange open for the sink thread to complete.
     */
    public Session submit(
            HttpServerExchange ex, GenerationRequest request, GenerationListener listener, ExchangeWriter out) {
        Session session;
        // the adapter its model names ({@code <model>:<NAME>}), checked against its adapters field's
        String adapter = config.defaults().adapters().resolve(request.model(), config.modelId(), request.adapter());
        if (!java.util.Objects.equals(adapter, request.adapter())) {
            request = request.withAdapter(adapter);
        }
        out.submitted();
        try {
            session = engine.submit(request, listener);
        } catch (OverloadedException e) {
            throw ApiError.overloaded(429, e.getMessage());
        } catch (IllegalStateException e) {
            // EngineUnavailableException: closing, or a stage thread is gone (health says which).
            throw new ApiError(
                    503,
                    "server_overloaded",
                    "the server cannot take requests: " + e.getMessage(),
                    null,
                    "shutting_down");
        }
        out.attach(session);
        // A client that goes away cancels its session at the next safe point; the watch closes
        // the connection as soon as the client does, even while nothing is being written.
        ConnectionSession.of(ex, this).hold(ex, session);
        out.watchForDisconnect();
        // Keep the exchange open when this call stack returns: the sink thread completes it.
        ex.dispatch();
        return session;
    }

    /** Close listeners registered, one per connection that submitted (a test's window on the leak it prevents). */
    final java.util.concurrent.atomic.AtomicLong closeListeners = new java.util.concurrent.atomic.AtomicLong();

    /**
     * The session running on a connection, cancelled if the connection closes. One close listener
     * per connection, not per request: Undertow never removes one, so a listener per request kept
     * every past session of a keep-alive connection reachable for as long as it stayed open. An
     * HTTP/1.1 connection runs one exchange at a time (pipelined ones in turn), so one slot holds it.
     */
    private static final class ConnectionSession implements ServerConnection.CloseListener {
        private static final AttachmentKey<ConnectionSession> KEY = AttachmentKey.create(ConnectionSession.class);
        private volatile Session session;

        /** The connection's holder, registered on first use (on the exchange's thread, one exchange at a time). */
        static ConnectionSession of(HttpServerExchange ex, EngineGateway gateway) {
            ServerConnection c = ex.getConnection();
            ConnectionSession held = c.getAttachment(KEY);
            if (held == null) {
                held = new ConnectionSession();
                c.putAttachment(KEY, held);
                c.addCloseListener(held);
                gateway.closeListeners.incrementAndGet();
            }
            return held;
        }

        void hold(HttpServerExchange ex, Session s) {
            session = s;
            ex.addExchangeCompleteListener((exchange, next) -> {
                if (session == s) {
                    session = null;
                }
                next.proceed();
            });
        }

        @Override
        public void closed(ServerConnection connection) {
            Session s = session;
            if (s != null) {
                s.cancel("client disconnected");
            }
        }
    }

    /**
     * The prompt tokens {@code request} would have: prep's rendering and tokenization, no
     * generation. Prep's refusals are 400s, as they would be for a submitted request.
     */
    public int promptTokens(GenerationRequest request) {
        try {
            return engine.prepare(request).length();
        } catch (RequestException e) {
            throw ApiError.invalid(null, e.getMessage());
        }
    }
}
