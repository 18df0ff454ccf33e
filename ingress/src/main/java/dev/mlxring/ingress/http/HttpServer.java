package dev.mlxring.ingress.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.OverloadedException;
import dev.mlxring.pipeline.Session;
import io.undertow.Undertow;
import io.undertow.UndertowOptions;
import io.undertow.server.HttpServerExchange;
import io.undertow.util.Headers;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.function.IntFunction;

/**
 * The OpenAI-compatible HTTP surface over an {@link Engine}: parse, validate, submit, and hand
 * the session to a {@link CompletionResponder}. Handlers never block: the body is received
 * asynchronously, submission is a non-blocking ring claim (full ring → 429), and the response is
 * written from the sink thread as the engine commits tokens.
 */
public final class HttpServer implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final long MAX_BODY_BYTES = 16L << 20;

    /**
     * @param modelId the served model's id ({@code /v1/models}); requests may also name
     *     {@code default_model}
     * @param apiKey required as {@code Authorization: Bearer <key>} on every route but /health; null = open
     */
    public record Config(String host, int port, String modelId, String apiKey, ServerDefaults defaults,
            String fingerprint) {}

    private final Config config;
    private final Engine engine;
    private final IntFunction<String> tokenText;
    private final Undertow undertow;
    private final long startedSeconds = System.currentTimeMillis() / 1000;
    private final ServerMetrics metrics;
    private final InFlight inFlight = new InFlight();
    /** Set once when a graceful shutdown begins: new completions get 503. */
    private volatile boolean draining;

    /** A server whose metrics have no MLX memory gauges (engines without MLX, e.g. in tests). */
    public HttpServer(Config config, Engine engine, IntFunction<String> tokenText) {
        this(config, engine, tokenText, new ServerMetrics(engine, null, 0));
    }

    public HttpServer(Config config, Engine engine, IntFunction<String> tokenText, ServerMetrics metrics) {
        this.config = config;
        this.engine = engine;
        this.tokenText = tokenText;
        this.metrics = metrics;
        this.undertow = Undertow.builder()
                .addHttpListener(config.port(), config.host())
                .setServerOption(UndertowOptions.MAX_ENTITY_SIZE, MAX_BODY_BYTES)
                .setHandler(new ObservedHandler(this::route, metrics, inFlight))
                .build();
    }

    public HttpServer start() {
        undertow.start();
        return this;
    }

    /** The bound port (useful with port 0). */
    public int port() {
        var info = undertow.getListenerInfo().get(0);
        return ((java.net.InetSocketAddress) info.getAddress()).getPort();
    }

    /**
     * Begins a graceful shutdown: from now on new completion requests get 503 (OpenAI's error
     * body, code {@code shutting_down}); requests already accepted go on. Idempotent.
     */
    public void beginDrain() {
        draining = true;
        metrics.draining(true);
    }

    /** HTTP exchanges begun and not yet ended (running completions included). */
    public int inFlight() {
        return inFlight.count();
    }

    /**
     * Waits until every in-flight exchange has ended or {@code deadlineNs} ({@link System#nanoTime})
     * passes; returns how many are left.
     */
    public int awaitIdle(long deadlineNs) throws InterruptedException {
        return inFlight.awaitZero(deadlineNs);
    }

    @Override
    public void close() {
        undertow.stop();
    }

    private void route(HttpServerExchange ex) {
        try {
            String path = ex.getRequestPath();
            if (path.equals("/health")) {
                requireMethod(ex, "GET");
                json(ex, 200, "{\"status\":\"ok\"}");
                return;
            }
            authorize(ex);
            switch (path) {
                case "/metrics" -> {
                    requireMethod(ex, "GET");
                    metrics(ex);
                }
                case "/v1/models" -> {
                    requireMethod(ex, "GET");
                    json(ex, 200, models());
                }
                case "/v1/chat/completions" -> completion(ex, true);
                case "/v1/completions" -> completion(ex, false);
                default -> throw ApiError.notFound("unknown route " + ex.getRequestMethod() + " " + path);
            }
        } catch (ApiError e) {
            ObservedHandler.reject(ex, e);
        }
    }

    private void metrics(HttpServerExchange ex) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(16 << 10);
        try {
            metrics.scrape(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        ex.setStatusCode(200);
        ex.getResponseHeaders().put(Headers.CONTENT_TYPE, metrics.contentType());
        ex.getResponseSender().send(java.nio.ByteBuffer.wrap(out.toByteArray()));
    }

    private static void requireMethod(HttpServerExchange ex, String method) {
        if (!ex.getRequestMethod().toString().equals(method)) {
            throw new ApiError(405, "invalid_request_error", ex.getRequestPath() + " accepts " + method + " only",
                    null, "method_not_allowed");
        }
    }

    private void authorize(HttpServerExchange ex) {
        if (config.apiKey() == null) {
            return;
        }
        String auth = ex.getRequestHeaders().getFirst(Headers.AUTHORIZATION);
        String expected = "Bearer " + config.apiKey();
        if (auth == null || !MessageDigest.isEqual(auth.getBytes(StandardCharsets.UTF_8),
                expected.getBytes(StandardCharsets.UTF_8))) {
            throw new ApiError(401, "invalid_request_error", "missing or invalid API key", null, "invalid_api_key");
        }
    }

    private String models() {
        ObjectNode root = JSON.createObjectNode();
        root.put("object", "list");
        ObjectNode m = root.putArray("data").addObject();
        m.put("id", config.modelId());
        m.put("object", "model");
        m.put("created", startedSeconds);
        m.put("owned_by", "mlx-ring");
        return root.toString();
    }

    private void completion(HttpServerExchange ex, boolean chat) {
        requireMethod(ex, "POST");
        if (draining) {
            throw new ApiError(503, "server_overloaded", "the server is shutting down; retry on another instance",
                    null, "shutting_down");
        }
        ex.getRequestReceiver().receiveFullBytes(
                (exchange, body) -> {
                    try {
                        submit(exchange, body, chat);
                    } catch (ApiError e) {
                        ObservedHandler.reject(exchange, e);
                    } catch (RuntimeException e) {
                        ObservedHandler.internalError(exchange, e);
                    }
                },
                (exchange, e) -> ObservedHandler.reject(exchange, ApiError.invalid(null,
                        "could not read the request body: " + e.getMessage())));
    }

    private void submit(HttpServerExchange ex, byte[] body, boolean chat) {
        RequestRecord rec = RequestRecord.of(ex);
        String id = (chat ? "chatcmpl-" : "cmpl-") + rec.id;
        OpenAiRequest req = OpenAiRequest.parse(body, chat, config.defaults(), id);
        if (!req.model().equals(config.modelId()) && !req.model().equals("default_model")) {
            throw new ApiError(404, "invalid_request_error", "model '" + req.model() + "' is not served here (serving '"
                    + config.modelId() + "')", "model", "model_not_found");
        }
        CompletionResponder responder = new CompletionResponder(ex,
                req, new OpenAiFrames(id, req.model(), chat, config.fingerprint(), tokenText), rec, metrics);
        Session session;
        try {
            session = engine.submit(req.request(), responder);
        } catch (OverloadedException e) {
            throw ApiError.overloaded(429, e.getMessage());
        } catch (IllegalStateException e) {
            throw new ApiError(503, "server_overloaded", "the server is shutting down", null, "shutting_down");
        }
        responder.attach(session);
        // A client that goes away cancels its session at the next safe point.
        ex.getConnection().addCloseListener(c -> session.cancel("client disconnected"));
        // Keep the exchange open when this call stack returns: the sink thread completes it.
        ex.dispatch();
    }

    private static void json(HttpServerExchange ex, int status, String body) {
        ex.setStatusCode(status);
        ex.getResponseHeaders().put(Headers.CONTENT_TYPE, "application/json");
        ex.getResponseSender().send(body, StandardCharsets.UTF_8);
    }
}
