package dev.mlxring.ingress.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.pipeline.SamplingSpec;
import java.util.ArrayList;
import java.util.List;

/**
 * Typed, range-checked access to one JSON object of a request body, shared by the three ingress
 * codecs (OpenAI chat/completions, Anthropic messages, OpenAI responses) so that they validate the
 * same field the same way. Absent or null means "not given"; every violation is an
 * {@link ApiError#invalid} naming the field (with {@code prefix}, e.g. {@code stream_options.}).
 * Immutable.
 */
public record RequestFields(JsonNode node, String prefix) {
    private static final ObjectMapper JSON = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    public RequestFields(JsonNode node) {
        this(node, "");
    }

    /** Stop sequences per request, and characters per sequence (the sink holds back that much text). */
    public static final int MAX_STOP_SEQUENCES = 16;

    public static final int MAX_STOP_CHARS = 1024;

    /**
     * Parses a request body that must be one JSON object (invalid JSON or UTF-8: 400) and passes
     * {@link JsonBodyChecks} (bounded nesting, no lone surrogates).
     */
    public static JsonNode parseObject(byte[] body) {
        JsonNode root;
        try {
            root = JSON.readTree(body);
        } catch (JsonProcessingException e) {
            throw ApiError.invalid(null, "request body is not valid JSON: " + e.getOriginalMessage());
        } catch (java.io.IOException e) {
            throw ApiError.invalid(null, "request body is not valid JSON: " + e.getMessage());
        }
        if (root == null || !root.isObject()) {
            throw ApiError.invalid(null, "request body must be a JSON object");
        }
        JsonBodyChecks.check(root);
        return root;
    }

    private String name(String field) {
        return prefix + field;
    }

    /** The field's value, or null when absent or JSON null. */
    public JsonNode get(String field) {
        JsonNode v = node.get(field);
        return v == null || v.isNull() ? null : v;
    }

    public JsonNode required(String field) {
        JsonNode v = get(field);
        if (v == null) {
            throw ApiError.invalid(name(field), name(field) + " is required");
        }
        return v;
    }

    public boolean bool(String field, boolean dflt) {
        JsonNode v = get(field);
        if (v == null) {
            return dflt;
        }
        if (!v.isBoolean()) {
            throw ApiError.invalid(name(field), name(field) + " must be a boolean");
        }
        return v.booleanValue();
    }

    public String string(String field, String dflt) {
        JsonNode v = get(field);
        if (v == null) {
            return dflt;
        }
        if (!v.isTextual()) {
            throw ApiError.invalid(name(field), name(field) + " must be a string");
        }
        return v.asText();
    }

    public Integer integer(String field, Integer dflt) {
        JsonNode v = get(field);
        if (v == null) {
            return dflt;
        }
        if (!v.isIntegralNumber() || !v.canConvertToInt()) {
            throw ApiError.invalid(name(field), name(field) + " must be an integer");
        }
        return v.intValue();
    }

    public Integer intRange(String field, int min, int max) {
        Integer v = integer(field, null);
        if (v != null && (v < min || v > max)) {
            throw ApiError.invalid(
                    name(field),
                    name(field) + " must be "
                            + (max == Integer.MAX_VALUE ? "at least " + min : "between " + min + " and " + max));
        }
        return v;
    }

    public Long longRange(String field, long min, long max) {
        JsonNode v = get(field);
        if (v == null) {
            return null;
        }
        if (!v.isIntegralNumber() || !v.canConvertToLong() || v.longValue() < min || v.longValue() > max) {
            throw ApiError.invalid(name(field), name(field) + " must be an integer between " + min + " and " + max);
        }
        return v.longValue();
    }

    public Double number(String field, double min, double max) {
        JsonNode v = get(field);
        if (v == null) {
            return null;
        }
        if (!v.isNumber()) {
            throw ApiError.invalid(name(field), name(field) + " must be a number");
        }
        double d = v.doubleValue();
        if (!(d >= min && d <= max)) {
            throw ApiError.invalid(name(field), name(field) + " must be between " + fmt(min) + " and " + fmt(max));
        }
        return d;
    }

    /**
     * The sampling fields Anthropic Messages and Responses share: {@code temperature} (0 to
     * {@code maxTemperature}), {@code top_p} (0 to 1) and {@code top_k} (a non-negative integer);
     * an absent field keeps the engine's default.
     */
    public SamplingSpec temperatureTopPTopK(double maxTemperature) {
        return new SamplingSpec(
                number("temperature", 0, maxTemperature),
                number("top_p", 0, 1),
                intRange("top_k", 0, Integer.MAX_VALUE),
                null,
                null,
                null,
                null,
                null,
                null,
                null,
                null,
                null);
    }

