package dev.mlxring.ingress.http;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mlxring.pipeline.OutputConstraint;
import java.util.Set;

/**
 * The request fields of the three APIs that constrain the output's shape, read into one
 * {@link OutputConstraint} (plan-stage compiles it and refuses what it cannot honour). Every shape
 * is checked here, and anything this server would not enforce is a 400 naming the field:
 * <ul>
 *   <li>OpenAI chat/completions and completions: {@code response_format} {@code text},
 *       {@code json_object}, {@code json_schema} ({@code json_schema.schema} required;
 *       {@code strict} true or false, enforced either way);</li>
 *   <li>the same routes, vLLM's extension for grammars beyond JSON: {@code structured_outputs}
 *       with exactly one of {@code json}, {@code regex}, {@code choice}, {@code grammar} (Lark, as
 *       llguidance reads it) or {@code json_object: true}, or the older top-level
 *       {@code guided_json}, {@code guided_regex}, {@code guided_choice}, {@code guided_grammar};</li>
 *   <li>OpenAI Responses: {@code text.format} {@code text}, {@code json_object},
 *       {@code json_schema} ({@code schema} required);</li>
 *   <li>Anthropic Messages: {@code output_format} or {@code output_config.format}
 *       {@code {"type": "json_schema", "schema": …}}.</li>
 * </ul>
 * One constraint per request: two of these fields at once is a 400. Stateless.
 */
public final class StructuredOutputs {
    private static final Set<String> STRUCTURED_KEYS = Set.of("json", "regex", "choice", "grammar", "json_object");
    private static final Set<String> GUIDED = Set.of("guided_json", "guided_regex", "guided_choice", "guided_grammar");
    private static final String RUST_REGEX_META = "\\.+*?()|[]{}^$#&-~";
    /** The keys each format object may carry (null-valued ones count as absent); any other is refused. */
    private static final Set<String> JSON_SCHEMA_KEYS = Set.of("name", "schema", "strict");

    private static final Set<String> RESPONSES_FORMAT_KEYS = Set.of("type", "name", "schema", "strict");
    private static final Set<String> ANTHROPIC_FORMAT_KEYS = Set.of("type", "schema");

    private StructuredOutputs() {}

    /** OpenAI chat/completions and completions: {@code response_format}, {@code structured_outputs}, {@code guided_*}. */
    public static OutputConstraint openAi(JsonNode root) {
        OutputConstraint found = responseFormat(root.get("response_format"));
        found = one(found, structuredOutputs(root.get("structured_outputs")), "structured_outputs");
        for (String g : GUIDED) {
            JsonNode v = root.get(g);
            if (v != null && !v.isNull()) {
                found = one(found, vllm(g.substring("guided_".length()), v, g), g);
            }
        }
        return found;
    }

    /** OpenAI Responses: {@code text.format}. */
    public static OutputConstraint responses(JsonNode root) {
        JsonNode text = root.get("text");
        if (text == null || text.isNull()) {
            return null;
        }
        if (!text.isObject()) {
            throw ApiError.invalid("text", "text must be an object");
        }
        JsonNode format = text.get("format");
        if (format == null || format.isNull()) {
            return null;
        }
        String type = type(format, "text.format");
        return switch (type) {
            case "text" -> null;
            case "json_object" -> OutputConstraint.jsonObject("text.format");
            case "json_schema" -> {
                onlyKeys(format, RESPONSES_FORMAT_KEYS, "text.format");
                yield schema(format.get("schema"), "text.format.schema");
            }
            default ->
                throw ApiError.invalid(
                        "text.format",
                        "text.format type '" + type + "' is not supported; use text, json_object or json_schema");
        };
    }

    /** Anthropic Messages: {@code output_format} or {@code output_config.format}. */
    public static OutputConstraint anthropic(JsonNode root) {
        OutputConstraint found = anthropicFormat(root.get("output_format"), "output_format");
        JsonNode config = root.get("output_config");
        if (config != null && config.isObject()) {
            found = one(found, anthropicFormat(config.get("format"), "output_config.format"), "output_config.format");
        }
        return found;
    }

    private static OutputConstraint anthropicFormat(JsonNode f, String at) {
        if (f == null || f.isNull()) {
            return null;
        }
        String type = type(f, at);
        if (!type.equals("json_schema")) {
            throw ApiError.invalid(at, at + " type '" + type + "' is not supported; use json_schema");
        }
        onlyKeys(f, ANTHROPIC_FORMAT_KEYS, at);
        return schema(f.get("schema"), at + ".schema");
    }

    private static OutputConstraint responseFormat(JsonNode rf) {
        if (rf == null || rf.isNull()) {
            return null;
        }
        String type = type(rf, "response_format");
        return switch (type) {
            case "text" -> null;
            case "json_object" -> OutputConstraint.jsonObject("response_format");
            case "json_schema" -> {
                JsonNode js = rf.get("json_schema");
                if (js == null || !js.isObject()) {
                    throw ApiError.invalid(
                            "response_format.json_schema",
                            "response_format.json_schema must be an object with a 'schema'");
                }
                onlyKeys(js, JSON_SCHEMA_KEYS, "response_format.json_schema");
                JsonNode strict = js.get("strict");
                if (strict != null && !strict.isNull() && !strict.isBoolean()) {
                    throw ApiError.invalid(
                            "response_format.json_schema.strict",
                            "response_format.json_schema.strict must be a boolean");
                }
                JsonNode name = js.get("name");
                if (name != null && !name.isNull() && !name.isTextual()) {
                    throw ApiError.invalid(
                            "response_format.json_schema.name", "response_format.json_schema.name must be a string");
                }
                yield schema(js.get("schema"), "response_format.json_schema.schema");
            }
            default ->
                throw ApiError.invalid(
                        "response_format",
                        "response_format type '" + type + "' is not supported; use text, json_object or json_schema");
        };
    }

