package dev.mlxring.ingress.http.openai;

import dev.mlxring.ingress.http.EngineGateway;
import dev.mlxring.ingress.http.ErrorShape;
import dev.mlxring.ingress.http.ExchangeWriter;
import dev.mlxring.ingress.http.ModelRoute;
import io.undertow.server.HttpServerExchange;

/**
 * OpenAI's chat completions and text completions as an ingress codec ({@code POST
 * /v1/chat/completions}, {@code POST /v1/completions}): bodies validated with mlx_lm.server's rules,
 * answered in OpenAI's shapes and error codes over the shared {@link EngineGateway} (model check,
 * back-pressure, cancellation). Stateless; called from Undertow's IO threads.
 */
public final class OpenAiCodec {
    private final EngineGateway gateway;

    /** Token texts (logprobs' alternatives) come from the model each request names ({@link ModelRoute#tokenText}). */
    public OpenAiCodec(EngineGateway gateway) {
        this.gateway = gateway;
    }

    /** {@code POST /v1/chat/completions} when {@code chat}, else {@code POST /v1/completions}. */
    public void completions(HttpServerExchange ex, byte[] body, boolean chat) {
        ExchangeWriter out = gateway.writer(ex, ErrorShape.OPENAI);
        String id = (chat ? "chatcmpl-" : "cmpl-") + out.requestId();
        ModelRoute model = gateway.route(body);
        OpenAiRequest req = OpenAiRequest.parse(body, chat, model.defaults(), id);
        gateway.submit(
                ex,
                model,
                req.request(),
                new CompletionResponder(
                        out,
                        req,
                        new OpenAiFrames(
                                id,
                                req.model(),
                                chat,
                                gateway.config().fingerprint(),
                                model.tokenText(),
                                req.legacyTopLogprobs())),
                out);
    }
}
