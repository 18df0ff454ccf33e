package dev.mlxring.exec.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link BatchQuantizedKvCache}'s row operations against solo {@link QuantizedKvCache}s given the
 * same keys: after {@code merge}, an append, {@code filter}, {@code extend}, {@code trimRows} and
 * {@code fromDense}, every row's {@code extract} holds exactly the bytes (packed words, scales,
 * biases of keys and values) of the solo cache that saw only that row's positions.
 */
class BatchQuantizedKvCacheTest {
    private static final int HEADS = 2;
    private static final int DIM = 32;

    /** Deterministic {@code [b, HEADS, length, DIM]} float32 values, distinct per seed. */
    private static MlxArray values(int b, int length, int seed) {
        float[] v = new float[b * HEADS * length * DIM];
        for (int i = 0; i < v.length; i++) {
            v[i] = (float) Math.sin(seed * 7.13 + i * 0.37) * (1 + (i % 5));
        }
        return Mlx.fromFloats(v, b, HEADS, length, DIM);
    }

    private static MlxArray row(MlxArray x, int r) {
        return Mlx.slice(
                x, new int[] {r, 0, 0, 0}, new int[] {r + 1, x.dim(1), x.dim(2), x.dim(3)}, new int[] {1, 1, 1, 1});
    }

    private static void assertSameBytes(QuantizedKvCache want, QuantizedKvCache got, String what) {
        assertEquals(want.offset(), got.offset(), what + ": offset");
        MlxArray[] w = want.keysAndValues();
        MlxArray[] g = got.keysAndValues();
        for (int i = 0; i < 6; i++) {
            Mlx.eval(w[i], g[i]);
            assertArrayEquals(
                    Mlx.contiguous(w[i]).toBytes(), Mlx.contiguous(g[i]).toBytes(), what + ": array " + i);
        }
    }

    private static void assertRowsMatch(BatchQuantizedKvCache batch, QuantizedKvCache[] solo, String what) {
        assertEquals(solo.length, batch.batchSize(), what + ": rows");
        for (int r = 0; r < solo.length; r++) {
            try (QuantizedKvCache got = batch.extract(r)) {
                assertSameBytes(solo[r], got, what + ", row " + r);
            }
        }
    }

    private static QuantizedKvCache solo(int bits, int length, int seed) {
        QuantizedKvCache c = new QuantizedKvCache(32, bits);
        c.updateAndFetch(values(1, length, seed), values(1, length, seed + 100));
        return c;
    }

    @ParameterizedTest(name = "{0} bits")
    @CsvSource({"4", "8"})
    void mergeAppendFilterAndExtendKeepEveryRowsBytes(int bits) {
        try (ArrayScope scope = ArrayScope.open()) {
            QuantizedKvCache[] solo = {solo(bits, 5, 1), solo(bits, 9, 2), solo(bits, 2, 3)};
            BatchQuantizedKvCache batch = BatchQuantizedKvCache.merge(solo);
            assertArrayEquals(new int[] {4, 0, 7}, batch.leftPadding());
            assertRowsMatch(batch, solo, "merged");

            MlxArray k = values(3, 1, 4);
            MlxArray v = values(3, 1, 5);
            batch.updateAndFetch(k, v);
            for (int r = 0; r < 3; r++) {
                solo[r].updateAndFetch(row(k, r), row(v, r));
            }
            assertRowsMatch(batch, solo, "after an append");

            batch.filter(new int[] {0, 2});
            assertArrayEquals(new int[] {0, 3}, batch.leftPadding(), "the common padding dropped");
            assertRowsMatch(batch, new QuantizedKvCache[] {solo[0], solo[2]}, "filtered");

            QuantizedKvCache joining = solo(bits, 12, 6);
            batch.extend(BatchQuantizedKvCache.merge(joining));
            assertRowsMatch(batch, new QuantizedKvCache[] {solo[0], solo[2], joining}, "extended");
            batch.close();
            joining.close();
            for (QuantizedKvCache c : solo) {
                c.close();
            }
        }
    }

    @ParameterizedTest(name = "trim {0}, {1}, {2}")
    @CsvSource({"2, 0, 1", "0, 0, 0", "3, 3, 3", "1, 3, 0"})
    void trimRowsForgetsEachRowsOwnCount(int a, int b, int c) {
        int[] counts = {a, b, c};
        try (ArrayScope scope = ArrayScope.open()) {
            QuantizedKvCache[] solo = {solo(8, 6, 11), solo(8, 3, 12), solo(8, 8, 13)};
            BatchQuantizedKvCache batch = BatchQuantizedKvCache.merge(solo);
            MlxArray k = values(3, 3, 14);
            MlxArray v = values(3, 3, 15);
            batch.updateAndFetch(k, v);
            for (int r = 0; r < 3; r++) {
                solo[r].updateAndFetch(row(k, r), row(v, r));
            }
            assertArrayEquals(counts, batch.trimRows(counts));
            for (int r = 0; r < 3; r++) {
                solo[r].trim(counts[r]);
            }
            assertRowsMatch(batch, solo, "trimmed");
            // The next write lands after each row's kept positions, over what it forgot.
            MlxArray k2 = values(3, 1, 16);
            MlxArray v2 = values(3, 1, 17);
            batch.updateAndFetch(k2, v2);
            for (int r = 0; r < 3; r++) {
                solo[r].updateAndFetch(row(k2, r), row(v2, r));
            }
            assertRowsMatch(batch, solo, "written after the trim");
            batch.close();
            for (QuantizedKvCache s : solo) {
                s.close();
            }
        }
    }

    @ParameterizedTest(name = "{0} bits")
    @CsvSource({"4", "8"})
    void fromDenseQuantizesEachRowAsItsSoloCacheConverts(int bits) {
        try (ArrayScope scope = ArrayScope.open()) {
            DenseKvCache a = new DenseKvCache();
            a.updateAndFetch(values(1, 7, 21), values(1, 7, 22));
            DenseKvCache b = new DenseKvCache();
            b.updateAndFetch(values(1, 4, 23), values(1, 4, 24));
            BatchKvCache dense = BatchKvCache.merge(a, b);
            BatchQuantizedKvCache batch = BatchQuantizedKvCache.fromDense(dense, 32, bits);
            assertRowsMatch(
                    batch, new QuantizedKvCache[] {a.toQuantized(32, bits), b.toQuantized(32, bits)}, "converted");
            assertEquals(dense.offset(), batch.offset());
            batch.close();
            dense.close();
            a.close();
            b.close();
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"bits", "group"})
    void extendRefusesAnotherScheme(String differs) {
        try (ArrayScope scope = ArrayScope.open()) {
            BatchQuantizedKvCache batch = BatchQuantizedKvCache.merge(solo(8, 3, 31));
            BatchQuantizedKvCache other = differs.equals("bits")
                    ? new BatchQuantizedKvCache(32, 4, new int[1])
                    : new BatchQuantizedKvCache(64, 8, new int[1]);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> batch.extend(other));
            assertEquals(
                    differs.equals("bits")
                            ? "cannot extend a 8-bit, group-32 quantized cache with a 4-bit, group-32 one"
                            : "cannot extend a 8-bit, group-32 quantized cache with a 8-bit, group-64 one",
                    e.getMessage());
            batch.close();
            other.close();
        }
    }
}
