package dev.mlxring.ingress.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * An error answered in OpenAI's shape:
 * {@code {"error": {"message", "type", "param", "code"}}} with the matching HTTP status.
 */
final class ApiError extends RuntimeException {
    private static final ObjectMapper JSON = new ObjectMapper();

    final int status;
    final String type;
    final String param;
    final String code;

    ApiError(int status, String type, String message, String param, String code) {
        super(message);
        this.status = status;
        this.type = type;
        this.param = param;
        this.code = code;
    }

    static ApiError invalid(String param, String message) {
        return new ApiError(400, "invalid_request_error", message, param, null);
    }

    static ApiError notFound(String message) {
        return new ApiError(404, "invalid_request_error", message, null, "not_found");
    }

    static ApiError overloaded(int status, String message) {
        return new ApiError(status, status == 429 ? "rate_limit_error" : "server_overloaded", message, null, null);
    }

    String body() {
        ObjectNode error = JSON.createObjectNode();
        error.put("message", getMessage());
        error.put("type", type);
        if (param == null) {
            error.putNull("param");
        } else {
            error.put("param", param);
        }
        if (code == null) {
            error.putNull("code");
        } else {
            error.put("code", code);
        }
        ObjectNode root = JSON.createObjectNode();
        root.set("error", error);
        return root.toString();
    }
}
