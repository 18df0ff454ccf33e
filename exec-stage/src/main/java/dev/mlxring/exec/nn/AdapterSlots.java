package dev.mlxring.exec.nn;

import dev.mlxring.exec.model.ModelLoadException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The linear layers of a model built to serve named adapters per row ({@link AdaptableLinear}),
 * by module path, in build order: what {@link #load} converts as mlx-lm's {@code load_adapters}
 * would convert the same model ({@code num_layers}, {@code keys}), with its refusals. A
 * {@code full} adapter replaces weights, which no row can have alone, and is refused.
 */
public final class AdapterSlots {
    private final Map<String, AdaptableLinear> byPath = new LinkedHashMap<>();
    private final int layerCount;

    AdapterSlots(int layerCount) {
        this.layerCount = layerCount;
    }

    /** Wraps {@code base}, the layer at {@code path}, in a slot. */
    Linear add(String path, Linear base, int inDims) {
        AdaptableLinear slot = new AdaptableLinear(path, base, inDims);
        byPath.put(path, slot);
        return slot;
    }

    /** The slot at module path {@code path}, or null. */
    public AdaptableLinear slot(String path) {
        return byPath.get(path);
    }

    /**
     * Loads the adapter folder {@code dir} as {@code name} and attaches it to the layers it
     * converts; the caller owns the result. Refused with a {@link ModelLoadException} naming the
     * folder, file and tensor as {@link LoraAdapter} refuses it, and for a {@code full} adapter.
     */
    public NamedAdapter load(String name, Path dir) {
        LoraAdapter adapter;
        try {
            adapter = LoraAdapter.load(dir);
        } catch (ModelLoadException e) {
            throw named(name, e);
        }
        try {
            if (adapter.config().full()) {
                throw new ModelLoadException("adapter '" + name + "' (" + dir
                        + ") is a full fine-tune (fine_tune_type full), which replaces the model's weights"
                        + " and cannot be served per request; serve it with --adapter-path");
            }
            Map<AdaptableLinear, Linear> layers = new LinkedHashMap<>();
            for (AdaptableLinear slot : byPath.values()) {
                Linear l = adapter.adapt(layerCount, slot.path(), slot.base(), slot.inDims());
                if (l != slot.base()) {
                    layers.put(slot, l);
                }
            }
            adapter.finish();
            NamedAdapter named = new NamedAdapter(name, adapter, layers);
            named.attach();
            return named;
        } catch (ModelLoadException e) {
            adapter.close();
            throw named(name, e);
        } catch (RuntimeException e) {
            adapter.close();
            throw e;
        }
    }

    /** {@code e} with the adapter's name in front, unless its message names it already. */
    private static ModelLoadException named(String name, ModelLoadException e) {
        return e.getMessage().contains("'" + name + "'")
                ? e
                : new ModelLoadException("adapter '" + name + "': " + e.getMessage());
    }
}
