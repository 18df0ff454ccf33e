package dev.mlxring.exec.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import org.junit.jupiter.api.Test;

/**
 * {@link BatchKvCache#filter}: the kept rows' buffers, paddings and index are mlx-lm's
 * {@code BatchKVCache.filter} — {@code keys[batch_indices]}, then the common left padding cut —
 * whether or not the kept rows share padding (the cache cuts before it gathers when they do).
 * Every position's key is its row's and position's own value, so a wrong row, a wrong cut or a
 * lost position shows; the cache then takes a decode step, whose write lands at the new index.
 */
class BatchKvCacheFilterTest {
    private static final int HEADS = 2;
    private static final int DIM = 3;

    /** {@code [1, HEADS, n, DIM]} keys whose every element at position {@code i} is {@code base + i}. */
    private static MlxArray row(int base, int n) {
        float[] v = new float[HEADS * n * DIM];
        for (int h = 0; h < HEADS; h++) {
            for (int i = 0; i < n; i++) {
                for (int d = 0; d < DIM; d++) {
                    v[(h * n + i) * DIM + d] = base + i;
                }
            }
        }
        return Mlx.fromFloats(v, 1, HEADS, n, DIM);
    }

    private static float[] values(MlxArray a) {
        Mlx.eval(a);
        return Mlx.contiguous(a).toFloatArray();
    }

    /** Rows of 9, 5, 7 and 3 positions merged (left padding 0, 4, 2, 6), each row's values its own. */
    private static BatchKvCache batch() {
        int[] lengths = {9, 5, 7, 3};
        DenseKvCache[] solo = new DenseKvCache[lengths.length];
        for (int r = 0; r < lengths.length; r++) {
            solo[r] = new DenseKvCache();
            solo[r].updateAndFetch(row(100 * (r + 1), lengths[r]), row(100 * (r + 1), lengths[r]));
        }
        BatchKvCache b = BatchKvCache.merge(solo);
        assertArrayEquals(new int[] {0, 4, 2, 6}, b.leftPadding());
        return b;
    }

    /** The cache's keys as they are now (evaluated, so a later filter cannot change them). */
    private static MlxArray keysNow(BatchKvCache b) {
        MlxArray keys = Mlx.contiguous(b.state()[0]);
        Mlx.eval(keys);
        return keys;
    }

    /** mlx-lm's filter of {@code before}'s buffer: the rows gathered, then positions {@code [cut, end)}. */
    private static float[] mlxLm(MlxArray before, int[] keep, int cut) {
        MlxArray kept = Mlx.take(before, Mlx.fromInts(keep, keep.length), 0);
        return values(Mlx.slice(
                kept, new int[] {0, 0, cut, 0}, new int[] {keep.length, HEADS, kept.dim(2), DIM}, new int[] {1, 1, 1, 1
                }));
    }

    @Test
    void keptRowsThatSharePaddingAreCutThenGatheredToMlxLmsBytes() {
        try (ArrayScope scope = ArrayScope.open()) {
            BatchKvCache b = batch();
            MlxArray before = keysNow(b);
            int[] keep = {3, 1}; // paddings 6 and 4: 4 shared positions go
            float[] expected = mlxLm(before, keep, 4);

            b.filter(keep);

            assertArrayEquals(new int[] {2, 0}, b.leftPadding());
            assertEquals(9 - 4, b.offset());
            assertArrayEquals(expected, values(b.state()[0]));
            assertArrayEquals(expected, values(b.state()[1]));

            // The next step writes at the shared index, after each row's own positions.
            MlxArray k = Mlx.concatenate(0, row(7000, 1), row(8000, 1));
            MlxArray[] kv = b.updateAndFetch(k, k);
            float[] fetched = values(kv[0]);
            int len = 9 - 4 + 1;
            assertEquals(2 * HEADS * len * DIM, fetched.length);
            assertEquals(7000, fetched[(len - 1) * DIM]); // row 0, head 0, last position
            assertEquals(402, fetched[(len - 2) * DIM]); // row 0's own last key before it (row 3: 400..402)
            assertEquals(8000, fetched[(HEADS * len + len - 1) * DIM]); // row 1, head 0, last position
            assertEquals(100 * 2 + 4, fetched[(HEADS * len + len - 2) * DIM]); // row 1 (200..204)
        }
    }

    /** Every row kept in order, none sharing padding: the buffers stay as they are, no copy made. */
    @Test
    void everyRowKeptInOrderKeepsTheBuffersThemselves() {
        try (ArrayScope scope = ArrayScope.open()) {
            BatchKvCache b = batch();
            MlxArray before = keysNow(b);
            MlxArray buffer = b.state()[0];
            float[] expected = mlxLm(before, new int[] {0, 1, 2, 3}, 0);

            b.filter(new int[] {0, 1, 2, 3});

            assertSame(buffer, b.state()[0], "an identity gather copies the buffer into an equal one");
            assertArrayEquals(new int[] {0, 4, 2, 6}, b.leftPadding());
            assertEquals(9, b.offset());
            assertArrayEquals(expected, values(b.state()[0]));
        }
    }

    @Test
    void keptRowsWithoutSharedPaddingAreGatheredWhole() {
        try (ArrayScope scope = ArrayScope.open()) {
            BatchKvCache b = batch();
            MlxArray before = keysNow(b);
            int[] keep = {0, 2, 3};
            float[] expected = mlxLm(before, keep, 0);

            b.filter(keep);

            assertArrayEquals(new int[] {0, 2, 6}, b.leftPadding());
            assertEquals(9, b.offset());
            assertArrayEquals(expected, values(b.state()[0]));
        }
    }
}
