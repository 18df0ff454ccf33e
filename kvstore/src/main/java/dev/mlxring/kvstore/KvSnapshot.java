package dev.mlxring.kvstore;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A whole model's KV cache as bytes (one {@link LayerState} per layer, all at the same offset),
 * in native memory from one shared {@link Arena}.
 *
 * <p>Ownership: reference-counted. The creator holds one reference; the cache that accepts it in
 * {@link PrefixCache#publish} takes that reference over. Every reader ({@link PrefixHit}, a spill)
 * {@link #retain()}s before use and {@link #release()}s after; the last release frees the memory,
 * so an entry evicted while a row restores from it stays valid until that row is done. Thread-safe.
 */
public final class KvSnapshot {
    private final Arena arena;
    private final List<LayerState> layers;
    private final long nbytes;
    private final AtomicInteger refs = new AtomicInteger(1);

    private KvSnapshot(Arena arena, List<LayerState> layers) {
        this.arena = arena;
        this.layers = List.copyOf(layers);
        long n = 0;
        int offset = layers.isEmpty() ? 0 : layers.get(0).offset();
        for (LayerState l : layers) {
            if (l.offset() != offset) {
                throw new IllegalArgumentException("layers disagree on the offset: " + l.offset() + " vs " + offset);
            }
            n += l.nbytes();
        }
        this.nbytes = n;
    }

    /** Builds a snapshot: allocate each tensor's bytes, fill them, add layers, then {@link #build()}. */
    public static Builder builder() {
        return new Builder();
    }

    public List<LayerState> layers() {
        return layers;
    }

    /** The filled positions (every layer's offset). */
    public int tokens() {
        return layers.isEmpty() ? 0 : layers.get(0).offset();
    }

    public long nbytes() {
        return nbytes;
    }

    /** mlx-lm's {@code can_trim_prompt_cache}: dense and quantized caches trim by moving the offset. */
    public boolean trimmable() {
        return true;
    }

    /** Takes one more reference; fails when the snapshot was already freed. */
    public KvSnapshot retain() {
        int n;
        do {
            n = refs.get();
            if (n <= 0) {
                throw new IllegalStateException("snapshot already released");
            }
        } while (!refs.compareAndSet(n, n + 1));
        return this;
    }

    /** Drops one reference; the last one frees the bytes. */
    public void release() {
        int n = refs.decrementAndGet();
        if (n == 0) {
            arena.close();
        } else if (n < 0) {
            throw new IllegalStateException("snapshot released more often than retained");
        }
    }

    /** Whether the bytes are still allocated (tests). */
    public boolean alive() {
        return refs.get() > 0;
    }

    /** Single-threaded; on failure {@link #abandon()} frees what was allocated. */
    public static final class Builder {
        private final Arena arena = Arena.ofShared();
        private final List<LayerState> layers = new ArrayList<>();

        /** Native bytes for one tensor, owned by the snapshot being built. */
        public MemorySegment allocate(long bytes) {
            return arena.allocate(Math.max(bytes, 1), 64).asSlice(0, bytes);
        }

        public Builder add(LayerState layer) {
            layers.add(layer);
            return this;
        }

        public KvSnapshot build() {
            try {
                return new KvSnapshot(arena, layers);
            } catch (RuntimeException e) {
                arena.close();
                throw e;
            }
        }

        public void abandon() {
            arena.close();
        }
    }
}
