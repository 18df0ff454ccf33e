package dev.mlxring.exec.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * A model directory's {@code config.json}, read once into typed accessors. Family classes apply
 * their own defaults (as mlx-lm's per-family {@code ModelArgs} do); a missing required field or a
 * wrong type fails with a message that names the field and the file.
 */
public final class ModelConfig {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path file;
    private final JsonNode root;

    private ModelConfig(Path file, JsonNode root) {
        this.file = file;
        this.root = root;
    }

    public static ModelConfig read(Path modelDir) {
        Path file = modelDir.resolve("config.json");
        if (!Files.isDirectory(modelDir)) {
            throw new ModelLoadException("model directory " + modelDir + " does not exist or is not a directory");
        }
        if (!Files.isReadable(file)) {
            throw new ModelLoadException("model directory " + modelDir + " has no readable config.json");
        }
        try {
            JsonNode root = JSON.readTree(file.toFile());
            if (root == null || !root.isObject()) {
                throw new ModelLoadException(file + " is not a JSON object");
            }
            return new ModelConfig(file, root);
        } catch (IOException e) {
            throw new ModelLoadException("malformed " + file + ": " + e.getMessage());
        }
    }

    public static ModelConfig of(Path file, JsonNode root) {
        return new ModelConfig(file, root);
    }

    public Path file() {
        return file;
    }

    public JsonNode json() {
        return root;
    }

    public boolean has(String field) {
        JsonNode n = root.get(field);
        return n != null && !n.isNull();
    }

    private JsonNode required(String field) {
        JsonNode n = root.get(field);
        if (n == null || n.isNull()) {
            throw new ModelLoadException(file + ": required field '" + field + "' is missing");
        }
        return n;
    }

    public String modelType() {
        JsonNode n = required("model_type");
        if (!n.isTextual()) {
            throw new ModelLoadException(file + ": field 'model_type' must be a string");
        }
        return n.asText();
    }

    public int intField(String field) {
        JsonNode n = required(field);
        if (!n.canConvertToInt() || !n.isIntegralNumber()) {
            throw new ModelLoadException(file + ": field '" + field + "' must be an integer, got " + n);
        }
        return n.intValue();
    }

    public int intField(String field, int dflt) {
        return has(field) ? intField(field) : dflt;
    }

    public double doubleField(String field) {
        JsonNode n = required(field);
        if (!n.isNumber()) {
            throw new ModelLoadException(file + ": field '" + field + "' must be a number, got " + n);
        }
        return n.doubleValue();
    }

    public double doubleField(String field, double dflt) {
        return has(field) ? doubleField(field) : dflt;
    }

    public boolean boolField(String field, boolean dflt) {
        if (!has(field)) {
            return dflt;
        }
        JsonNode n = root.get(field);
        if (!n.isBoolean()) {
            throw new ModelLoadException(file + ": field '" + field + "' must be a boolean, got " + n);
        }
        return n.booleanValue();
    }

    public Optional<JsonNode> object(String field) {
        JsonNode n = root.get(field);
        if (n == null || n.isNull()) {
            return Optional.empty();
        }
        if (!n.isObject()) {
            throw new ModelLoadException(file + ": field '" + field + "' must be an object, got " + n);
        }
        return Optional.of(n);
    }

    /** The rope scaling dictionary as plain values, or empty when absent. */
    public Optional<Map<String, Object>> ropeScaling() {
        return has("rope_scaling") ? Optional.of(objectAsMap("rope_scaling")) : Optional.empty();
    }

    /** An object field as plain Java values (numbers, strings, lists, maps). */
    public Map<String, Object> objectAsMap(String field) {
        JsonNode n =
                object(field).orElseThrow(() -> new ModelLoadException(file + ": field '" + field + "' is missing"));
        Map<String, Object> m = new TreeMap<>();
        n.properties().forEach(e -> m.put(e.getKey(), JSON.convertValue(e.getValue(), Object.class)));
        return m;
    }

    /** EOS ids declared by config.json ({@code eos_token_id} may be an int or a list). */
    public int[] eosTokenIds() {
        JsonNode n = root.get("eos_token_id");
        if (n == null || n.isNull()) {
            return new int[0];
        }
        if (n.isArray()) {
            int[] ids = new int[n.size()];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = n.get(i).intValue();
            }
            return ids;
        }
        return new int[] {n.intValue()};
    }
}