    private static OutputConstraint structuredOutputs(JsonNode so) {
        if (so == null || so.isNull()) {
            return null;
        }
        if (!so.isObject()) {
            throw ApiError.invalid("structured_outputs", "structured_outputs must be an object");
        }
        OutputConstraint found = null;
        for (var e : so.properties()) {
            String at = "structured_outputs." + e.getKey();
            if (e.getValue().isNull()) {
                continue;
            }
            if (!STRUCTURED_KEYS.contains(e.getKey())) {
                throw ApiError.invalid(
                        at, at + " is not supported; structured_outputs takes one of " + STRUCTURED_KEYS);
            }
            if (e.getKey().equals("json_object")) {
                if (!e.getValue().isBoolean()) {
                    throw ApiError.invalid(at, at + " must be a boolean");
                }
                if (!e.getValue().booleanValue()) {
                    continue;
                }
                found = one(found, OutputConstraint.jsonObject(at), at);
                continue;
            }
            found = one(found, vllm(e.getKey(), e.getValue(), at), at);
        }
        return found;
    }

    /** One of vLLM's constraint kinds: json (schema object or its text), regex, choice, grammar. */
    private static OutputConstraint vllm(String kind, JsonNode v, String at) {
        return switch (kind) {
            case "json" -> {
                if (v.isTextual()) {
                    yield new OutputConstraint(OutputConstraint.Kind.JSON_SCHEMA, v.textValue(), at);
                }
                yield schema(v, at);
            }
            case "regex" -> new OutputConstraint(OutputConstraint.Kind.REGEX, text(v, at), at);
            case "grammar" -> new OutputConstraint(OutputConstraint.Kind.LARK, text(v, at), at);
            case "choice" -> {
                if (!v.isArray() || v.isEmpty()) {
                    throw ApiError.invalid(at, at + " must be a non-empty array of strings");
                }
                StringBuilder regex = new StringBuilder();
                for (int i = 0; i < v.size(); i++) {
                    if (!v.get(i).isTextual()) {
                        throw ApiError.invalid(at, at + "[" + i + "] must be a string");
                    }
                    regex.append(i == 0 ? "" : "|")
                            .append('(')
                            .append(escapeRegex(v.get(i).textValue()))
                            .append(')');
                }
                yield new OutputConstraint(OutputConstraint.Kind.REGEX, regex.toString(), at);
            }
            default -> throw new IllegalArgumentException(kind);
        };
    }

    private static OutputConstraint schema(JsonNode s, String at) {
        if (s == null || s.isNull()) {
            throw ApiError.invalid(at, at + " is required");
        }
        if (!s.isObject() && !s.isBoolean()) {
            throw ApiError.invalid(at, at + " must be a JSON Schema object");
        }
        return new OutputConstraint(OutputConstraint.Kind.JSON_SCHEMA, s.toString(), at);
    }

    private static String type(JsonNode f, String at) {
        if (!f.isObject() || !f.path("type").isTextual()) {
            throw ApiError.invalid(at, at + " must be an object with a string 'type'");
        }
        return f.get("type").textValue();
    }

    private static String text(JsonNode v, String at) {
        if (!v.isTextual() || v.textValue().isEmpty()) {
            throw ApiError.invalid(at, at + " must be a non-empty string");
        }
        return v.textValue();
    }

    /**
     * A key the format object carries that is not enforced (e.g. {@code description}, which only
     * guides a model's wording) is refused by name rather than accepted and ignored.
     */
    private static void onlyKeys(JsonNode object, Set<String> allowed, String at) {
        for (var e : object.properties()) {
            if (!e.getValue().isNull() && !allowed.contains(e.getKey())) {
                throw ApiError.invalid(
                        at + "." + e.getKey(),
                        at + "." + e.getKey() + " is not supported: only "
                                + allowed.stream().sorted().toList()
                                + " are read (the schema alone is enforced); leave it out");
            }
        }
    }

    private static OutputConstraint one(OutputConstraint found, OutputConstraint next, String at) {
        if (found != null && next != null) {
            throw ApiError.invalid(at, at + " and " + found.field() + " both constrain the output; send one of them");
        }
        return found != null ? found : next;
    }

    /** {@code s} as a literal in Rust's regex syntax (its meta characters escaped, as regex::escape does). */
    static String escapeRegex(String s) {
        StringBuilder b = new StringBuilder(s.length() + 8);
        s.codePoints().forEach(c -> {
            if (c < 128 && RUST_REGEX_META.indexOf(c) >= 0) {
                b.append('\\');
            }
            b.appendCodePoint(c);
        });
        return b.toString();
    }
}
