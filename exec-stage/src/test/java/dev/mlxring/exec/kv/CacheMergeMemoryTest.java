package dev.mlxring.exec.kv;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * Merging rows' caches into one batch ({@code BatchKVCache.merge}: a zero buffer, then one slice
 * update per row) must materialise the merged buffer about once, as mlx-lm's merge does, where
 * each in-place update's superseded array is dropped and its buffer donated to the next. A merge
 * that keeps every intermediate alive until the batch is evaluated holds one full batch buffer
 * per row: for a prompt batch of 8 restored 600-token prefixes, 8 times the merged KV.
 */
class CacheMergeMemoryTest {
    private static final int ROWS = 8;
    private static final int HEADS = 3;
    private static final int POSITIONS = 600;
    private static final int HEAD_DIM = 64;

    private static MlxArray filled(float base) {
        float[] v = new float[HEADS * POSITIONS * HEAD_DIM];
        for (int i = 0; i < v.length; i++) {
            v[i] = base + i;
        }
        MlxArray a = Mlx.fromFloats(v, 1, HEADS, POSITIONS, HEAD_DIM);
        Mlx.eval(a);
        return a;
    }

    /** MLX's peak active bytes over those held before, while {@code merge} runs and its result is evaluated. */
    private static <C extends KvCache> long mergePeakBytes(
            Function<Integer, C> row, Function<C[], KvCache> merge, C[] rows) {
        for (int r = 0; r < ROWS; r++) {
            rows[r] = row.apply(r);
            Mlx.eval(rows[r].state());
        }
        long before = Mlx.memory().activeBytes();
        Mlx.resetPeakMemory();
        KvCache merged = merge.apply(rows);
        Mlx.eval(merged.state());
        long peak = Mlx.memory().peakBytes() - before;
        merged.close();
        for (C c : rows) {
            c.close();
        }
        return peak;
    }

    private static long mergedBytes() {
        return 2L * ROWS * HEADS * POSITIONS * HEAD_DIM * Float.BYTES;
    }

    private static void assertAboutOneBuffer(String what, long peakBytes) {
        assertTrue(
                peakBytes <= mergedBytes() * 5 / 4,
                what + " peaked at " + peakBytes / 1e6 + " MB over its inputs; the merged keys and values are "
                        + mergedBytes() / 1e6 + " MB");
    }

    @Test
    void aDenseMergeMaterialisesTheBatchOnce() {
        try (ArrayScope scope = ArrayScope.open()) {
            long peak = mergePeakBytes(
                    r -> DenseKvCache.restored(filled(r), filled(-r), POSITIONS),
                    caches -> BatchKvCache.merge(caches),
                    new DenseKvCache[ROWS]);
            assertAboutOneBuffer("BatchKvCache.merge of " + ROWS + " rows", peak);
        }
    }

    @Test
    void aRotatingMergeMaterialisesTheBatchOnce() {
        try (ArrayScope scope = ArrayScope.open()) {
            long peak = mergePeakBytes(
                    r -> {
                        RotatingKvCache c = new RotatingKvCache(POSITIONS, 0);
                        c.updateAndFetch(filled(r), filled(-r));
                        return c;
                    },
                    caches -> BatchRotatingKvCache.merge(caches),
                    new RotatingKvCache[ROWS]);
            assertAboutOneBuffer("BatchRotatingKvCache.merge of " + ROWS + " rows", peak);
        }
    }
}
