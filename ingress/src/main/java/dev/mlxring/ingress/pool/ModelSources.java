package dev.mlxring.ingress.pool;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/** Where a pool's models come from: a folder of model folders ({@code --model-dir}) and a models file ({@code --models}). */
public final class ModelSources {
    /** The per-model keys a models file may give besides {@code path} and {@code pinned}: serve flags without their dashes. */
    public static final Set<String> PER_MODEL_FLAGS =
            Set.of("kv-bits", "kv-group-size", "quantized-kv-start", "max-kv-size", "numerics");

    private static final ObjectMapper JSON = new ObjectMapper();

    private ModelSources() {}

    /**
     * Every subfolder of {@code dir} holding a {@code config.json}, named by its folder, in name
     * order (hidden folders are skipped). A folder whose model is broken is listed all the same:
     * its load fails with the cause, and the others serve.
     *
     * @throws IllegalArgumentException when {@code dir} is not a folder or holds no model
     */
    public static List<ModelSpec> scan(Path dir) {
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException("--model-dir " + dir + " is not a directory");
        }
        List<ModelSpec> specs = new ArrayList<>();
        try (Stream<Path> children = Files.list(dir)) {
            for (Path child : children.sorted().toList()) {
                String name = child.getFileName().toString();
                if (!name.startsWith(".") && Files.isRegularFile(child.resolve("config.json"))) {
                    specs.add(ModelSpec.of(name, child, false));
                }
            }
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot list --model-dir " + dir + ": " + e.getMessage(), e);
        }
        if (specs.isEmpty()) {
            throw new IllegalArgumentException(
                    "--model-dir " + dir + " holds no model (no subfolder with a config.json)");
        }
        return specs;
    }

    /**
     * A JSON models file: an object of model name → object with {@code path} (required; relative
     * paths are against the file's folder), {@code pinned} (boolean) and any of
     * {@link #PER_MODEL_FLAGS} (a number or string, as the flag's value).
     *
     * @throws IllegalArgumentException naming the file, the model and the key at fault
     */
    public static List<ModelSpec> read(Path file) {
        JsonNode root;
        try {
            root = JSON.readTree(file.toFile());
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read --models " + file + ": " + e.getMessage(), e);
        }
        if (root == null || !root.isObject() || root.isEmpty()) {
            throw new IllegalArgumentException(
                    "--models " + file + " must be a JSON object of model name → {\"path\": ...}");
        }
        Path base = file.toAbsolutePath().getParent();
        List<ModelSpec> specs = new ArrayList<>();
        for (var entry : root.properties()) {
            String name = entry.getKey();
            JsonNode m = entry.getValue();
            String where = "--models " + file + ": model '" + name + "'";
            if (!m.isObject()) {
                throw new IllegalArgumentException(where + " must be an object with a \"path\"");
            }
            if (!m.path("path").isTextual()) {
                throw new IllegalArgumentException(where + " needs \"path\" (its model directory)");
            }
            boolean pinned = false;
            Map<String, String> flags = new LinkedHashMap<>();
            for (var field : m.properties()) {
                String key = field.getKey();
                JsonNode v = field.getValue();
                if (key.equals("path")) {
                    continue;
                }
                if (key.equals("pinned")) {
                    if (!v.isBoolean()) {
                        throw new IllegalArgumentException(where + ": \"pinned\" must be true or false");
                    }
                    pinned = v.asBoolean();
                } else if (PER_MODEL_FLAGS.contains(key) && (v.isNumber() || v.isTextual())) {
                    flags.put("--" + key, v.asText());
                } else {
                    throw new IllegalArgumentException(where + ": unknown key \"" + key + "\" (takes path, pinned, "
                            + String.join(
                                    ", ", PER_MODEL_FLAGS.stream().sorted().toList())
                            + "; flag values as numbers or strings)");
                }
            }
            specs.add(new ModelSpec(name, base.resolve(m.get("path").asText()), pinned, flags));
        }
        return specs;
    }
}
