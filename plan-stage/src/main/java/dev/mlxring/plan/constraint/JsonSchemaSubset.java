package dev.mlxring.plan.constraint;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import java.util.Set;

/**
 * The JSON Schema keywords structured outputs enforce, checked before llguidance sees a schema:
 * llguidance skips keywords it does not know, which would accept a constraint and not honour it,
 * so any keyword outside this subset is refused with its JSON pointer. The subset is what
 * llguidance 1.9 implements: {@code type}, {@code enum}, {@code const}, {@code anyOf},
 * {@code oneOf} (where llguidance can prove it equals {@code anyOf}; it refuses the rest),
 * {@code allOf}, local {@code $ref} with {@code $defs}/{@code definitions}, {@code properties},
 * {@code required}, {@code additionalProperties}, {@code items}, {@code prefixItems},
 * {@code minItems}, {@code maxItems}, {@code minLength}, {@code maxLength}, {@code pattern},
 * {@code format}, {@code minimum}, {@code maximum}, {@code exclusiveMinimum},
 * {@code exclusiveMaximum}, {@code multipleOf}; annotations ({@code title}, {@code description},
 * {@code default}, {@code examples}, {@code $schema}, {@code $id}, {@code $comment},
 * {@code deprecated}, {@code readOnly}, {@code writeOnly}) are allowed and change nothing.
 * Stateless; any thread.
 */
public final class JsonSchemaSubset {
    private static final Set<String> ENFORCED = Set.of(
            "type",
            "enum",
            "const",
            "anyOf",
            "oneOf",
            "allOf",
            "$ref",
            "$defs",
            "definitions",
            "properties",
            "required",
            "additionalProperties",
            "items",
            "prefixItems",
            "minItems",
            "maxItems",
            "minLength",
            "maxLength",
            "pattern",
            "format",
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf");
    private static final Set<String> ANNOTATIONS = Set.of(
            "title",
            "description",
            "default",
            "examples",
            "$schema",
            "$id",
            "$comment",
            "deprecated",
            "readOnly",
            "writeOnly");
    /** Keywords whose value is a schema. */
    private static final Set<String> SCHEMA_VALUED = Set.of("additionalProperties", "items");
    /** Keywords whose value is an array of schemas. */
    private static final Set<String> SCHEMA_ARRAYS = Set.of("anyOf", "oneOf", "allOf", "prefixItems");
    /** Keywords whose value is an object of schemas. */
    private static final Set<String> SCHEMA_MAPS = Set.of("properties", "$defs", "definitions");

    private static final int MAX_DEPTH = 64;

    private JsonSchemaSubset() {}

    /**
     * Returns null when every keyword of {@code schema} is in the subset, else why not: the first
     * unsupported keyword with its JSON pointer (e.g. {@code keyword 'uniqueItems' at
     * /properties/tags is not supported}).
     */
    public static String check(JsonNode schema) {
        return check(schema, "", 0);
    }

    private static String check(JsonNode s, String at, int depth) {
        if (depth > MAX_DEPTH) {
            return "the schema nests deeper than " + MAX_DEPTH + " levels at " + (at.isEmpty() ? "/" : at);
        }
        if (s.isBoolean()) {
            return null; // true / false schemas
        }
        if (!s.isObject()) {
            return "the schema at " + (at.isEmpty() ? "/" : at) + " must be an object or a boolean";
        }
        for (Map.Entry<String, JsonNode> e : s.properties()) {
            String k = e.getKey();
            String here = at + "/" + escape(k);
            if (k.startsWith("x-")) {
                return "extension keyword '" + k + "' at " + here + " is not supported";
            }
            if (!ENFORCED.contains(k) && !ANNOTATIONS.contains(k)) {
                return "keyword '" + k + "' at " + (at.isEmpty() ? "/" : at) + " is not supported (structured"
                        + " outputs enforce the subset docs/api.md lists; a keyword that would be ignored is refused)";
            }
            JsonNode v = e.getValue();
            String why = null;
            if (SCHEMA_VALUED.contains(k) && (v.isObject() || v.isBoolean())) {
                why = check(v, here, depth + 1);
            } else if (SCHEMA_ARRAYS.contains(k) && v.isArray()) {
                for (int i = 0; i < v.size() && why == null; i++) {
                    why = check(v.get(i), here + "/" + i, depth + 1);
                }
            } else if (SCHEMA_MAPS.contains(k) && v.isObject()) {
                for (var p : v.properties()) {
                    why = check(p.getValue(), here + "/" + escape(p.getKey()), depth + 1);
                    if (why != null) {
                        break;
                    }
                }
            }
            if (why != null) {
                return why;
            }
        }
        return null;
    }

    /** RFC 6901: '~' as '~0', '/' as '~1'. */
    private static String escape(String key) {
        return key.replace("~", "~0").replace("/", "~1");
    }
}
