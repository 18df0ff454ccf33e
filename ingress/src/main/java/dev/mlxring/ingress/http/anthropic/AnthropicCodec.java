package dev.mlxring.ingress.http.anthropic;

import dev.mlxring.ingress.http.ApiError;
import dev.mlxring.ingress.http.EngineGateway;
import dev.mlxring.ingress.http.ErrorShape;
import dev.mlxring.ingress.http.ExchangeWriter;
import dev.mlxring.ingress.http.ModelRoute;
import io.undertow.server.HttpServerExchange;
import java.util.UUID;

/**
 * Anthropic's Messages API as an ingress codec: {@code POST /v1/messages} (streaming or not) and
 * {@code POST /v1/messages/count_tokens}, answered in Anthropic's shapes and error codes, over
 * the same {@link EngineGateway} (model check, back-pressure, cancellation) as the OpenAI routes.
 * {@code anthropic-version} and {@code anthropic-beta} headers are accepted and not needed.
 * Stateless; called from Undertow's IO threads.
 */
public final class AnthropicCodec {
    /** Errors on the Anthropic routes. */
    public static final ErrorShape ERRORS = new AnthropicErrors();

    private final EngineGateway gateway;

    public AnthropicCodec(EngineGateway gateway) {
        this.gateway = gateway;
    }

    /** Whether {@code path} is an Anthropic route (its errors take Anthropic's shape). */
    public static boolean serves(String path) {
        return path.equals("/v1/messages") || path.startsWith("/v1/messages/");
    }

    /** {@code POST /v1/messages}. */
    public void messages(HttpServerExchange ex, byte[] body) {
        String id = "msg_" + UUID.randomUUID().toString().replace("-", "");
        ModelRoute model = gateway.route(body);
        MessagesRequest req = MessagesRequest.parse(body, model.defaults(), id, false);
        ExchangeWriter out = gateway.writer(ex, ERRORS);
        gateway.submit(ex, model, req.request(), new MessagesResponder(out, req, id), out);
    }

    /**
     * {@code POST /v1/messages/count_tokens}: the prompt rendered and tokenized as a message
     * request would be, on a worker thread (tokenizing a long prompt must not hold an IO thread).
     */
    public void countTokens(HttpServerExchange ex, byte[] body) {
        ModelRoute model = gateway.route(body);
        MessagesRequest req = MessagesRequest.parse(body, model.defaults(), "count", true);
        ExchangeWriter out = gateway.writer(ex, ERRORS);
        ex.dispatch(() -> {
            try {
                out.json(200, "{\"input_tokens\":" + gateway.promptTokens(model, req.request()) + "}");
            } catch (ApiError e) {
                out.error(e, "");
            } catch (RuntimeException e) {
                // prep failed outside its own refusals: a bug, answered as one (the request id names it)
                out.error(
                        new ApiError(
                                500,
                                "server_error",
                                "internal error (request id " + out.requestId() + "): " + e,
                                null,
                                "internal_error"),
                        "");
            }
        });
    }
}
