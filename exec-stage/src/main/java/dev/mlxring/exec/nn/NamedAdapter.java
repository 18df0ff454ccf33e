package dev.mlxring.exec.nn;

import java.nio.file.Path;
import java.util.Map;

/**
 * One adapter folder loaded into a model's {@link AdapterSlots} under a name: its tensors (owned
 * by its {@link LoraAdapter}) and the layers it converts. Identity matters: the slots key on the
 * instance, so a reload is a new adapter. {@link #close} detaches it from every layer and frees
 * its arrays; only on the thread that runs the model, with no row using it.
 */
public final class NamedAdapter implements AutoCloseable {
    private final String name;
    private final LoraAdapter adapter;
    private final Map<AdaptableLinear, Linear> layers;
    private final long lengthInBytes;

    NamedAdapter(String name, LoraAdapter adapter, Map<AdaptableLinear, Linear> layers) {
        this.name = name;
        this.adapter = adapter;
        this.layers = Map.copyOf(layers);
        this.lengthInBytes = adapter.lengthInBytes();
    }

    public String name() {
        return name;
    }

    public Path dir() {
        return adapter.config().dir();
    }

    /** The folder's content hash ({@link LoraAdapter#fingerprint}): its prefix cache namespace slot. */
    public String fingerprint() {
        return adapter.fingerprint();
    }

    /** Bytes of its arrays ({@link LoraAdapter#lengthInBytes}). */
    public long lengthInBytes() {
        return lengthInBytes;
    }

    /** Linear layers it converts. */
    public int convertedLayers() {
        return layers.size();
    }

    void attach() {
        layers.forEach((slot, layer) -> slot.attach(this, layer));
    }

    @Override
    public void close() {
        try {
            layers.keySet().forEach(slot -> slot.detach(this));
        } finally {
            adapter.close();
        }
    }

    @Override
    public String toString() {
        return name + " (" + dir() + ")";
    }
}
