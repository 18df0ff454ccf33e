package dev.mlxring.exec.nn;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mlxring.exec.model.ModelLoadException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * An adapter folder's {@code adapter_config.json}, read as mlx-lm's {@code load_adapters} reads
 * it: {@code fine_tune_type} (default {@code lora}; {@code lora}, {@code dora} or {@code full}),
 * and for the low-rank kinds {@code num_layers} and {@code lora_parameters} ({@code rank},
 * {@code scale}, {@code dropout}, optional {@code keys}). The other fields mlx_lm.lora writes
 * (optimizer, data, ...) are training settings and are not read.
 *
 * @param numLayers the last {@code numLayers} blocks are adapted; 0 or less means every block
 *     ({@code model.layers[-max(num_layers, 0):]})
 * @param keys the module paths to adapt (relative to a block, or a top-level module), or null
 *     for every linear layer of the adapted blocks
 */
public record AdapterConfig(
        Path dir, String fineTuneType, int numLayers, int rank, double scale, double dropout, List<String> keys) {
    public static final String CONFIG_FILE = "adapter_config.json";
    public static final String WEIGHTS_FILE = "adapters.safetensors";

    /** Whether the adapter replaces weights ({@code full}) rather than adding low-rank layers. */
    public boolean full() {
        return fineTuneType.equals("full");
    }

    public boolean dora() {
        return fineTuneType.equals("dora");
    }

    /** Reads {@code dir/adapter_config.json}, refusing what load_adapters would fail on, naming the file and field. */
    public static AdapterConfig read(Path dir) {
        if (!Files.isDirectory(dir)) {
            throw new ModelLoadException("the adapter path does not exist: " + dir);
        }
        Path file = dir.resolve(CONFIG_FILE);
        if (!Files.isRegularFile(file)) {
            throw new ModelLoadException("adapter " + dir + " has no " + CONFIG_FILE);
        }
        if (!Files.isRegularFile(dir.resolve(WEIGHTS_FILE))) {
            throw new ModelLoadException("adapter " + dir + " has no " + WEIGHTS_FILE);
        }
        JsonNode root;
        try {
            root = new ObjectMapper().readTree(file.toFile());
        } catch (IOException e) {
            throw new ModelLoadException(file + " is not valid JSON: " + e.getMessage());
        }
        if (root == null || !root.isObject()) {
            throw new ModelLoadException(file + " is not a JSON object");
        }
        String type = root.path("fine_tune_type").asText("lora");
        if (!List.of("lora", "dora", "full").contains(type)) {
            throw new ModelLoadException(
                    file + ": fine_tune_type '" + type + "' is not supported (supported: lora, dora, full)");
        }
        if (type.equals("full")) {
            return new AdapterConfig(dir, type, 0, 0, 0, 0, null);
        }
        int numLayers = integer(file, root, "num_layers");
        JsonNode lp = root.get("lora_parameters");
        if (lp == null || !lp.isObject()) {
            throw new ModelLoadException(file + ": lora_parameters is missing or not an object");
        }
        if (!lp.has("scale")) {
            throw new ModelLoadException(file + ": lora_parameters is missing 'scale'"
                    + (lp.has("alpha") ? " (found 'alpha': mlx-lm's LoRA config uses 'scale')" : ""));
        }
        int rank = integer(file, lp, "rank");
        if (rank < 1) {
            throw new ModelLoadException(file + ": lora_parameters.rank must be at least 1, got " + rank);
        }
        double scale = number(file, lp, "scale");
        double dropout = number(file, lp, "dropout");
        List<String> keys = null;
        JsonNode k = lp.get("keys");
        if (k != null && !k.isNull()) {
            if (!k.isArray()) {
                throw new ModelLoadException(file + ": lora_parameters.keys must be a list of module paths");
            }
            keys = new ArrayList<>();
            for (JsonNode e : k) {
                if (!e.isTextual()) {
                    throw new ModelLoadException(file + ": lora_parameters.keys holds " + e + ", not a module path");
                }
                keys.add(e.asText());
            }
        }
        return new AdapterConfig(dir, type, numLayers, rank, scale, dropout, keys == null ? null : List.copyOf(keys));
    }

    private static int integer(Path file, JsonNode node, String field) {
        JsonNode v = node.get(field);
        if (v == null || !v.isIntegralNumber()) {
            throw new ModelLoadException(file + ": '" + field + "' is missing or not an integer");
        }
        return v.intValue();
    }

    private static double number(Path file, JsonNode node, String field) {
        JsonNode v = node.get(field);
        if (v == null || !v.isNumber()) {
            throw new ModelLoadException(file + ": '" + field + "' is missing or not a number");
        }
        return v.doubleValue();
    }
}
