package dev.mlxring.ingress.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.ingress.http.anthropic.AnthropicCodec;
import dev.mlxring.ingress.http.responses.ResponsesCodec;
import dev.mlxring.pipeline.Engine;
import io.undertow.Undertow;
import io.undertow.UndertowOptions;
import io.undertow.server.HttpServerExchange;
import io.undertow.server.RequestTooBigException;
import io.undertow.util.Headers;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.UUID;
import java.util.function.IntFunction;

/**
 * The HTTP surface over an {@link Engine}: OpenAI chat/completions (here), Anthropic messages
 * ({@link AnthropicCodec}) and OpenAI responses ({@link ResponsesCodec}), three ingress codecs
 * that parse, validate and submit through one {@link EngineGateway} and frame the same sink
 * output in their own dialect; errors answer in the dialect of the route. Handlers never block: the body is received
 * asynchronously, submission is a non-blocking ring claim (full ring → 429), and the response is
 * written from the sink thread as the engine commits tokens.
 */
public final class HttpServer implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final long MAX_BODY_BYTES = 16L << 20;

    /**
     * @param modelId the served model's id ({@code /v1/models}); requests may also name
     *     {@code default_model}
     * @param apiKey required as {@code Authorization: Bearer <key>} or {@code x-api-key: <key>} on every
     *     route but /health; null = open
     */
    public record Config(String host, int port, String modelId, String apiKey, ServerDefaults defaults,
            String fingerprint) {}

    private final Config config;
    private final Engine engine;
    private final IntFunction<String> tokenText;
    private final Undertow undertow;
    private final EngineGateway gateway;
    private final AnthropicCodec anthropic;
    private final ResponsesCodec responses;
    private final long startedSeconds = System.currentTimeMillis() / 1000;

    public HttpServer(Config config, Engine engine, IntFunction<String> tokenText) {
        this.config = config;
        this.engine = engine;
        this.tokenText = tokenText;
        this.gateway = new EngineGateway(engine, config);
        this.anthropic = new AnthropicCodec(gateway);
        this.responses = new ResponsesCodec(gateway);
        this.undertow = Undertow.builder()
                .addHttpListener(config.port(), config.host())
                .setServerOption(UndertowOptions.MAX_ENTITY_SIZE, MAX_BODY_BYTES)
                .setHandler(this::route)
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

    @Override
    public void close() {
        undertow.stop();
    }

    private void route(HttpServerExchange ex) {
        String path = ex.getRequestPath();
        ErrorShape shape = AnthropicCodec.serves(path) ? AnthropicCodec.ERRORS : ErrorShape.OPENAI;
        try {
            if (path.equals("/health")) {
                requireMethod(ex, "GET");
                json(ex, 200, "{\"status\":\"ok\"}");
                return;
            }
            authorize(ex);
            switch (path) {
                case "/v1/models" -> {
                    requireMethod(ex, "GET");
                    json(ex, 200, models());
                }
                case "/v1/chat/completions" -> post(ex, shape, (x, body) -> submit(x, body, true));
                case "/v1/completions" -> post(ex, shape, (x, body) -> submit(x, body, false));
                case "/v1/messages" -> post(ex, shape, anthropic::messages);
                case "/v1/messages/count_tokens" -> post(ex, shape, anthropic::countTokens);
                case "/v1/responses" -> post(ex, shape, responses::create);
                default -> {
                    if (!ResponsesCodec.servesStored(path)) {
                        throw ApiError.notFound("unknown route " + ex.getRequestMethod() + " " + path);
                    }
                    requireMethod(ex, "GET", "DELETE");
                    json(ex, 200, responses.stored(ex.getRequestMethod().toString(), path));
                }
            }
        } catch (ApiError e) {
            json(ex, shape.status(e), shape.body(e));
        }
    }

    private static ApiError tooLarge() {
        return new ApiError(413, "invalid_request_error", "the request body is larger than " + (MAX_BODY_BYTES >> 20)
                + " MiB", null, "request_too_large");
    }

    private static void requireMethod(HttpServerExchange ex, String... methods) {
        if (!java.util.List.of(methods).contains(ex.getRequestMethod().toString())) {
            throw new ApiError(405, "invalid_request_error", ex.getRequestPath() + " accepts "
                    + String.join(" or ", methods) + " only", null, "method_not_allowed");
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
        return given != null && MessageDigest.isEqual(given.getBytes(StandardCharsets.UTF_8),
                expected.getBytes(StandardCharsets.UTF_8));
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

    /** What a route does with a received POST body; throws {@link ApiError} for a bad request. */
    @FunctionalInterface
    private interface BodyHandler {
        void handle(HttpServerExchange ex, byte[] body);
    }

    /** Every POST route: the body arrives asynchronously, then the route's codec handles it. */
    private static void post(HttpServerExchange ex, ErrorShape shape, BodyHandler handler) {
        requireMethod(ex, "POST");
        if (ex.getRequestContentLength() > MAX_BODY_BYTES) {
            throw tooLarge(); // answered before the body is read
        }
        ex.getRequestReceiver().receiveFullBytes(
                (exchange, body) -> {
                    try {
                        handler.handle(exchange, body);
                    } catch (ApiError e) {
                        json(exchange, shape.status(e), shape.body(e));
                    }
                },
                (exchange, e) -> {
                    ApiError error = e instanceof RequestTooBigException ? tooLarge()
                            : ApiError.invalid(null, "could not read the request body: " + e.getMessage());
                    json(exchange, shape.status(error), shape.body(error));
                });
    }

    private void submit(HttpServerExchange ex, byte[] body, boolean chat) {
        String id = (chat ? "chatcmpl-" : "cmpl-") + UUID.randomUUID();
        OpenAiRequest req = OpenAiRequest.parse(body, chat, config.defaults(), id);
        gateway.checkModel(req.model());
        ExchangeWriter out = new ExchangeWriter(ex, ErrorShape.OPENAI);
        gateway.submit(ex, req.request(), new CompletionResponder(out,
                req, new OpenAiFrames(id, req.model(), chat, config.fingerprint(), tokenText)), out);
    }

    private static void json(HttpServerExchange ex, int status, String body) {
        ex.setStatusCode(status);
        ex.getResponseHeaders().put(Headers.CONTENT_TYPE, "application/json");
        ex.getResponseSender().send(body, StandardCharsets.UTF_8);
    }
}
