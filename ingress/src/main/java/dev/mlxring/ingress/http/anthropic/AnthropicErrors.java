package dev.mlxring.ingress.http.anthropic;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.ingress.http.ApiError;
import dev.mlxring.ingress.http.ErrorShape;

/**
 * Anthropic's error shape, {@code {"type": "error", "error": {"type", "message"}}}, with its
 * status codes: the engine's capacity refusals (503) answer 529 {@code overloaded_error}, as
 * Anthropic's API does, so the official client raises its {@code OverloadedError}. Stateless.
 */
final class AnthropicErrors implements ErrorShape {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Override
    public int status(ApiError e) {
        return e.status() == 503 ? 529 : e.status();
    }

    static String type(int status) {
        return switch (status) {
            case 400, 405, 408, 415 -> "invalid_request_error";
            case 401 -> "authentication_error";
            case 403 -> "permission_error";
            case 404 -> "not_found_error";
            case 413 -> "request_too_large";
            case 429 -> "rate_limit_error";
            case 503, 529 -> "overloaded_error";
            default -> "api_error";
        };
    }

    @Override
    public String body(ApiError e) {
        ObjectNode root = JSON.createObjectNode();
        root.put("type", "error");
        ObjectNode error = root.putObject("error");
        error.put("type", type(status(e)));
        // Anthropic's shape has no "param": the field at fault leads the message (ours already
        // start with it; a message that does not is prefixed).
        String param = e.param();
        boolean named = param == null || e.getMessage().startsWith(param.split("[.\\[]")[0]);
        error.put("message", named ? e.getMessage() : param + ": " + e.getMessage());
        return root.toString();
    }

    @Override
    public String streamEvent(ApiError e) {
        return "event: error\ndata: " + body(e) + "\n\n";
    }
}
