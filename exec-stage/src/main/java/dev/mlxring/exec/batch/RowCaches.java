package dev.mlxring.exec.batch;

import dev.mlxring.exec.kv.ArraysCache;
import dev.mlxring.exec.kv.BatchKvCache;
import dev.mlxring.exec.kv.BatchQuantizedKvCache;
import dev.mlxring.exec.kv.BatchRotatingKvCache;
import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.kv.QuantizedKvCache;
import dev.mlxring.exec.kv.RotatingKvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.pipeline.KvQuantization;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The per-layer KV state of one group of rows (a prompt batch or the generation batch). A group
 * of one row that never shared keeps the model's plain solo caches ({@link DenseKvCache}s, and
 * {@link RotatingKvCache}s for sliding-window layers: the serial path's caches, so its forward is
 * the serial graph); the first time a second row joins, {@link #batch()} merges each layer with
 * its own kind ({@code KVCache.merge} into a {@link BatchKvCache}, {@code RotatingKVCache.merge}
 * into a {@link BatchRotatingKvCache}), after which every operation is mlx-lm's batch operation.
 * The two are numerically interchangeable for one unpadded row (mlx-lm's one-row batch caches
 * give the serial bits).
 *
 * <p>Owns its caches; {@link #close()} frees them. Exec thread only.
 */
final class RowCaches implements AutoCloseable {
    private final KvCache[] layers;
    private int rows;
    /** The rows' KV quantization, or null for full precision. */
    private final KvQuantization kvQuantization;

    private RowCaches(KvCache[] layers, int rows, KvQuantization kvQuantization) {
        this.layers = layers;
        this.rows = rows;
        this.kvQuantization = kvQuantization;
    }

    /**
     * Empty caches for {@code rows} new rows: solo caches for one, else each layer's merge of
     * empty solo caches ({@code BatchKVCache([0] * rows)}, or
     * {@code BatchRotatingKVCache(max_size, [0] * rows)} for a rotating layer).
     */
    static RowCaches fresh(LanguageModel model, int rows, int maxKvSize, KvQuantization kvQuantization) {
        KvCache[] solo = model.newCache(maxKvSize);
        if (rows == 1) {
            return lone(solo, kvQuantization);
        }
        for (int i = 0; i < solo.length; i++) {
            KvCache c = solo[i];
            solo[i] = switch (c) {
                case DenseKvCache d -> new BatchKvCache(new int[rows]);
                case RotatingKvCache r -> new BatchRotatingKvCache(r.maxSize(), new int[rows]);
                case ArraysCache a -> ArraysCache.merge(emptyArrays(a.size(), rows));
                default -> throw new IllegalStateException("a batch cannot hold " + c);
            };
            c.close();
        }
        return new RowCaches(solo, rows, kvQuantization);
    }

    /**
     * The caches of rows that arrive with histories (a restored prefix): one row adopts its solo
     * caches as they are; several are merged as {@code _merge_caches} does ({@code KVCache.merge}:
     * right-aligned, an empty row padded whole). The rows' histories are consumed.
     */
    static RowCaches fromHistories(
            LanguageModel model, List<Row> joining, int maxKvSize, KvQuantization kvQuantization) {
        int n = joining.size();
        KvCache[][] solo = new KvCache[n][];
        for (int r = 0; r < n; r++) {
            Row row = joining.get(r);
            solo[r] = row.history != null ? row.history : model.newCache(maxKvSize);
            row.history = null;
        }
        if (n == 1) {
            return lone(solo[0], kvQuantization);
        }
        int layers = solo[0].length;
        KvCache[] merged = new KvCache[layers];
        for (int l = 0; l < layers; l++) {
            KvCache[] each = new KvCache[n];
            for (int r = 0; r < n; r++) {
                each[r] = solo[r][l];
            }
            merged[l] = merge(each);
        }
        for (KvCache[] row : solo) {
            for (KvCache c : row) {
                c.close();
            }
        }
        return new RowCaches(merged, n, kvQuantization);
    }

    /**
     * One row's caches: kept solo (the serial graph), unless a layer is a rotating cache that
     * keeps a prefix ({@code --max-kv-size}: keep 4), which mlx-lm's batch cache does not have;
     * then the row runs as mlx-lm's one-row batch from the start, so it is the same row whether
     * it stays alone or not.
     */
    private static RowCaches lone(KvCache[] solo, KvQuantization kvQuantization) {
        RowCaches caches = new RowCaches(solo, 1, kvQuantization);
        for (KvCache c : solo) {
            if (c instanceof RotatingKvCache r && r.keep() != 0) {
                caches.batch();
                break;
            }
        }
        return caches;
    }

    /**
     * Runs {@code use} on row {@code row}'s caches: a solo group's own caches (not to be kept or
     * closed), or each batch layer's {@code extract(row)}, freed when {@code use} returns.
     */
    void withRow(int row, java.util.function.Consumer<KvCache[]> use) {
        if (solo()) {
            use.accept(layers.clone());
            return;
        }
        KvCache[] extracted = new KvCache[layers.length];
        try {
            for (int i = 0; i < layers.length; i++) {
                extracted[i] = switch (layers[i]) {
                    case BatchKvCache b -> b.extract(row);
                    case BatchQuantizedKvCache b -> b.extract(row);
                    case BatchRotatingKvCache b -> b.extract(row);
                    case ArraysCache a -> a.extract(row);
                    default -> throw new IllegalStateException("not a batch cache: " + layers[i]);
                };
            }
            use.accept(extracted);
        } finally {
            for (KvCache c : extracted) {
                if (c != null) {
                    c.close();
                }
            }
        }
    }

    int rows() {
        return rows;
    }

    KvCache[] layers() {
        return layers;
    }

    /**
     * Whether the group still holds solo caches. A hybrid model's {@link ArraysCache} is one class
     * for both forms, so the attention layers tell (every such model has one).
     */
    boolean solo() {
        for (KvCache c : layers) {
            if (c instanceof BatchKvCache || c instanceof BatchQuantizedKvCache || c instanceof BatchRotatingKvCache) {
                return false;
            }
        }
        return true;
    }

    private static ArraysCache[] emptyArrays(int size, int rows) {
        ArraysCache[] empty = new ArraysCache[rows];
        for (int i = 0; i < rows; i++) {
            empty[i] = new ArraysCache(size);
        }
        return empty;
    }

    /** Solo caches become a batch of one (each layer's {@code merge([cache])}); a batch stays as it is. */
    void batch() {
        if (!solo()) {
            return;
        }
        for (int i = 0; i < layers.length; i++) {
            KvCache c = layers[i];
            layers[i] = merge(c);
            c.close();
        }
    }

    /** {@code cache[l].merge(caches)}: a layer's solo caches (all of one kind) into its batch kind. */
    private static KvCache merge(KvCache... solo) {
        return switch (solo[0]) {
            case DenseKvCache d -> BatchKvCache.merge(java.util.Arrays.copyOf(solo, solo.length, DenseKvCache[].class));
            case QuantizedKvCache q ->
                BatchQuantizedKvCache.merge(java.util.Arrays.copyOf(solo, solo.length, QuantizedKvCache[].class));
            case RotatingKvCache r ->
                BatchRotatingKvCache.merge(java.util.Arrays.copyOf(solo, solo.length, RotatingKvCache[].class));
            case ArraysCache a -> ArraysCache.merge(java.util.Arrays.copyOf(solo, solo.length, ArraysCache[].class));
            default -> throw new IllegalStateException(solo[0] + " does not support batching");
        };
    }

    /** {@code _extend_cache}: {@code other}'s rows appended (both batched first); {@code other} is emptied. */
    void extend(RowCaches other) {
        if (!Objects.equals(kvQuantization, other.kvQuantization)) {
            throw new IllegalStateException(
                    "rows with KV scheme " + other.kvQuantization + " cannot join rows with " + kvQuantization);
        }
        batch();
        other.batch();
        for (int i = 0; i < layers.length; i++) {
            alignQuantized(i, other);
            switch (layers[i]) {
                case BatchKvCache b -> b.extend((BatchKvCache) other.layers[i]);
                case BatchQuantizedKvCache b -> b.extend((BatchQuantizedKvCache) other.layers[i]);
                case BatchRotatingKvCache b -> b.extend((BatchRotatingKvCache) other.layers[i]);
                case ArraysCache a -> a.extend((ArraysCache) other.layers[i]);
                default -> throw new IllegalStateException("not a batch cache: " + layers[i]);
            }
        }
        rows += other.rows;
        other.rows = 0;
    }

    /** In-place {@code filter(keep)} of every layer ({@code keep} non-empty). */
    void filter(int[] keep) {
        if (solo()) {
            if (keep.length != 1 || keep[0] != 0) {
                throw new IllegalArgumentException("a solo cache holds row 0 only");
            }
            return;
        }
        for (KvCache c : layers) {
            switch (c) {
                case BatchKvCache b -> b.filter(keep);
                case BatchQuantizedKvCache b -> b.filter(keep);
                case BatchRotatingKvCache b -> b.filter(keep);
                case ArraysCache a -> a.filter(keep);
                default -> throw new IllegalStateException("not a batch cache: " + c);
            }
        }
        rows = keep.length;
    }

    /** A filtered copy holding {@code keep} (a batch: {@code deepcopy} then {@code filter}). */
    RowCaches select(int[] keep) {
        KvCache[] out = new KvCache[layers.length];
        for (int i = 0; i < layers.length; i++) {
            out[i] = switch (layers[i]) {
                case BatchKvCache b -> b.select(keep);
                case BatchQuantizedKvCache b -> b.select(keep);
                case BatchRotatingKvCache b -> b.select(keep);
                case ArraysCache a -> a.select(keep);
                default -> throw new IllegalStateException("not a batch cache: " + layers[i]);
            };
        }
        return new RowCaches(out, keep.length, kvQuantization);
    }

    /**
     * Rolls row {@code r} of every layer back by {@code counts[r]} positions (a verification
     * round's rejected and padding positions): a solo group's caches by {@link KvCache#trim}, a
     * batch's by each layer's {@code trimRows}.
     */
    void trimRows(int[] counts) {
        if (counts.length != rows) {
            throw new IllegalArgumentException("trim counts for " + counts.length + " rows, the group has " + rows);
        }
        for (KvCache c : layers) {
            switch (c) {
                case BatchKvCache b -> b.trimRows(counts);
                case BatchQuantizedKvCache b -> b.trimRows(counts);
                case BatchRotatingKvCache b -> b.trimRows(counts);
                default -> c.trim(counts[0]);
            }
        }
    }

    /**
     * The most positions beyond one that a step may write and still roll back ({@code trimRows}):
     * unbounded without rotating layers; for a rotating layer, what keeps it short of its window
     * and unrotated (mlx-lm's {@code is_trimmable}); 0 when a rotating layer cannot be rolled back.
     */
    int speculativeRoom() {
        int room = Integer.MAX_VALUE;
        for (KvCache c : layers) {
            switch (c) {
                case BatchRotatingKvCache b ->
                    room = Math.min(room, b.trimmableAfter(1) ? b.maxSize() - b.offset() - 2 : 0);
                case RotatingKvCache r -> room = Math.min(room, r.isTrimmable() ? r.maxSize() - r.offset() - 2 : 0);
                default -> {}
            }
        }
        return Math.max(0, room);
    }

    /** {@code prepare(lengths=lengths, right_padding=padding)} of every layer. */
    void prepareRightPadding(int[] lengths, int[] padding) {
        for (KvCache c : layers) {
            switch (c) {
                case BatchKvCache b -> b.prepareRightPadding(padding);
                case BatchQuantizedKvCache b -> b.prepareRightPadding(padding);
                case BatchRotatingKvCache b -> b.prepareRightPadding(lengths, padding);
                case ArraysCache a -> a.prepare(lengths);
                default -> throw new IllegalStateException("not a batch cache: " + c);
            }
        }
    }

    void finalizePadding() {
        for (KvCache c : layers) {
            switch (c) {
                case BatchKvCache b -> b.finalizePadding();
                case BatchQuantizedKvCache b -> b.finalizePadding();
                case BatchRotatingKvCache b -> b.finalizePadding();
                case ArraysCache a -> a.finalizePadding();
                default -> throw new IllegalStateException("not a batch cache: " + c);
            }
        }
    }

    /**
     * generate_step's {@code maybe_quantize_kv_cache} after a forward, for quantized rows (nothing
     * for full-precision ones): a solo group's layers convert exactly as the serial path's do
     * ({@link QuantizedKvCache#maybeQuantize}, each layer once it holds {@code quantizedKvStart}
     * positions); a batch layer converts ({@link BatchQuantizedKvCache#fromDense}) once its
     * longest row holds that many, so a shorter row's positions are quantized from then on, earlier
     * than its serial run would quantize them when the start is above 0 and the rows straddle it.
     * Call between a prefill chunk's forward and its padding finalized only when no right padding
     * is pending.
     */
    void maybeQuantize() {
        if (kvQuantization == null) {
            return;
        }
        if (solo()) {
            QuantizedKvCache.maybeQuantize(kvQuantization, layers);
            return;
        }
        for (int i = 0; i < layers.length; i++) {
            if (layers[i] instanceof BatchKvCache b && b.offset() >= kvQuantization.quantizedKvStart()) {
                layers[i] = BatchQuantizedKvCache.fromDense(b, kvQuantization.groupSize(), kvQuantization.bits());
                b.close();
            }
        }
    }

    /**
     * Layers that are quantized but hold no position (rows that joined a prompt batch whose other
     * rows, already quantized, split off before this chunk) start over as fresh full-precision
     * layers: a layer holding nothing is a fresh cache, and a row's first forward attends in full
     * precision, as generate_step's first call does before {@code maybe_quantize_kv_cache}. Call
     * before a prefill chunk's forward.
     */
    void freshenEmptyQuantized() {
        for (int i = 0; i < layers.length; i++) {
            switch (layers[i]) {
                case BatchQuantizedKvCache b
                when b.offset() == 0 && !b.paddingPending() -> {
                    layers[i] = new BatchKvCache(b.leftPadding());
                    b.close();
                }
                case QuantizedKvCache q
                when q.offset() == 0 -> {
                    layers[i] = new DenseKvCache();
                    q.close();
                }
                default -> {}
            }
        }
    }

    /**
     * Before extending layer {@code i}: when one side is quantized and the other not yet (a
     * quantized-KV start above 0 that one group has reached), the full-precision side converts,
     * so the layer holds one kind.
     */
    private void alignQuantized(int i, RowCaches other) {
        if (layers[i] instanceof BatchQuantizedKvCache && other.layers[i] instanceof BatchKvCache b) {
            other.layers[i] = BatchQuantizedKvCache.fromDense(b, kvQuantization.groupSize(), kvQuantization.bits());
            b.close();
        } else if (layers[i] instanceof BatchKvCache b && other.layers[i] instanceof BatchQuantizedKvCache) {
            layers[i] = BatchQuantizedKvCache.fromDense(b, kvQuantization.groupSize(), kvQuantization.bits());
            b.close();
        }
    }

    /** Every layer's buffers, for {@code mx.eval([c.state for c in cache])}. */
    MlxArray[] state() {
        List<MlxArray> out = new ArrayList<>();
        for (KvCache c : layers) {
            for (MlxArray a : c.state()) {
                out.add(a);
            }
        }
        return out.toArray(new MlxArray[0]);
    }

    @Override
    public void close() {
        for (KvCache c : layers) {
            c.close();
        }
        rows = 0;
    }
}
