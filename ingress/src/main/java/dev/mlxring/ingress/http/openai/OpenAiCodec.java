package dev.mlxring.ingress.http.openai;

import dev.mlxring.ingress.http.EngineGateway;
import dev.mlxring.ingress.http.ErrorShape;
import dev.mlxring.ingress.http.ExchangeWriter;
import io.undertow.server.HttpServerExchange;
import java.util.function.IntFunction;

/**
 * OpenAI's chat completions and text completions as an ingress codec ({@code POST
 * /v1/chat/completions}, {@code POST /v1/completions}): bodies validated with mlx_lm.server's rules,
 * answered in OpenAI's shapes and error codes over the shared {@link EngineGateway} (model check,
 * back-pressure, cancellation). Stateless; called from Undertow's IO threads.
 */
public final class OpenAiCodec {
    private final EngineGateway gateway;
    private final IntFunction<String> tokenText;

    /** @param tokenText a token id's text, for logprobs' alternatives */
    public OpenAiCodec(EngineGateway gateway, IntFunction<String> tokenText) {
        this.gateway = gateway;
        this.tokenText = tokenText;
    }

    /** {@code POST /v1/chat/completions} when {@code chat}, else {@code POST /v1/completions}. */
    public void completions(HttpServerExchange ex, byte[] body, boolean chat) {
        ExchangeWriter out = gateway.writer(ex, ErrorShape.OPENAI);
        String id = (chat ? "chatcmpl-" : "cmpl-") + out.requestId();
        OpenAiRequest req = OpenAiRequest.parse(body, chat, gateway.config().defaults(), id);
        gateway.checkModel(req.model());
        gateway.submit(
                ex,
                req.request(),
                new CompletionResponder(
                        out,
                        req,
                        new OpenAiFrames(
                                id,
                                req.model(),
                                chat,
                                gateway.config().fingerprint(),
                                tokenText,
                                req.legacyTopLogprobs())),
                out);
    }
}
