package dev.mlxring.ingress.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mlxring.pipeline.Outcome;

/**
 * An error answered with its HTTP status. The fields are OpenAI's ({@code message}, {@code type},
 * {@code param}, {@code code}); {@link #body()} writes OpenAI's shape, and an {@link ErrorShape}
 * writes another API's shape (Anthropic's) from the same error, so the three ingress codecs share
 * one set of errors and each answers it in its own dialect.
 */
public final class ApiError extends RuntimeException {
    private static final ObjectMapper JSON = new ObjectMapper();

    final int status;
    final String type;
    final String param;
    final String code;

    public ApiError(int status, String type, String message, String param, String code) {
        super(message);
        this.status = status;
        this.type = type;
        this.param = param;
        this.code = code;
    }

    public static ApiError invalid(String param, String message) {
        return new ApiError(400, "invalid_request_error", message, param, null);
    }

    public static ApiError notFound(String message) {
        return new ApiError(404, "invalid_request_error", message, null, "not_found");
    }

    public static ApiError overloaded(int status, String message) {
        return new ApiError(status, status == 429 ? "rate_limit_error" : "server_overloaded", message, null, null);
    }

    /**
     * The error of a session that failed: 400 for the request's fault, 503 for capacity, 500
     * (naming the request id, which the log carries with the cause) otherwise.
     */
    public static ApiError of(Outcome outcome, String requestId) {
        return switch (outcome.errorType()) {
            case INVALID_REQUEST, UNSUPPORTED -> invalid(fieldNamedBy(outcome.message()), outcome.message());
            case CONTEXT_LENGTH_EXCEEDED ->
                new ApiError(400, "invalid_request_error", outcome.message(), "messages", "context_length_exceeded");
            case OVERLOADED -> overloaded(503, outcome.message());
            case INTERNAL ->
                new ApiError(
                        500,
                        "server_error",
                        "internal error (request id " + requestId + "): " + outcome.message(),
                        null,
                        "internal_error");
        };
    }

    private static final java.util.regex.Pattern FIELD_FIRST =
            java.util.regex.Pattern.compile("^([a-z][a-z0-9_]*(?:\\[\\d+])?) must ");

    /**
     * The field an engine-side refusal names: plan and exec word theirs field first ("top_k must
     * be in [0, 49152) …", "stop[1] must not be empty"); null for any other message.
     */
    static String fieldNamedBy(String message) {
        if (message == null) {
            return null;
        }
        var m = FIELD_FIRST.matcher(message);
        if (m.find()) {
            return m.group(1);
        }
        m = CONSTRAINT_FIELD.matcher(message);
        return m.find() ? m.group(1) : null;
    }

    /** Structured-output refusals name a dotted field first: "response_format.json_schema.schema: …", "text.format is …". */
    private static final java.util.regex.Pattern CONSTRAINT_FIELD = java.util.regex.Pattern.compile(
            "^((?:response_format|structured_outputs|guided_[a-z]+|text\\.format|output_format|output_config\\.format"
                    + "|tool_choice|tools)[a-zA-Z0-9_.\\[\\]$/~-]*)(?::| is | must )");

    public int status() {
        return status;
    }

    /** OpenAI's error type ({@code invalid_request_error}, {@code rate_limit_error}, ...). */
    public String type() {
        return type;
    }

    /** The request field at fault, or null. */
    public String param() {
        return param;
    }

    public String code() {
        return code;
    }

    /** OpenAI's shape: {@code {"error": {"message", "type", "param", "code"}}}. */
    public String body() {
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
