package dev.mlxring.exec.prefix;

import dev.mlxring.exec.kv.ArraysCache;
import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.kv.QuantizedKvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.kvstore.CacheNamespace;
import dev.mlxring.kvstore.KvSnapshot;
import dev.mlxring.kvstore.PrefixCache;
import dev.mlxring.kvstore.PrefixHit;
import dev.mlxring.pipeline.KvQuantization;
import dev.mlxring.pipeline.PromptSegment;
import java.util.Arrays;
import java.util.List;

/**
 * exec's side of the prefix cache for one resident model: before a run, the longest reusable
 * prefix restored into fresh layer caches; after a finished run, its caches published back
 * (mlx_lm.server's {@code fetch_nearest_cache} then {@code insert_cache} around
 * {@code stream_generate}); a batched row's caches also at each prompt segment's end. The cache decides what matches and which tier serves it.
 *
 * <p>A hybrid model's recurrent layers ({@link ArraysCache}) are snapshotted with the KV layers;
 * their state cannot be trimmed, so an entry restores only at its length or at a checkpoint of
 * that state: a serial run takes one after the prefill chunk that ends at least
 * {@link #checkpointTokens()} positions past the run's previous boundary (its restored prefix or
 * its last checkpoint).
 *
 * <p>Exec thread only. Does not own the {@link PrefixCache} (the composition root closes it).
 */
public final class PrefixReuse {
    private static final System.Logger LOG = System.getLogger("dev.mlxring.exec.prefix");

    /** The default {@link #checkpointTokens()}: a checkpoint per 2048 prompt positions. */
    public static final int DEFAULT_CHECKPOINT_TOKENS = 2048;

    private final PrefixCache cache;
    private final String modelFingerprint;
    private final String adapter;
    private final int checkpointTokens;

    /** For a model without an adapter. */
    public PrefixReuse(PrefixCache cache, String modelFingerprint) {
        this(cache, modelFingerprint, "");
    }

    /**
     * For a model with the adapter whose fingerprint is {@code adapter} ("" for none): its entries
     * live in their own namespace, so a prefix computed under one adapter is never restored
     * under another, or without one.
     */
    public PrefixReuse(PrefixCache cache, String modelFingerprint, String adapter) {
        this(cache, modelFingerprint, adapter, DEFAULT_CHECKPOINT_TOKENS);
    }

    /**
     * As above, a hybrid model's run checkpointing its recurrent state every
     * {@code checkpointTokens} prompt positions (rounded up to whole prefill chunks; 0: only at
     * the run's end).
     */
    public PrefixReuse(PrefixCache cache, String modelFingerprint, String adapter, int checkpointTokens) {
        if (checkpointTokens < 0) {
            throw new IllegalArgumentException("--prompt-cache-checkpoint must be >= 0, got " + checkpointTokens);
        }
        this.cache = cache;
        this.modelFingerprint = modelFingerprint;
        this.adapter = java.util.Objects.requireNonNull(adapter, "adapter");
        this.checkpointTokens = checkpointTokens;
    }

    /** Prompt positions between a hybrid run's checkpoints of its recurrent state (0: none). */
    public int checkpointTokens() {
        return checkpointTokens;
    }

    /**
     * Whether the prefix cache can serve {@code model}: when its layers are full-precision or
     * quantized KV caches, or recurrent state ({@link ArraysCache}: a gated delta net's conv and
     * recurrence state). A model with rotating layers (sliding windows) runs every prompt whole:
     * nothing is restored for it and nothing published.
     */
    public static boolean supports(LanguageModel model) {
        KvCache[] caches = model.newCache();
        try {
            return Arrays.stream(caches)
                    .allMatch(c ->
                            c instanceof DenseKvCache || c instanceof QuantizedKvCache || c instanceof ArraysCache);
        } finally {
            Arrays.stream(caches).forEach(KvCache::close);
        }
    }

    /** {@code reuse}, or null where it cannot serve {@code model} ({@link #supports}). */
    public static PrefixReuse forModel(PrefixReuse reuse, LanguageModel model) {
        return reuse != null && supports(model) ? reuse : null;
    }

    /** A restored prefix: {@code caches} (the caller owns them) hold {@code cachedTokens} positions. */
    public record Restored(KvCache[] caches, int cachedTokens) {}

    /** The namespace of a run under {@code kv} (null = full precision). */
    public CacheNamespace namespace(KvQuantization kv) {
        return namespace(kv, adapter);
    }

    /**
     * The namespace of a run under {@code kv} (null = full precision) with the named adapter whose
     * fingerprint is {@code adapterFingerprint} ({@link dev.mlxring.exec.nn.NamedAdapter#fingerprint};
     * "" = the model as loaded), so rows of one batch on different adapters never share a prefix.
     */
    public CacheNamespace namespace(KvQuantization kv, String adapterFingerprint) {
        String scheme = kv == null ? "dense" : "kv" + kv.bits() + "g" + kv.groupSize() + "s" + kv.quantizedKvStart();
        return new CacheNamespace(modelFingerprint, scheme, java.util.Objects.requireNonNull(adapterFingerprint));
    }

