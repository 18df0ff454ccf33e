package dev.mlxring.ingress.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.ingress.http.anthropic.AnthropicCodec;
import dev.mlxring.ingress.http.openai.OpenAiCodec;
import dev.mlxring.ingress.http.responses.ResponsesCodec;
import dev.mlxring.pipeline.Engine;
import dev.mlxring.pipeline.ExecActivity;
import io.undertow.UndertowOptions;
import io.undertow.server.HttpServerExchange;
import io.undertow.server.protocol.http.HttpContinue;
import io.undertow.util.Headers;
import io.undertow.util.HttpString;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.function.IntFunction;

/**
 * The HTTP surface over an {@link Engine}: OpenAI chat/completions ({@link OpenAiCodec}), Anthropic messages
 * ({@link AnthropicCodec}) and OpenAI responses ({@link ResponsesCodec}), three ingress codecs
 * that parse, validate and submit through one {@link EngineGateway} and frame the same sink
 * output in their own dialect; errors answer in the dialect of the route ({@link ErrorShape}). Handlers never block: the body is received
 * asynchronously, submission is a non-blocking ring claim (full ring → 429), and the response is
 * written from the sink thread as the engine commits tokens.
 */
public final class HttpServer implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** {@code --max-body-bytes} default: far above any chat a model's context holds, far below the heap. */
    public static final long DEFAULT_MAX_BODY_BYTES = 4L << 20;
    /** A body is received whole into one array. */
    public static final long MOST_MAX_BODY_BYTES = 1L << 30;
    /** How far above the body limit Undertow's own entity check sits (more than one read). */
    private static final long ENTITY_SIZE_SLACK_BYTES = 1L << 20;

    /**
     * @param modelId the served model's id ({@code /v1/models}); requests may also name
     *     {@code default_model}
     * @param apiKey required as {@code Authorization: Bearer <key>} or {@code x-api-key: <key>} on every
     *     route but /health; null = open
     * @param maxBodyBytes larger request bodies are refused with 413 before they are read
     * @param allowedOrigins origins a browser may call from (CORS), "*" for any: mlx_lm.server's
     *     {@code --allowed-origins}, whose default is "*"
     * @param connections read and idle timeouts and the connection cap
     */
    public record Config(
            String host,
            int port,
            String modelId,
            String apiKey,
            ServerDefaults defaults,
            String fingerprint,
            long maxBodyBytes,
            java.util.List<String> allowedOrigins,
            ConnectionLimits connections) {
        public Config(
                String host, int port, String modelId, String apiKey, ServerDefaults defaults, String fingerprint) {
            this(host, port, modelId, apiKey, defaults, fingerprint, DEFAULT_MAX_BODY_BYTES);
        }

        public Config(
                String host,
                int port,
                String modelId,
                String apiKey,
                ServerDefaults defaults,
                String fingerprint,
                long maxBodyBytes) {
            this(host, port, modelId, apiKey, defaults, fingerprint, maxBodyBytes, ANY_ORIGIN);
        }

        public Config(
                String host,
                int port,
                String modelId,
                String apiKey,
                ServerDefaults defaults,
                String fingerprint,
                long maxBodyBytes,
                java.util.List<String> allowedOrigins) {
            this(
                    host,
                    port,
                    modelId,
                    apiKey,
                    defaults,
                    fingerprint,
                    maxBodyBytes,
                    allowedOrigins,
                    ConnectionLimits.DEFAULTS);
        }

        /** This configuration with other connection limits. */
        public Config withConnections(ConnectionLimits limits) {
            return new Config(host, port, modelId, apiKey, defaults, fingerprint, maxBodyBytes, allowedOrigins, limits);
        }

        public Config {
            if (maxBodyBytes < 1 || maxBodyBytes > MOST_MAX_BODY_BYTES) {
                throw new IllegalArgumentException(
                        "maxBodyBytes must be in [1, " + MOST_MAX_BODY_BYTES + "], got " + maxBodyBytes);
            }
            allowedOrigins = java.util.List.copyOf(allowedOrigins);
            java.util.Objects.requireNonNull(connections, "connections");
        }
    }

    public static final java.util.List<String> ANY_ORIGIN = java.util.List.of("*");
    private static final HttpString ALLOW_ORIGIN = new HttpString("Access-Control-Allow-Origin");
    private static final HttpString ALLOW_METHODS = new HttpString("Access-Control-Allow-Methods");
    private static final HttpString ALLOW_HEADERS = new HttpString("Access-Control-Allow-Headers");

    private final Config config;
    private final ModelRouter models;
    private final HttpListener listener;
    private final EngineGateway gateway;
    private final OpenAiCodec openAi;
    private final AnthropicCodec anthropic;
    private final ResponsesCodec responses;
    private final long startedSeconds = System.currentTimeMillis() / 1000;
    private final ServerMetrics metrics;
    private final InFlight inFlight = new InFlight();
    /** Set once when a graceful shutdown begins: new completions get 503. */
    private volatile boolean draining;

    /** A server whose metrics have no MLX memory gauges (engines without MLX, e.g. in tests). */
    public HttpServer(Config config, Engine engine, IntFunction<String> tokenText) {
        this(config, engine, tokenText, new ServerMetrics(engine, null, null, 0));
    }

    /** A server of one model, {@code config}'s {@code modelId}, admitting every request it can queue. */
    public HttpServer(Config config, Engine engine, IntFunction<String> tokenText, ServerMetrics metrics) {
        this(
                config,
                ModelRouter.single(
                        new ModelRoute(config.modelId(), engine, config.defaults(), tokenText, Admission.UNBOUNDED)),
                metrics);
    }

    /**
     * A server of the models {@code models} routes to; health and the engine gauges follow its
     * default model ({@link ModelRouter#defaultRoute}).
     */
    public HttpServer(Config config, ModelRouter models, ServerMetrics metrics) {
        this.config = config;
        this.models = models;
        this.metrics = metrics;
        this.gateway = new EngineGateway(models, config, metrics);
        this.openAi = new OpenAiCodec(gateway);
        this.anthropic = new AnthropicCodec(gateway);
        this.responses = new ResponsesCodec(gateway);
        this.listener = new HttpListener(
                config.host(),
                config.port(),
                org.xnio.OptionMap.builder()
                        // A backstop above the receiver's own limit (post()): Undertow's check drops the
                        // connection mid-read, where no 413 can be answered or logged.
                        .set(UndertowOptions.MAX_ENTITY_SIZE, config.maxBodyBytes() + ENTITY_SIZE_SLACK_BYTES)
                        .getMap(),
                new ObservedHandler(this::route, metrics, inFlight),
                open -> new ConnectionGate(config.connections(), metrics, HttpServer::errorShapeOf, open));
    }

    public HttpServer start() {
        metrics.openConnections(listener.start()::open);
        return this;
    }

    /** The bound port (useful with port 0). */
    public int port() {
        return listener.port();
    }

    /** The error shape of the route at {@code path}: Anthropic's for its routes, else OpenAI's. */
    private static ErrorShape errorShapeOf(String path) {
        return AnthropicCodec.serves(path) ? AnthropicCodec.ERRORS : ErrorShape.OPENAI;
    }

    /**
     * Begins a graceful shutdown: from now on new completion requests get 503 (OpenAI's error
     * body, code {@code shutting_down}); requests already accepted go on. Idempotent.
     */
    public void beginDrain() {
        draining = true;
        metrics.draining(true);
    }

    /** Connection close listeners registered so far: one per connection (tests check it stays so). */
    long closeListenersRegistered() {
        return gateway.closeListeners.get();
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
        listener.close();
    }

    private void route(HttpServerExchange ex) {
        String path = ex.getRequestPath();
        ErrorShape shape = AnthropicCodec.serves(path) ? AnthropicCodec.ERRORS : ErrorShape.OPENAI;
        cors(ex);
        if (ex.getRequestMethod().equalToString("OPTIONS")) {
            // A browser's preflight: it carries no credentials, so it is answered before auth.
            ex.setStatusCode(204);
            ex.endExchange();
            return;
        }
        try {
            requireFraming(ex);
            if (path.equals("/health")) {
                requireMethod(ex, "GET");
                health(ex);
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
                case "/v1/chat/completions" -> post(ex, shape, (x, body) -> openAi.completions(x, body, true));
                case "/v1/completions" -> post(ex, shape, (x, body) -> openAi.completions(x, body, false));
                case "/v1/messages" -> post(ex, shape, anthropic::messages);
                case "/v1/messages/count_tokens" -> post(ex, shape, anthropic::countTokens);
                case "/v1/responses" -> post(ex, shape, responses::create);
                default -> {
                    if (path.startsWith(MODELS_PREFIX)) {
                        requireMethod(ex, "GET");
                        json(ex, 200, model(path.substring(MODELS_PREFIX.length())));
                        return;
                    }
                    if (!ResponsesCodec.servesStored(path)) {
                        throw ApiError.notFound("unknown route " + ex.getRequestMethod() + " " + path);
                    }
                    requireMethod(ex, "GET", "DELETE");
                    json(ex, 200, responses.stored(ex.getRequestMethod().toString(), path));
                }
            }
        } catch (ApiError e) {
            if (HttpContinue.requiresContinueResponse(ex) && !HttpContinue.isContinueResponseSent(ex)) {
                // Refused before the client sent its body (it waits for a 100): the final status
                // answers instead, and the connection cannot tell whether a body follows.
                ex.setPersistent(false);
            }
            ObservedHandler.reject(ex, e, shape);
        }
    }

    /**
     * Request framing this server can honour, checked before anything else: a
     * {@code Transfer-Encoding} other than plain {@code chunked} (e.g. {@code gzip, chunked}, whose
     * gzip would be ignored) is 501 (RFC 9112 §6.1), and an {@code Expect} other than
     * {@code 100-continue} is 417 (RFC 9110 §10.1.1). Both close the connection: the body's
     * framing is unknown.
     */
    private static void requireFraming(HttpServerExchange ex) {
        var codings = ex.getRequestHeaders().get(Headers.TRANSFER_ENCODING);
        if (codings != null
                && !(codings.size() == 1 && codings.getFirst().trim().equalsIgnoreCase("chunked"))) {
            ex.setPersistent(false);
            throw new ApiError(
                    501,
                    "invalid_request_error",
                    "Transfer-Encoding '" + String.join(", ", codings)
                            + "' is not supported: send the body with Content-Length or Transfer-Encoding: chunked alone "
                            + "(no content codings)",
                    null,
                    "unsupported_transfer_encoding");
        }
        var expect = ex.getRequestHeaders().get(Headers.EXPECT);
        if (expect != null && !(expect.size() == 1 && expect.getFirst().trim().equalsIgnoreCase("100-continue"))) {
            ex.setPersistent(false);
            throw new ApiError(
                    417,
                    "invalid_request_error",
                    "Expect '" + String.join(", ", expect) + "' is not supported; only 100-continue is",
                    null,
                    "expectation_failed");
        }
    }

    /** mlx_lm.server's CORS headers, on every response (errors included) and preflight. */
    private void cors(HttpServerExchange ex) {
        var headers = ex.getResponseHeaders();
        String origin = ex.getRequestHeaders().getFirst(Headers.ORIGIN);
        if (config.allowedOrigins().contains("*")) {
            headers.put(ALLOW_ORIGIN, "*");
        } else if (origin != null && config.allowedOrigins().contains(origin)) {
            headers.put(ALLOW_ORIGIN, origin);
            headers.put(Headers.VARY, "Origin");
        }
        headers.put(ALLOW_METHODS, "*");
        headers.put(ALLOW_HEADERS, "*");
    }

    /**
     * 200 while every stage runs; 503 with the reason once one is gone or shutdown began. While
     * the exec thread is inside a work unit, {@code exec} names it, its rows and its age, so a
     * stall (one unit running for minutes) shows here while it lasts.
     */
    private void health(HttpServerExchange ex) {
        Engine engine = models.defaultRoute().engine();
        var h = engine.health();
        ObjectNode body = JSON.createObjectNode();
        int status;
        if (draining) {
            // Not ready for new work: load balancers stop routing here while running requests finish.
            status = 503;
            body.put("status", "unavailable");
            body.put("reason", "shutting down");
        } else if (h.ready()) {
            status = 200;
            body.put("status", "ok");
        } else {
            status = 503;
            body.put("status", "unavailable");
            body.put("reason", h.reason());
        }
        ExecActivity.Snapshot unit = engine.execActivity();
        if (unit.busy()) {
            ObjectNode exec = body.putObject("exec");
            exec.put("unit", unit.unit().label());
            exec.put("rows", unit.rows());
            exec.put("age_seconds", Math.round(unit.ageNs() / 1e6) / 1e3);
        }
        json(ex, status, body.toString());
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

    /**
     * The route takes one of {@code methods}, else 405 naming them; where GET is taken, so is
     * HEAD (RFC 9110 §9.3.2: GET's status and headers, no body; Undertow drops the body).
     */
    private static void requireMethod(HttpServerExchange ex, String... methods) {
        if (java.util.List.of(methods).contains("GET")) {
            methods = java.util.stream.Stream.concat(
                            java.util.Arrays.stream(methods), java.util.stream.Stream.of("HEAD"))
                    .toArray(String[]::new);
        }
        if (!java.util.List.of(methods).contains(ex.getRequestMethod().toString())) {
            // RFC 9110: a 405 names the methods the route takes.
            ex.getResponseHeaders().put(Headers.ALLOW, String.join(", ", methods));
            throw new ApiError(
                    405,
                    "invalid_request_error",
                    ex.getRequestPath() + " accepts " + String.join(" or ", methods) + " only",
                    null,
                    "method_not_allowed");
        }
    }

    private void authorize(HttpServerExchange ex) {
        if (config.apiKey() == null) {
            return;
        }
        // OpenAI clients send "Authorization: Bearer KEY", Anthropic clients "x-api-key: KEY".
        String auth = ex.getRequestHeaders().getFirst(Headers.AUTHORIZATION);
        String xApiKey = ex.getRequestHeaders().getFirst("x-api-key");
        if (!matches(auth, "Bearer " + config.apiKey()) && !matches(xApiKey, config.apiKey())) {
            throw new ApiError(401, "invalid_request_error", "missing or invalid API key", null, "invalid_api_key");
        }
    }

    private static boolean matches(String given, String expected) {
        return given != null
                && MessageDigest.isEqual(
                        given.getBytes(StandardCharsets.UTF_8), expected.getBytes(StandardCharsets.UTF_8));
    }

    private static final String MODELS_PREFIX = "/v1/models/";

    private String models() {
        ObjectNode root = JSON.createObjectNode();
        root.put("object", "list");
        models.list(root.putArray("data"), startedSeconds);
        return root.toString();
    }

    /**
     * {@code GET /v1/models/{id}} (OpenAI's retrieve): a served model, by its id or {@code
     * default_model}, or a named adapter by {@code <model>:<NAME>}, as {@code /v1/models} lists
     * it; retrieving loads nothing.
     */
    private String model(String id) {
        String wanted = id.equals("default_model") ? models.defaultRoute().name() : id;
        var all = JSON.createArrayNode();
        models.list(all, startedSeconds);
        java.util.List<String> served = new java.util.ArrayList<>();
        for (var m : all) {
            if (m.path("id").asText().equals(wanted)) {
                return m.toString();
            }
            served.add(m.path("id").asText());
        }
        throw ModelRouter.notFound(id, served);
    }

    /** What a route does with a received POST body; throws {@link ApiError} for a bad request. */
    @FunctionalInterface
    private interface BodyHandler {
        void handle(HttpServerExchange ex, byte[] body);
    }

    /**
     * Every POST route, whatever its API: draining, Content-Type and size checks, the body
     * received asynchronously, then the route's codec; errors in the route's {@code shape}.
     */
    private void post(HttpServerExchange ex, ErrorShape shape, BodyHandler handler) {
        requireMethod(ex, "POST");
        if (draining) {
            throw new ApiError(
                    503,
                    "server_overloaded",
                    "the server is shutting down; retry on another instance",
                    null,
                    "shutting_down");
        }
        requireJsonBody(ex);
        if (HttpContinue.requiresContinueResponse(ex)) {
            // Every check that needs no body has passed: ask for the body (RFC 9110 §10.1.1).
            HttpContinue.sendContinueResponse(ex, new io.undertow.io.IoCallback() {
                @Override
                public void onComplete(HttpServerExchange exchange, io.undertow.io.Sender sender) {
                    receive(exchange, shape, handler);
                }

                @Override
                public void onException(HttpServerExchange exchange, io.undertow.io.Sender sender, IOException e) {
                    exchange.setPersistent(false);
                    exchange.endExchange();
                }
            });
            return;
        }
        receive(ex, shape, handler);
    }

    /** Receives the whole body, then hands it to the route's {@code handler}. */
    private void receive(HttpServerExchange ex, ErrorShape shape, BodyHandler handler) {
        ex.getRequestReceiver().setMaxBufferSize(Math.toIntExact(config.maxBodyBytes()));
        ex.getRequestReceiver()
                .receiveFullBytes((exchange, body) -> handle(exchange, body, shape, handler), (exchange, e) -> {
                    if (e instanceof io.undertow.io.Receiver.RequestToLargeException
                            || e instanceof io.undertow.server.RequestTooBigException) {
                        // A chunked body that grew past the limit while being read.
                        tooLarge(exchange, shape);
                    } else {
                        ObservedHandler.reject(
                                exchange,
                                ApiError.invalid(null, "could not read the request body: " + e.getMessage()),
                                shape);
                    }
                });
    }

    /**
     * Runs the route's {@code handler} on a received body. A request for a model that is loading
     * waits for the load on a virtual thread (never an IO thread), then is handled again.
     */
    private static void handle(HttpServerExchange ex, byte[] body, ErrorShape shape, BodyHandler handler) {
        try {
            handler.handle(ex, body);
        } catch (ModelLoading loading) {
            ex.dispatch(LOAD_WAITERS, exchange -> {
                try {
                    loading.loaded().join();
                } catch (java.util.concurrent.CompletionException | java.util.concurrent.CancellationException e) {
                    // The route, asked again, answers the failed load in its own words.
                }
                handle(exchange, body, shape, handler);
            });
        } catch (ApiError e) {
            ObservedHandler.reject(ex, e, shape);
        } catch (RuntimeException e) {
            ObservedHandler.internalError(ex, e, shape);
        }
    }

    /** Where requests wait for their model's load: a virtual thread each. */
    private static final java.util.concurrent.Executor LOAD_WAITERS =
            java.util.concurrent.Executors.newThreadPerTaskExecutor(
                    Thread.ofVirtual().name("mlxring-load-wait-", 0).factory());

    /**
     * A JSON body within {@code maxBodyBytes}: a declared length beyond it is refused with 413
     * before a byte of it is read; any Content-Type but JSON with 415. A missing Content-Type is
     * taken as JSON, as the OpenAI clients always send one and curl users often forget it.
     */
    private void requireJsonBody(HttpServerExchange ex) {
        String type = ex.getRequestHeaders().getFirst(Headers.CONTENT_TYPE);
        if (type != null) {
            String[] parts = type.split(";");
            String media = parts[0].trim().toLowerCase(java.util.Locale.ROOT);
            if (!media.equals("application/json") && !(media.startsWith("application/") && media.endsWith("+json"))) {
                throw new ApiError(
                        415,
                        "invalid_request_error",
                        "Content-Type must be application/json, got '" + type + "'",
                        null,
                        "unsupported_media_type");
            }
            for (int i = 1; i < parts.length; i++) {
                String[] kv = parts[i].trim().split("=", 2);
                String charset =
                        kv.length == 2 ? kv[1].trim().replace("\"", "").toLowerCase(java.util.Locale.ROOT) : "";
                // JSON is UTF-8 (RFC 8259); a body declared otherwise would be read as what it is not.
                if (kv[0].trim().equalsIgnoreCase("charset") && !charset.equals("utf-8") && !charset.equals("utf8")) {
                    throw new ApiError(
                            415,
                            "invalid_request_error",
                            "JSON bodies must be UTF-8, got charset '" + kv[1].trim() + "'",
                            null,
                            "unsupported_media_type");
                }
            }
        }
        long declared = ex.getRequestContentLength();
        if (declared > config.maxBodyBytes()) {
            ex.setPersistent(false);
            throw tooLargeError(declared);
        }
    }

    private ApiError tooLargeError(long declared) {
        return new ApiError(
                413,
                "invalid_request_error",
                "the request body is "
                        + (declared >= 0 ? declared + " bytes" : "larger than the limit")
                        + "; this server accepts at most "
                        + config.maxBodyBytes() + " bytes (--max-body-bytes)",
                null,
                "request_too_large");
    }

    private void tooLarge(HttpServerExchange ex, ErrorShape shape) {
        // The rest of the body stays unread: the connection cannot carry another request.
        ex.setPersistent(false);
        ObservedHandler.reject(ex, tooLargeError(-1), shape);
    }

    private static void json(HttpServerExchange ex, int status, String body) {
        ex.setStatusCode(status);
        ex.getResponseHeaders().put(Headers.CONTENT_TYPE, "application/json");
        ex.getResponseSender().send(body, StandardCharsets.UTF_8);
    }
}
