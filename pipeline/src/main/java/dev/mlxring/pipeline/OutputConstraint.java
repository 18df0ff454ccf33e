package dev.mlxring.pipeline;

import java.util.Objects;

/**
 * What a request's output must match, as the client wrote it: plan-stage compiles it once per
 * request into a {@link TokenConstraint} or refuses it with a 400 naming {@link #field()}.
 *
 * @param kind the language of {@code source}
 * @param source the JSON schema (JSON text), the Lark grammar or the regex
 * @param field the request field it came from, named in errors (e.g.
 *     {@code response_format.json_schema.schema})
 */
public record OutputConstraint(Kind kind, String source, String field) {
    /** The constraint languages. */
    public enum Kind {
        /** A JSON Schema (the subset docs/api.md lists); the output is one JSON value matching it. */
        JSON_SCHEMA,
        /** A Lark grammar as llguidance reads it. */
        LARK,
        /** A regular expression the whole output must match. */
        REGEX,
        /**
         * llguidance's top-level grammar JSON ({@code {"grammars": [...]}}), for constraints plan
         * composes (a reasoning block ahead of a request's own constraint); not a request field.
         */
        GRAMMAR
    }

    public OutputConstraint {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(field, "field");
    }

    /** Any JSON object ({@code response_format: {"type": "json_object"}}). */
    public static OutputConstraint jsonObject(String field) {
        return new OutputConstraint(Kind.JSON_SCHEMA, "{\"type\":\"object\"}", field);
    }
}
