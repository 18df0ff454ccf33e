package dev.mlxring.kvstore;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A whole model's KV cache as bytes (one {@link LayerState} per layer, all at the same offset),
 * in native memory from one shared {@link Arena}.
 *
 * <p>A hybrid model's snapshot holds {@link LayerState.Kind#RECURRENT} layers: their state cannot
 * be trimmed, so the snapshot restores only at a {@linkplain #boundaries() boundary}: its own
 * length, or a {@link Checkpoint}'s position, where the recurrent layers' state was copied while
 * the prompt ran (the KV layers are trimmed to that position, the recurrent ones taken from the
 * checkpoint). A snapshot without recurrent layers restores at any position up to its length.
 *
 * <p>Ownership: reference-counted. The creator holds one reference; the cache that accepts it in
 * {@link PrefixCache#publish} takes that reference over. Every reader ({@link PrefixHit}, a spill)
 * {@link #retain()}s before use and {@link #release()}s after; the last release frees the memory,
 * so an entry evicted while a row restores from it stays valid until that row is done. Thread-safe.
 *
 * <p>Filling: a snapshot is built either with its bytes written ({@link Builder#build()}) or
 * with its bytes still to be written by one thread, its filling thread ({@link
 * Builder#buildPending}), e.g. a copy that waits for a computation still running. A pending
 * snapshot's shapes, dtypes and {@link #nbytes()} are final from the start, so it can be published
 * and counted at once; a reader of its bytes first calls {@link #awaitFilled()}, which on the
 * filling thread writes them now and elsewhere waits for them. Work that needs the bytes without
 * waiting registers with {@link #whenFilled}.
 */
public final class KvSnapshot {
    /**
     * The recurrent layers' state after {@code position} positions, one {@link LayerState.Kind#RECURRENT}
     * layer per recurrent layer of the snapshot, in layer order.
     */
    public record Checkpoint(int position, List<LayerState> layers) {
        public Checkpoint {
            layers = List.copyOf(layers);
            for (LayerState l : layers) {
                if (l.kind() != LayerState.Kind.RECURRENT || l.offset() != position) {
                    throw new IllegalArgumentException("a checkpoint at " + position + " holds recurrent layers at "
                            + position + ", got " + l.kind() + " at " + l.offset());
                }
            }
        }

        long nbytes() {
            long n = 0;
            for (LayerState l : layers) {
                n += l.nbytes();
            }
            return n;
        }
    }

    private final Arena arena;
    private final List<LayerState> layers;
    private final List<Checkpoint> checkpoints;
    private final int recurrentLayers;
    private final long nbytes;
    private final AtomicInteger refs = new AtomicInteger(1);
    /** Counted down once the bytes are written (or their writing failed); zero for a built-filled one. */
    private final CountDownLatch filled;
    /** The thread that writes a pending snapshot's bytes; null once filled. */
    private Thread fillThread;
    /** Writes a pending snapshot's bytes; null once run. */
    private Runnable fill;
    /** Why the bytes could not be written; null while they are (or will be) valid. */
    private volatile RuntimeException fillFailure;
    /** {@link #whenFilled} callbacks waiting for the fill: success and failure in pairs. */
    private final List<Runnable[]> onFill = new ArrayList<>();

    private KvSnapshot(
            Arena arena, List<LayerState> layers, List<Checkpoint> checkpoints, Thread fillThread, Runnable fill) {
        this.arena = arena;
        this.fillThread = fillThread;
        this.fill = fill;
        this.filled = new CountDownLatch(fill == null ? 0 : 1);
        this.layers = List.copyOf(layers);
        List<Checkpoint> sorted = new ArrayList<>(checkpoints);
        sorted.sort(java.util.Comparator.comparingInt(Checkpoint::position));
        this.checkpoints = List.copyOf(sorted);
        long n = 0;
        int offset = layers.isEmpty() ? 0 : layers.get(0).offset();
        int recurrent = 0;
        for (LayerState l : layers) {
            if (l.offset() != offset) {
                throw new IllegalArgumentException("layers disagree on the offset: " + l.offset() + " vs " + offset);
            }
            if (l.kind() == LayerState.Kind.RECURRENT) {
                recurrent++;
            }
            n += l.nbytes();
        }
        int previous = 0;
        for (Checkpoint c : this.checkpoints) {
            if (c.position() <= previous || c.position() >= offset) {
                throw new IllegalArgumentException("checkpoint at " + c.position() + " of a snapshot of " + offset
                        + " positions (positions are distinct, above 0 and below the length)");
            }
            if (c.layers().size() != recurrent) {
                throw new IllegalArgumentException("checkpoint at " + c.position() + " holds "
                        + c.layers().size() + " layers for " + recurrent + " recurrent layers");
            }
            previous = c.position();
            n += c.nbytes();
        }
        this.recurrentLayers = recurrent;
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

    /**
     * mlx-lm's {@code can_trim_prompt_cache}: dense and quantized caches trim by moving the
     * offset; a recurrent layer's state does not.
     */
    public boolean trimmable() {
        return recurrentLayers == 0;
    }

    /** The recurrent layers' checkpoints below the snapshot's length, by position. */
    public List<Checkpoint> checkpoints() {
        return checkpoints;
    }

    /**
     * The positions the snapshot restores at, ascending: null for a {@linkplain #trimmable()
     * trimmable} one (every position up to its length), else its checkpoints' positions and its
     * length.
     */
    public int[] boundaries() {
        if (trimmable()) {
            return null;
        }
        int[] b = new int[checkpoints.size() + 1];
        for (int i = 0; i < checkpoints.size(); i++) {
            b[i] = checkpoints.get(i).position();
        }
        b[checkpoints.size()] = tokens();
        return b;
    }

    /**
     * The recurrent layers' state after {@code position} positions, in layer order: the
     * snapshot's own at its length, else the checkpoint's there.
     *
     * @throws IllegalArgumentException when {@code position} is not a {@linkplain #boundaries() boundary}
     */
    public List<LayerState> recurrentAt(int position) {
        if (position == tokens()) {
            return layers.stream()
                    .filter(l -> l.kind() == LayerState.Kind.RECURRENT)
                    .toList();
        }
        for (Checkpoint c : checkpoints) {
            if (c.position() == position) {
                return c.layers();
            }
        }
        throw new IllegalArgumentException("no recurrent state at " + position + " in a snapshot restorable at "
                + java.util.Arrays.toString(boundaries()));
    }

    /** Whether the bytes are written (always, for a snapshot built filled) or their writing failed. */
    public boolean filled() {
        return filled.getCount() == 0;
    }

    /**
     * Returns once the bytes are valid to read: at once for a filled snapshot; on a pending
     * snapshot's filling thread it writes them now (the first call does; the bytes' computation
     * may be waited for); on any other thread it waits until the filling thread has written them.
     * The caller holds a reference.
     *
     * @throws IllegalStateException when the bytes could not be written (they are never valid)
     */
    public void awaitFilled() {
        if (filled.getCount() != 0) {
            Runnable run = null;
            synchronized (this) {
                if (fill != null && Thread.currentThread() == fillThread) {
                    run = fill;
                    fill = null;
                }
            }
            if (run != null) {
                runFill(run);
            } else {
                try {
                    filled.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted waiting for a snapshot's bytes", e);
                }
            }
        }
        RuntimeException failure = fillFailure;
        if (failure != null) {
            throw new IllegalStateException("the snapshot's bytes could not be written", failure);
        }
    }

    /**
     * Runs {@code onFilled} once the bytes are valid (now, on the calling thread, when they are
     * already; else on the filling thread right after it writes them), or {@code onFailed} instead
     * when their writing failed. Exactly one of the two runs, once.
     */
    public void whenFilled(Runnable onFilled, Runnable onFailed) {
        synchronized (this) {
            if (filled.getCount() != 0) {
                onFill.add(new Runnable[] {onFilled, onFailed});
                return;
            }
        }
        (fillFailure == null ? onFilled : onFailed).run();
    }

    private void runFill(Runnable run) {
        try {
            run.run();
        } catch (RuntimeException e) {
            fillFailure = e;
        }
        List<Runnable[]> callbacks;
        synchronized (this) {
            fillThread = null;
            filled.countDown();
            callbacks = List.copyOf(onFill);
            onFill.clear();
        }
        RuntimeException failure = fillFailure;
        for (Runnable[] c : callbacks) {
            (failure == null ? c[0] : c[1]).run();
        }
        if (failure != null) {
            throw new IllegalStateException("the snapshot's bytes could not be written", failure);
        }
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
        private final List<Checkpoint> checkpoints = new ArrayList<>();

        /** Native bytes for one tensor, owned by the snapshot being built. */
        public MemorySegment allocate(long bytes) {
            return arena.allocate(Math.max(bytes, 1), 64).asSlice(0, bytes);
        }

        public Builder add(LayerState layer) {
            layers.add(layer);
            return this;
        }

        /** Adds the recurrent layers' state at a position below the snapshot's length. */
        public Builder checkpoint(Checkpoint checkpoint) {
            checkpoints.add(checkpoint);
            return this;
        }

        public KvSnapshot build() {
            return build(null, null);
        }

        /**
         * The snapshot, its bytes still to be written by {@code fill} on the calling thread (its
         * filling thread: {@link KvSnapshot#awaitFilled()} there runs it, once; an exception it
         * throws marks the bytes as never valid). Whoever is to run it later keeps a reference to
         * the snapshot until it has run, so the memory it writes stays allocated.
         */
        public KvSnapshot buildPending(Runnable fill) {
            return build(Thread.currentThread(), java.util.Objects.requireNonNull(fill, "fill"));
        }

        private KvSnapshot build(Thread fillThread, Runnable fill) {
            try {
                return new KvSnapshot(arena, layers, checkpoints, fillThread, fill);
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