    /**
     * The restored prefix of {@code prompt}, or null on a miss. An entry still pending ({@link
     * PendingSnapshot}) is filled first; one whose bytes could not be written is a miss.
     */
    public Restored restore(CacheNamespace ns, int[] prompt) {
        try (PrefixHit hit = cache.lookup(ns, prompt)) {
            if (hit == null) {
                return null;
            }
            try {
                hit.snapshot().awaitFilled();
            } catch (IllegalStateException e) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "prefix cache: an entry's bytes were never written; recomputing",
                        e);
                return null;
            }
            return new Restored(KvSnapshots.restore(hit.snapshot(), hit.cachedTokens()), hit.cachedTokens());
        }
    }

    /**
     * A snapshot of caches and the ids they hold, not yet handed to the cache: the caller owns
     * it until {@link #publish(CacheNamespace, Captured)} or {@link #publishSegment} takes it, or
     * it {@link #discard()}s it.
     */
    public record Captured(int[] tokens, KvSnapshot snapshot) {
        public void discard() {
            snapshot.release();
        }
    }

    /**
     * Copies caches holding {@code prefix} (the tokens restored for the run, possibly none)
     * followed by {@code runSequence} (what the run itself fed). Null when the caches' offset
     * disagrees with the ids (nothing inconsistent is ever stored) or they cannot be captured.
     */
    public Captured capture(int[] prefix, int[] runSequence, KvCache[] caches) {
        return capture(prefix, runSequence, caches, List.of());
    }

    /**
     * As above, with {@code checkpoints} of the caches' recurrent state taken while the run's
     * prompt was prefilled ({@link KvSnapshots#checkpoint}; copied, still the caller's).
     */
    public Captured capture(int[] prefix, int[] runSequence, KvCache[] caches, List<KvSnapshot> checkpoints) {
        if (!allAt(caches, prefix.length + runSequence.length)) {
            return null;
        }
        KvSnapshot s = KvSnapshots.capture(caches, checkpoints);
        return s == null ? null : new Captured(concat(prefix, runSequence), s);
    }

    /**
     * As {@link #capture(int[], int[], KvCache[], List)}, its copy deferred: the snapshot in the
     * returned {@code captured} may be published at once while its bytes are written later
     * ({@link PendingSnapshot}; the caller completes {@code pending} exactly once). Null where
     * {@code capture} gives null.
     */
    public Deferred captureDeferred(int[] prefix, int[] runSequence, KvCache[] caches, List<KvSnapshot> checkpoints) {
        if (!allAt(caches, prefix.length + runSequence.length)) {
            return null;
        }
        PendingSnapshot p = PendingSnapshot.take(caches, checkpoints);
        return p == null ? null : new Deferred(new Captured(concat(prefix, runSequence), p.snapshot()), p);
    }

    /** Whether every layer's cache holds exactly {@code positions} positions. */
    private static boolean allAt(KvCache[] caches, int positions) {
        for (KvCache c : caches) {
            if (c.offset() != positions) {
                return false;
            }
        }
        return true;
    }

    private static int[] concat(int[] prefix, int[] runSequence) {
        int[] tokens = Arrays.copyOf(prefix, prefix.length + runSequence.length);
        System.arraycopy(runSequence, 0, tokens, prefix.length, runSequence.length);
        return tokens;
    }

    /** A {@link Captured} whose bytes {@code pending} writes. */
    public record Deferred(Captured captured, PendingSnapshot pending) {}

    /** Hands a finished request's snapshot to the cache ({@code insert_cache}, type assistant). */
    public void publish(CacheNamespace ns, Captured c) {
        cache.publish(ns, c.tokens(), c.snapshot());
    }

    /** Hands a segment end's snapshot to the cache ({@code insert_cache(cache_type=kind)}). */
    public void publishSegment(CacheNamespace ns, Captured c, PromptSegment.Kind kind) {
        cache.publishSegment(ns, c.tokens(), c.snapshot(), kind);
    }

    /**
     * {@link #capture} then {@link #publish(CacheNamespace, Captured)}: a finished run's caches.
     *
     * @return whether a snapshot was handed to the cache
     */
    public boolean publish(CacheNamespace ns, int[] prefix, int[] runSequence, KvCache[] caches) {
        return publish(ns, prefix, runSequence, caches, List.of());
    }

    /** As above, with checkpoints of the recurrent state ({@link #capture(int[], int[], KvCache[], List)}). */
    public boolean publish(
            CacheNamespace ns, int[] prefix, int[] runSequence, KvCache[] caches, List<KvSnapshot> checkpoints) {
        Captured c = capture(prefix, runSequence, caches, checkpoints);
        if (c == null) {
            return false;
        }
        publish(ns, c);
        return true;
    }
}
