package dev.mlxring.ingress.http;

import dev.mlxring.pipeline.GenerationListener;
import dev.mlxring.pipeline.GenerationRequest;
import dev.mlxring.pipeline.OverloadedException;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.Session;
import io.undertow.server.HttpServerExchange;
import io.undertow.server.ServerConnection;
import io.undertow.util.AttachmentKey;

/**
 * The one request path every ingress codec takes into an engine: the model a request names
 * ({@link #route}), admission by memory, submission with back-pressure (a full request ring
 * answers 429, a closed engine 503), cancellation when the client disconnects, and prep-only
 * token counting. Codecs differ only in how they parse requests and frame output. Thread-safe
 * (the engines and the router are).
 */
public final class EngineGateway {
    private static final com.fasterxml.jackson.core.JsonFactory JSON_FACTORY =
            new com.fasterxml.jackson.core.JsonFactory();
    private final ModelRouter models;
    private final HttpServer.Config config;
    private final ServerMetrics metrics;

    EngineGateway(ModelRouter models, HttpServer.Config config, ServerMetrics metrics) {
        this.models = models;
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
     * The model a request body names in its top-level {@code model} string (the default model when
     * it names none or the body is not a JSON object: parsing then answers the body's own error).
     *
     * @throws ApiError 404 {@code model_not_found}, or 503 when the model failed to load
     * @throws ModelLoading while the model loads: the server handles the request again once it has
     */
    public ModelRoute route(byte[] body) {
        return models.route(modelNamed(body));
    }

    /** The route of a model by its id, as {@code GET /v1/models/{id}} names it. */
    ModelRoute routeNamed(String model) {
        return models.route(model);
    }

    /** The top-level {@code model} string of a JSON object body, or null. */
    static String modelNamed(byte[] body) {
        try (var p = JSON_FACTORY.createParser(body)) {
            if (p.nextToken() != com.fasterxml.jackson.core.JsonToken.START_OBJECT) {
                return null;
            }
            com.fasterxml.jackson.core.JsonToken t;
            while ((t = p.nextToken()) == com.fasterxml.jackson.core.JsonToken.FIELD_NAME) {
                String field = p.currentName();
                t = p.nextToken();
                if (field.equals("model")) {
                    return t == com.fasterxml.jackson.core.JsonToken.VALUE_STRING ? p.getText() : null;
                }
                p.skipChildren();
            }
            return null;
        } catch (java.io.IOException e) {
            return null;
        }
    }

    /**
     * Admits {@code request} on {@code model} by its peak memory ({@link Admission}), then
     * submits it; output goes to {@code listener} on the sink thread and is written through
     * {@code out}. The admission's reservation is returned when the session settles. Keeps the
     * exchange open for the sink thread to complete.
     */
    public Session submit(
            HttpServerExchange ex,
            ModelRoute model,
            GenerationRequest request,
            GenerationListener listener,
            ExchangeWriter out) {
        // the adapter its model names ({@code <model>:<NAME>}), checked against its adapters field's
        // (before admission: a refusal then holds no reservation)
        String adapter = model.defaults().adapters().resolve(request.model(), model.name(), request.adapter());
        if (!java.util.Objects.equals(adapter, request.adapter())) {
            request = request.withAdapter(adapter);
        }
        // Prepared once: the tokens admission counts are the ones prep hands on.
        dev.mlxring.pipeline.PreparedPrompt prepared =
                model.admission().needsPromptTokens() ? prepare(model, request) : null;
        Admission.Reservation held = model.admission()
                .admit(
                        prepared == null ? 0 : prepared.length(),
                        request.maxTokens() != null
                                ? request.maxTokens()
                                : model.defaults().maxTokens());
        Session session;
        out.submitted();
        try {
            session = model.engine().submit(request, prepared, new Releasing(listener, held));
        } catch (OverloadedException e) {
            held.release();
            throw ApiError.overloaded(429, e.getMessage());
        } catch (IllegalStateException e) {
            held.release();
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
    public int promptTokens(ModelRoute model, GenerationRequest request) {
        return prepare(model, request).length();
    }

    private static dev.mlxring.pipeline.PreparedPrompt prepare(ModelRoute model, GenerationRequest request) {
        try {
            return model.engine().prepare(request);
        } catch (RequestException e) {
            throw ApiError.invalid(null, e.getMessage());
        }
    }

    /** A listener that returns its request's memory reservation when the session settles. */
    private record Releasing(GenerationListener listener, Admission.Reservation held) implements GenerationListener {
        @Override
        public void onCommitted(Session session, dev.mlxring.pipeline.CommittedSpan span) {
            listener.onCommitted(session, span);
        }

        @Override
        public void onComplete(Session session, dev.mlxring.pipeline.Outcome outcome) {
            held.release();
            listener.onComplete(session, outcome);
        }

        @Override
        public boolean autoRelease() {
            return listener.autoRelease();
        }
    }
}
