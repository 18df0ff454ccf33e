package dev.mlxring.ingress.http;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mlxring.pipeline.SpeculativeSpec;
import java.util.Iterator;
import java.util.Set;

/**
 * The {@code "speculative"} extension field of the three APIs (chat/completions and completions,
 * messages, responses): {@code {"method": "ngram"|"draft"|"off", "num_tokens": k}}, which overrides
 * the server's speculative-decoding default for one request. {@code method} is required;
 * {@code num_tokens} is an integer from 1 to {@value SpeculativeSpec#MAX_NUM_TOKENS} (absent: the
 * server's {@code --num-draft-tokens}). Absent or null: the server's default. Any other shape,
 * value or key is refused with a 400 naming the field. Whether the server can honour the method
 * (a draft model, speculation at all) is decided where the request runs.
 */
public final class SpeculativeField {
    private static final Set<String> KEYS = Set.of("method", "num_tokens");

    private SpeculativeField() {}

    /** The request's choice, or null when the body does not set one. */
    public static SpeculativeSpec parse(JsonNode root) {
        JsonNode node = root.get("speculative");
        if (node == null || node.isNull()) {
            return null;
        }
        if (!node.isObject()) {
            throw ApiError.invalid(
                    "speculative",
                    "speculative must be an object: {\"method\": \"ngram\"|\"draft\"|\"off\", " + "\"num_tokens\": k}");
        }
        for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
            String key = it.next();
            if (!KEYS.contains(key)) {
                throw ApiError.invalid(
                        "speculative." + key,
                        "speculative." + key + " is not supported (speculative takes method and num_tokens)");
            }
        }
        JsonNode method = node.get("method");
        if (method == null || method.isNull()) {
            throw ApiError.invalid("speculative.method", "speculative.method is required: ngram, draft or off");
        }
        SpeculativeSpec.Method m = switch (method.isTextual() ? method.asText() : "") {
            case "ngram" -> SpeculativeSpec.Method.NGRAM;
            case "draft" -> SpeculativeSpec.Method.DRAFT;
            case "off" -> SpeculativeSpec.Method.OFF;
            default ->
                throw ApiError.invalid(
                        "speculative.method", "speculative.method must be ngram, draft or off, got " + method);
        };
        JsonNode k = node.get("num_tokens");
        Integer numTokens = null;
        if (k != null && !k.isNull()) {
            if (!k.isIntegralNumber()
                    || !k.canConvertToInt()
                    || k.intValue() < 1
                    || k.intValue() > SpeculativeSpec.MAX_NUM_TOKENS) {
                throw ApiError.invalid(
                        "speculative.num_tokens",
                        "speculative.num_tokens must be an integer between 1 and " + SpeculativeSpec.MAX_NUM_TOKENS
                                + ", got " + k);
            }
            numTokens = k.intValue();
        }
        return new SpeculativeSpec(m, numTokens);
    }
}
