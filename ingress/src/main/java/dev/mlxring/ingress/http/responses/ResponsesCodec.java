package dev.mlxring.ingress.http.responses;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.ingress.http.ApiError;
import dev.mlxring.ingress.http.EngineGateway;
import dev.mlxring.ingress.http.ErrorShape;
import dev.mlxring.ingress.http.ExchangeWriter;
import dev.mlxring.ingress.http.ModelRoute;
import io.undertow.server.HttpServerExchange;
import java.util.UUID;

/**
 * OpenAI's Responses API as an ingress codec: {@code POST /v1/responses} (streaming or not),
 * {@code GET} and {@code DELETE /v1/responses/{id}}, with stored responses kept in memory for
 * {@code previous_response_id}. Generation goes through the same {@link EngineGateway} as the
 * other routes; errors take OpenAI's shape. Thread-safe (the store is).
 */
public final class ResponsesCodec {
    /** How many stored responses are kept (the oldest is evicted first). */
    public static final int STORE_CAPACITY = 1024;

    private static final String PREFIX = "/v1/responses/";
    private static final ObjectMapper JSON = new ObjectMapper();

    private final EngineGateway gateway;
    private final ResponseStore store;

    public ResponsesCodec(EngineGateway gateway) {
        this(gateway, STORE_CAPACITY);
    }

    ResponsesCodec(EngineGateway gateway, int capacity) {
        this.gateway = gateway;
        this.store = new ResponseStore(capacity);
    }

    /** Whether {@code path} names one stored response. */
    public static boolean servesStored(String path) {
        return path.startsWith(PREFIX) && path.length() > PREFIX.length() && path.indexOf('/', PREFIX.length()) < 0;
    }

    /** {@code POST /v1/responses}. */
    public void create(HttpServerExchange ex, byte[] body) {
        String id = "resp_" + UUID.randomUUID().toString().replace("-", "");
        ModelRoute model = gateway.route(body);
        ResponsesRequest req = ResponsesRequest.parse(body, model.defaults(), id, prior -> {
            ResponseStore.Stored s = store.get(prior);
            return s == null ? null : s.conversation();
        });
        ExchangeWriter out = gateway.writer(ex, ErrorShape.OPENAI);
        gateway.submit(ex, model, req.request(), new ResponsesResponder(out, req, store, id), out);
    }

    /** {@code GET /v1/responses/{id}} (the stored response) or {@code DELETE} (removes it): the JSON body. */
    public String stored(String method, String path) {
        String id = path.substring(PREFIX.length());
        if (method.equals("DELETE")) {
            if (!store.remove(id)) {
                throw notFound(id);
            }
            ObjectNode deleted = JSON.createObjectNode();
            deleted.put("id", id);
            deleted.put("object", "response");
            deleted.put("deleted", true);
            return deleted.toString();
        }
        ResponseStore.Stored s = store.get(id);
        if (s == null) {
            throw notFound(id);
        }
        return s.response().toString();
    }

    private static ApiError notFound(String id) {
        return new ApiError(404, "invalid_request_error", "no stored response with id '" + id + "'", null, "not_found");
    }
}
