package dev.mlxring.ingress.http;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mlxring.pipeline.Utf16;
import java.util.Iterator;
import java.util.Map;

/**
 * What any JSON request body must satisfy before its fields are read, whatever the API: bounded
 * nesting (a deeply nested tool schema would otherwise overflow the template renderer's stack
 * in prep) and well-formed text (a lone UTF-16 surrogate such as {@code "\ud800"}, which JSON
 * allows, cannot be tokenized, matched as a stop string or written back as UTF-8). One pass over
 * the parsed tree; the first violation is reported with its JSON path.
 */
final class JsonBodyChecks {
    /** Objects and arrays nest at most this deep (a tool's JSON schema needs far less). */
    static final int MAX_DEPTH = 64;

    private JsonBodyChecks() {}

    static void check(JsonNode root) {
        walk(root, "", 0);
    }

    private static void walk(JsonNode node, String path, int depth) {
        if (node.isContainerNode() && depth >= MAX_DEPTH) {
            throw ApiError.invalid(
                    param(path), "the request body nests deeper than " + MAX_DEPTH + " levels at " + display(path));
        }
        if (node.isTextual()) {
            int bad = Utf16.firstUnpairedSurrogate(node.textValue());
            if (bad >= 0) {
                throw ApiError.invalid(
                        param(path),
                        display(path) + " contains an unpaired UTF-16 surrogate U+"
                                + Integer.toHexString(node.textValue().charAt(bad))
                                        .toUpperCase() + " at index " + bad);
            }
        } else if (node.isArray()) {
            for (int i = 0; i < node.size(); i++) {
                walk(node.get(i), path + "[" + i + "]", depth + 1);
            }
        } else if (node.isObject()) {
            for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                String child = path.isEmpty() ? e.getKey() : path + "." + e.getKey();
                if (Utf16.firstUnpairedSurrogate(e.getKey()) >= 0) {
                    throw ApiError.invalid(
                            param(path), "a key in " + display(path) + " contains an unpaired UTF-16 surrogate");
                }
                walk(e.getValue(), child, depth + 1);
            }
        }
    }

    private static String param(String path) {
        return path.isEmpty() ? null : path;
    }

    private static String display(String path) {
        return path.isEmpty() ? "the request body" : path;
    }
}
