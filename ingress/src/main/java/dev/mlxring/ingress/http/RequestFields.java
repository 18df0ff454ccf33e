package dev.mlxring.ingress.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
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
    private static final ObjectMapper JSON =
            new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    public RequestFields(JsonNode node) {
        this(node, "");
    }

    /** Parses a request body that must be one JSON object (invalid JSON or UTF-8: 400). */
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
            throw ApiError.invalid(name(field), name(field) + " must be " + (max == Integer.MAX_VALUE
                    ? "at least " + min : "between " + min + " and " + max));
        }
        return v;
    }

    public Long longValue(String field) {
        JsonNode v = get(field);
        if (v == null) {
            return null;
        }
        if (!v.isIntegralNumber() || !v.canConvertToLong()) {
            throw ApiError.invalid(name(field), name(field) + " must be an integer");
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
        if (Double.isNaN(d) || d < min || d > max) {
            String range = max == Double.MAX_VALUE ? "at least " + min : "between " + min + " and " + max;
            throw ApiError.invalid(name(field), name(field) + " must be " + range);
        }
        return d;
    }

    /**
     * A token limit: an integer in [1, the model's context]; {@code dflt} when absent (null
     * there: the field is required).
     */
    public int maxTokens(String field, Integer dflt, ServerDefaults defaults) {
        Integer v = integer(field, dflt);
        if (v == null) {
            throw ApiError.invalid(name(field), name(field) + " is required");
        }
        if (v < 1) {
            throw ApiError.invalid(name(field), name(field) + " must be at least 1");
        }
        if (v > defaults.maxContextTokens()) {
            throw ApiError.invalid(name(field), name(field) + " must be at most " + defaults.maxContextTokens()
                    + " (the model's context length)");
        }
        return v;
    }

    /** Stop strings: a string or an array of strings; empty strings are dropped. */
    public List<String> stopStrings(String field, boolean allowSingleString) {
        JsonNode s = get(field);
        if (s == null) {
            return List.of();
        }
        String what = name(field) + " must be " + (allowSingleString ? "a string or " : "") + "an array of strings";
        if (s.isTextual() && allowSingleString) {
            return s.asText().isEmpty() ? List.of() : List.of(s.asText());
        }
        if (!s.isArray()) {
            throw ApiError.invalid(name(field), what);
        }
        List<String> out = new ArrayList<>();
        for (JsonNode x : s) {
            if (!x.isTextual()) {
                throw ApiError.invalid(name(field), what);
            }
            if (!x.asText().isEmpty()) {
                out.add(x.asText());
            }
        }
        return out;
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