    private static String fmt(double d) {
        return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
    }

    /**
     * A token limit: absent is null (plan applies the server's default) unless {@code required};
     * at least 1, and below the model's context (the prompt needs a token too; plan checks prompt
     * + limit exactly): else 400 {@code context_length_exceeded}.
     */
    public Integer maxTokens(String field, boolean required, ServerDefaults defaults) {
        JsonNode raw = get(field);
        if (raw != null
                && raw.isIntegralNumber()
                && !raw.canConvertToInt()
                && raw.bigIntegerValue().signum() > 0) {
            throw tooManyTokens(field, defaults, raw.asText());
        }
        Integer v = integer(field, null);
        if (v == null) {
            if (required) {
                throw ApiError.invalid(name(field), name(field) + " is required");
            }
            return null;
        }
        if (v < 1) {
            throw ApiError.invalid(name(field), name(field) + " must be at least 1");
        }
        if (v >= defaults.maxContextTokens()) {
            throw tooManyTokens(field, defaults, v.toString());
        }
        return v;
    }

    private ApiError tooManyTokens(String field, ServerDefaults defaults, String got) {
        return new ApiError(
                400,
                "invalid_request_error",
                name(field) + " is too large: it must be at most "
                        + (defaults.maxContextTokens() - 1) + ": this model's maximum context length is "
                        + defaults.maxContextTokens() + " tokens and the prompt needs at least one; got " + got,
                name(field),
                "context_length_exceeded");
    }

    /**
     * Stop strings: an array (or, with {@code allowSingleString}, a string) of at most 16
     * non-empty strings of at most 1024 characters each.
     */
    public List<String> stopStrings(String field, boolean allowSingleString) {
        JsonNode s = get(field);
        String param = name(field);
        if (s == null) {
            return List.of();
        }
        if (s.isTextual() && allowSingleString) {
            return List.of(stopString(s, param, param));
        }
        if (!s.isArray()) {
            throw ApiError.invalid(
                    param, param + " must be " + (allowSingleString ? "a string or " : "") + "an array of strings");
        }
        if (s.size() > MAX_STOP_SEQUENCES) {
            throw ApiError.invalid(
                    param, param + " may hold at most " + MAX_STOP_SEQUENCES + " sequences, got " + s.size());
        }
        List<String> out = new ArrayList<>();
        for (int i = 0; i < s.size(); i++) {
            out.add(stopString(s.get(i), param, param + "[" + i + "]"));
        }
        return out;
    }

    private static String stopString(JsonNode x, String param, String at) {
        if (!x.isTextual()) {
            throw ApiError.invalid(param, at + " must be a string");
        }
        String v = x.textValue();
        if (v.isEmpty()) {
            throw ApiError.invalid(param, at + " must not be empty");
        }
        if (v.length() > MAX_STOP_CHARS) {
            throw ApiError.invalid(
                    param, at + " is " + v.length() + " characters; at most " + MAX_STOP_CHARS + " are allowed");
        }
        return v;
    }

    /**
     * An object's fields as plain Java data for the chat template, its null-valued keys left
     * out: null means absent, as in OpenAI's API, so a client's {@code "name": null} reaches the
     * template as no {@code name} at all (a template's {@code is defined} test then holds as for
     * an absent key). Values are copied as they are: nulls inside them (a JSON schema's
     * {@code "default": null}, a call's arguments) are data and stay.
     */
    public static java.util.Map<String, Object> withoutNullKeys(JsonNode object) {
        java.util.Map<String, Object> out = new java.util.LinkedHashMap<>();
        for (var e : object.properties()) {
            if (!e.getValue().isNull()) {
                out.put(e.getKey(), data(e.getValue()));
            }
        }
        return out;
    }

    /** A JSON value as plain Java data, as it is (nulls included). */
    public static Object data(JsonNode value) {
        return JSON.convertValue(value, Object.class);
    }

    /** An array field (null when absent). */
    public JsonNode array(String field) {
        JsonNode v = get(field);
        if (v != null && !v.isArray()) {
            throw ApiError.invalid(name(field), name(field) + " must be an array");
        }
        return v;
    }

    /** An object field (null when absent). */
    public JsonNode object(String field) {
        JsonNode v = get(field);
        if (v != null && !v.isObject()) {
            throw ApiError.invalid(name(field), name(field) + " must be an object");
        }
        return v;
    }

    /** The same checks on a nested object, its fields named {@code at.field}. */
    public static RequestFields at(JsonNode node, String at) {
        return new RequestFields(node, at + ".");
    }
}
