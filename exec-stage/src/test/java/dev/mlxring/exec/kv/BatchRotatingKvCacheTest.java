package dev.mlxring.exec.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import org.junit.jupiter.api.Test;

/**
 * {@link BatchRotatingKvCache}'s round trip, which the live batch parity cells do not reach
 * (extract is used only to publish finished rows to the prefix cache, which rotating models do
 * not use): solo caches merged, decoded together past the window (rotation), and extracted back
 * must hold exactly what the same solo caches hold after the same updates. Every position's
 * key is its own value, so a wrong order, a wrong padding or a lost position shows.
 */
class BatchRotatingKvCacheTest {
    private static final int WINDOW = 16;

    /** {@code [1, 1, n, 2]} keys whose position {@code i} holds {@code base + i} twice. */
    private static MlxArray positions(int base, int n) {
        float[] v = new float[2 * n];
        for (int i = 0; i < v.length; i++) {
            v[i] = base + i / 2;
        }
        return Mlx.fromFloats(v, 1, 1, n, 2);
    }

    private static float[] values(MlxArray a) {
        Mlx.eval(a);
        return Mlx.contiguous(a).toFloatArray();
    }

    @Test
    void mergeDecodeAndExtractEqualTheSoloCaches() {
        try (ArrayScope scope = ArrayScope.open()) {
            // Row 0 past its window and rotated; row 1 short.
            RotatingKvCache a = new RotatingKvCache(WINDOW, 0);
            RotatingKvCache b = new RotatingKvCache(WINDOW, 0);
            a.updateAndFetch(positions(0, 20), positions(0, 20));
            for (int t = 20; t < 25; t++) {
                a.updateAndFetch(positions(t, 1), positions(t, 1));
            }
            b.updateAndFetch(positions(500, 6), positions(500, 6));

            BatchRotatingKvCache batch = BatchRotatingKvCache.merge(a, b);
            assertArrayEquals(new int[] {25, 6}, batch.rowOffsets());
            // Row 0 rotates on; row 1 stays inside its window (left padding left to extract).
            for (int t = 0; t < 5; t++) {
                MlxArray k = Mlx.concatenate(0, positions(1000 + t, 1), positions(2000 + t, 1));
                batch.updateAndFetch(k, k);
                a.updateAndFetch(positions(1000 + t, 1), positions(1000 + t, 1));
                b.updateAndFetch(positions(2000 + t, 1), positions(2000 + t, 1));
            }
            assertArrayEquals(new int[] {30, 11}, batch.rowOffsets());

            RotatingKvCache solo0 = batch.extract(0);
            RotatingKvCache solo1 = batch.extract(1);
            try {
                assertEquals(a.offset(), solo0.offset());
                assertEquals(b.offset(), solo1.offset());
                assertArrayEquals(values(lastPositions(a)), values(solo0.temporallyOrdered()[0]));
                assertArrayEquals(values(lastPositions(b)), values(solo1.temporallyOrdered()[0]));
            } finally {
                solo0.close();
                solo1.close();
                batch.close();
                a.close();
                b.close();
            }
        }
    }

    /** The solo cache's {@code size()} newest positions, in order. */
    private static MlxArray lastPositions(RotatingKvCache c) {
        MlxArray k = c.temporallyOrdered()[0];
        int n = k.dim(2);
        return Mlx.slice(k, new int[] {0, 0, n - c.size(), 0}, new int[] {1, 1, n, 2}, new int[] {1, 1, 1, 1});
    }

    @Test
    void refusesToMergeDifferentWindows() {
        try (RotatingKvCache a = new RotatingKvCache(16, 0);
                RotatingKvCache b = new RotatingKvCache(24, 0)) {
            assertThrows(IllegalArgumentException.class, () -> BatchRotatingKvCache.merge(a, b));
        }
    }
}
