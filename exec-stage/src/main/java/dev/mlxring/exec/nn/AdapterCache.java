package dev.mlxring.exec.nn;

import dev.mlxring.exec.model.ModelLoadException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The named adapters a server offers ({@code --adapter NAME=DIR}) over one model's
 * {@link AdapterSlots}, kept loaded under a byte cap ({@code --adapter-cache-bytes}) in least
 * recently used order. A row holds its adapter through a {@link Lease}; an adapter in use is never
 * evicted, so the cap may be exceeded while every resident adapter is in use (it is back under the
 * cap once enough leases end and the next load evicts). An adapter is loaded once and reused
 * until evicted. One thread only: the thread that runs the model (and, before it starts, the
 * thread that validates the adapters).
 */
public final class AdapterCache implements AutoCloseable {
    private final AdapterSlots slots;
    private final Map<String, Path> dirs;
    private final long capBytes;
    /** Resident adapters, least recently leased first. */
    private final LinkedHashMap<String, NamedAdapter> resident = new LinkedHashMap<>(16, 0.75f, true);

    private final Map<NamedAdapter, Integer> leases = new HashMap<>();
    private final Map<String, Integer> loads = new HashMap<>();
    private long residentBytes;

    /**
     * @param dirs the adapter folders by name
     * @param capBytes the most bytes resident adapters not in use may hold
     */
    public AdapterCache(AdapterSlots slots, Map<String, Path> dirs, long capBytes) {
        if (slots == null) {
            throw new IllegalArgumentException("the model was not built with adapter slots");
        }
        if (capBytes <= 0) {
            throw new IllegalArgumentException("the adapter cache's byte cap must be > 0, got " + capBytes);
        }
        this.slots = slots;
        this.dirs = Map.copyOf(dirs);
        this.capBytes = capBytes;
    }

    /** The names served. */
    public Set<String> names() {
        return dirs.keySet();
    }

    /**
     * Loads every adapter once, refusing the first that mlx-lm would refuse (a
     * {@link ModelLoadException} naming it) or that alone exceeds the cap; keeps those that fit.
     */
    public void validate() {
        for (String name : new java.util.TreeSet<>(dirs.keySet())) {
            try (Lease l = lease(name)) {
                if (l.adapter().lengthInBytes() > capBytes) {
                    throw new ModelLoadException("adapter '" + name + "' holds "
                            + l.adapter().lengthInBytes() + " bytes, more than --adapter-cache-bytes " + capBytes);
                }
            }
        }
    }

    /**
     * Leases the adapter {@code name}, loading it if it is not resident (evicting adapters not in
     * use, least recently used first, until it fits under the cap).
     *
     * @throws IllegalArgumentException for a name not served
     * @throws ModelLoadException when its folder cannot be loaded (e.g. changed on disk since)
     */
    public Lease lease(String name) {
        Path dir = dirs.get(name);
        if (dir == null) {
            throw new IllegalArgumentException("adapter '" + name + "' is not served (served: "
                    + String.join(", ", new java.util.TreeSet<>(dirs.keySet())) + ")");
        }
        NamedAdapter a = resident.get(name);
        if (a == null) {
            a = slots.load(name, dir);
            loads.merge(name, 1, Integer::sum);
            resident.put(name, a);
            residentBytes += a.lengthInBytes();
        }
        leases.merge(a, 1, Integer::sum);
        evictIdle();
        return new Lease(a);
    }

    /** Times {@code name} was loaded (1 while it stays resident). */
    public int loads(String name) {
        return loads.getOrDefault(name, 0);
    }

    /** Whether {@code name} is loaded now. */
    public boolean resident(String name) {
        return resident.containsKey(name);
    }

    /** Bytes of the resident adapters. */
    public long residentBytes() {
        return residentBytes;
    }

    private void evictIdle() {
        var it = resident.entrySet().iterator();
        while (residentBytes > capBytes && it.hasNext()) {
            NamedAdapter a = it.next().getValue();
            if (!leases.containsKey(a)) {
                it.remove();
                residentBytes -= a.lengthInBytes();
                a.close();
            }
        }
    }

    private void release(NamedAdapter a) {
        int n = leases.merge(a, -1, Integer::sum);
        if (n <= 0) {
            leases.remove(a);
            evictIdle();
        }
    }

    @Override
    public void close() {
        resident.values().forEach(NamedAdapter::close);
        resident.clear();
        leases.clear();
        residentBytes = 0;
    }

    /** A row's hold on an adapter: it stays loaded until {@link #close}. Closing twice is a no-op. */
    public final class Lease implements AutoCloseable {
        private final NamedAdapter adapter;
        private boolean closed;

        private Lease(NamedAdapter adapter) {
            this.adapter = adapter;
        }

        public NamedAdapter adapter() {
            return adapter;
        }

        @Override
        public void close() {
            if (!closed) {
                closed = true;
                release(adapter);
            }
        }
    }
}
