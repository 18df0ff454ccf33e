package dev.mlxring.exec.batch;

import dev.mlxring.exec.kv.BatchKvCache;
import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.mlx.MlxArray;
import java.util.ArrayList;
import java.util.List;

/**
 * The per-layer KV state of one group of rows (a prompt batch or the generation batch). A group
 * of one row that never shared keeps the model's plain solo caches ({@link DenseKvCache}, the
 * serial path's caches, so its forward is the serial graph); the first time a second row joins,
 * {@link #batch()} merges them into {@link BatchKvCache}s (mlx-lm's {@code KVCache.merge}), after
 * which every operation is mlx-lm's batch operation. The two are numerically interchangeable for
 * one unpadded row (mlx-lm's {@code BatchKVCache} of one row gives the serial bits).
 *
 * <p>Owns its caches; {@link #close()} frees them. Exec thread only.
 */
final class RowCaches implements AutoCloseable {
    private final KvCache[] layers;
    private int rows;

    private RowCaches(KvCache[] layers, int rows) {
        this.layers = layers;
        this.rows = rows;
    }

    /** Empty caches for {@code rows} new rows: solo caches for one, else {@code BatchKVCache([0] * rows)}. */
    static RowCaches fresh(LanguageModel model, int rows) {
        KvCache[] solo = model.newCache();
        if (rows == 1) {
            return new RowCaches(solo, 1);
        }
        for (int i = 0; i < solo.length; i++) {
            solo[i].close();
            solo[i] = new BatchKvCache(new int[rows]);
        }
        return new RowCaches(solo, rows);
    }

    /**
     * The caches of rows that arrive with histories (a restored prefix): one row adopts its solo
     * caches as they are; several are merged as {@code _merge_caches} does ({@code KVCache.merge}:
     * right-aligned, an empty row padded whole). The rows' histories are consumed.
     */
    static RowCaches fromHistories(LanguageModel model, List<Row> joining) {
        int n = joining.size();
        KvCache[][] solo = new KvCache[n][];
        for (int r = 0; r < n; r++) {
            Row row = joining.get(r);
            solo[r] = row.history != null ? row.history : model.newCache();
            row.history = null;
        }
        if (n == 1) {
            return new RowCaches(solo[0], 1);
        }
        int layers = solo[0].length;
        KvCache[] merged = new KvCache[layers];
        for (int l = 0; l < layers; l++) {
            DenseKvCache[] each = new DenseKvCache[n];
            for (int r = 0; r < n; r++) {
                each[r] = (DenseKvCache) solo[r][l];
            }
            merged[l] = BatchKvCache.merge(each);
        }
        for (KvCache[] row : solo) {
            for (KvCache c : row) {
                c.close();
            }
        }
        return new RowCaches(merged, n);
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
                extracted[i] = ((BatchKvCache) layers[i]).extract(row);
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

    boolean solo() {
        return layers[0] instanceof DenseKvCache;
    }

    /** Solo caches become a batch of one ({@code BatchKVCache.merge([cache])}); a batch stays as it is. */
    void batch() {
        if (!solo()) {
            return;
        }
        for (int i = 0; i < layers.length; i++) {
            DenseKvCache d = (DenseKvCache) layers[i];
            layers[i] = BatchKvCache.merge(d);
            d.close();
        }
    }

    /** {@code _extend_cache}: {@code other}'s rows appended (both batched first); {@code other} is emptied. */
    void extend(RowCaches other) {
        batch();
        other.batch();
        for (int i = 0; i < layers.length; i++) {
            ((BatchKvCache) layers[i]).extend((BatchKvCache) other.layers[i]);
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
            ((BatchKvCache) c).filter(keep);
        }
        rows = keep.length;
    }

    /** A filtered copy holding {@code keep} (a batch: {@code deepcopy} then {@code filter}). */
    RowCaches select(int[] keep) {
        KvCache[] out = new KvCache[layers.length];
        for (int i = 0; i < layers.length; i++) {
            out[i] = ((BatchKvCache) layers[i]).select(keep);
        }
        return new RowCaches(out, keep.length);
    }

    void prepareRightPadding(int[] padding) {
        for (KvCache c : layers) {
            ((BatchKvCache) c).prepareRightPadding(padding);
        }
    }

    void finalizePadding() {
        for (KvCache c : layers) {
            ((BatchKvCache) c).finalizePadding();
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
