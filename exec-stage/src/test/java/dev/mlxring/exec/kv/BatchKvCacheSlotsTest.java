package dev.mlxring.exec.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import org.junit.jupiter.api.Test;

/**
 * {@link BatchKvCache}'s row capacity: once the fused rows write a batch ({@link
 * BatchKvCache#reserve}), a leaving row frees its buffer row and a joining row takes a free one
 * instead of the batch being copied. What the rows hold, position for position, must stay what
 * mlx-lm's {@code filter} and {@code extend} leave: a twin cache driven through the same steps by
 * {@link BatchKvCache#updateAndFetch} (the graph's write, which keeps mlx-lm's layout) is the
 * reference. Every written position holds a value unique to its row and step, so a row read from
 * the wrong slot, the wrong base or a lost write shows.
 */
class BatchKvCacheSlotsTest {
    private static final int HEADS = 2;
    private static final int DIM = 3;

    /** {@code [1, HEADS, n, DIM]} whose every element at position {@code i} is {@code first + i}. */
    private static MlxArray row(int first, int n) {
        float[] v = new float[HEADS * n * DIM];
        for (int h = 0; h < HEADS; h++) {
            for (int i = 0; i < n; i++) {
                for (int d = 0; d < DIM; d++) {
                    v[(h * n + i) * DIM + d] = first + i;
                }
            }
        }
        return Mlx.fromFloats(v, 1, HEADS, n, DIM);
    }

    /** Solo rows of these lengths merged, row {@code r}'s values starting at {@code first + 100 r}. */
    private static BatchKvCache merged(int first, int... lengths) {
        DenseKvCache[] solo = new DenseKvCache[lengths.length];
        for (int r = 0; r < lengths.length; r++) {
            solo[r] = new DenseKvCache();
            MlxArray x = row(first + 100 * r, lengths[r]);
            solo[r].updateAndFetch(x, x);
        }
        return BatchKvCache.merge(solo);
    }

    /** One decode position per row, row {@code r}'s value {@code value + r}: by the fused rows' write, or the graph's. */
    private static void step(BatchKvCache c, boolean fused, int value) {
        int b = c.batchSize();
        float[] v = new float[b * HEADS * DIM];
        for (int r = 0; r < b; r++) {
            java.util.Arrays.fill(v, r * HEADS * DIM, (r + 1) * HEADS * DIM, value + r);
        }
        MlxArray x = Mlx.fromFloats(v, b, HEADS, 1, DIM);
        if (!fused) {
            c.updateAndFetch(x, x);
            return;
        }
        MlxArray[] buffers = c.reserve(b, HEADS, DIM, DIM, Dtype.FLOAT32, 1);
        int[] slots = c.rowSlots();
        int at = c.base() + c.offset();
        MlxArray k = buffers[0];
        MlxArray val = buffers[1];
        int[] strides = {1, 1, 1, 1};
        for (int r = 0; r < b; r++) {
            int slot = slots == null ? r : slots[r];
            MlxArray xr = Mlx.slice(x, new int[] {r, 0, 0, 0}, new int[] {r + 1, HEADS, 1, DIM}, strides);
            k = Mlx.sliceUpdate(k, xr, new int[] {slot, 0, at, 0}, new int[] {slot + 1, HEADS, at + 1, DIM}, strides);
            val = Mlx.sliceUpdate(
                    val, xr, new int[] {slot, 0, at, 0}, new int[] {slot + 1, HEADS, at + 1, DIM}, strides);
        }
        c.written(k, val, 1);
    }

    private static float[] values(MlxArray a) {
        Mlx.eval(a);
        return Mlx.contiguous(a).toFloatArray();
    }

    /** Both caches' rows (each read where it lies: nothing is moved), paddings and index equal. */
    private static void assertSameRows(BatchKvCache expected, BatchKvCache slotted) {
        assertEquals(expected.offset(), slotted.offset(), "index");
        assertArrayEquals(expected.leftPadding(), slotted.leftPadding(), "left padding");
        for (int r = 0; r < expected.batchSize(); r++) {
            DenseKvCache e = expected.extract(r);
            DenseKvCache s = slotted.extract(r);
            assertArrayEquals(values(e.keysAndValues()[0]), values(s.keysAndValues()[0]), "row " + r + "'s keys");
            assertArrayEquals(values(e.keysAndValues()[1]), values(s.keysAndValues()[1]), "row " + r + "'s values");
        }
    }

    /** Both caches' whole buffers in mlx-lm's layout (the slotted one's rows gathered back into it). */
    private static void assertSameBuffers(BatchKvCache expected, BatchKvCache slotted) {
        MlxArray[] e = expected.keysAndValues();
        MlxArray[] s = slotted.keysAndValues();
        assertArrayEquals(values(e[0]), values(s[0]), "keys");
        assertArrayEquals(values(e[1]), values(s[1]), "values");
    }

    @Test
    void finishesAndJoinsMoveNoRowAndLeaveMlxLmsPositions() {
        try (ArrayScope scope = ArrayScope.open()) {
            BatchKvCache twin = merged(1000, 9, 5, 7, 3);
            BatchKvCache slotted = merged(1000, 9, 5, 7, 3);
            step(twin, false, 5000);
            step(slotted, true, 5000);
            assertNull(slotted.rowSlots(), "no slot before a row leaves");

            // row 0 (no padding) leaves; the others (paddings 4, 2, 6) drop the 2 they share
            twin.filter(new int[] {1, 2, 3});
            slotted.filter(new int[] {1, 2, 3});
            assertArrayEquals(new int[] {1, 2, 3}, slotted.rowSlots(), "the kept rows stay in their buffer rows");
            assertEquals(2, slotted.base(), "the dropped padding moves the base, no position is copied");
            step(twin, false, 6000);
            step(slotted, true, 6000);
            assertSameRows(twin, slotted);

            // a row whose positions end before the batch's joins into the freed buffer row
            twin.extend(merged(3000, 2));
            slotted.extend(merged(3000, 2));
            assertArrayEquals(new int[] {1, 2, 3, 0}, slotted.rowSlots(), "the joiner takes the free buffer row");
            assertEquals(4, slotted.state()[0].dim(0), "no buffer row was added");
            step(twin, false, 7000);
            step(slotted, true, 7000);
            step(twin, false, 8000);
            step(slotted, true, 8000);
            assertSameRows(twin, slotted);

            // three joiners, one free row: the buffers grow by the rows missing
            twin.filter(new int[] {0, 2, 3});
            slotted.filter(new int[] {0, 2, 3});
            twin.extend(merged(4000, 3, 1, 2));
            slotted.extend(merged(4000, 3, 1, 2));
            assertArrayEquals(new int[] {1, 3, 0, 2, 4, 5}, slotted.rowSlots());
            assertEquals(6, slotted.state()[0].dim(0));
            step(twin, false, 9000);
            step(slotted, true, 9000);
            assertSameRows(twin, slotted);

            // a row leaves one free buffer row of six: kept for a joiner; then four leave, and the
            // lone row keeps none, so what stays is copied and the buffers shrink to it
            twin.filter(new int[] {0, 1, 3, 4, 5});
            slotted.filter(new int[] {0, 1, 3, 4, 5});
            assertNotNull(slotted.rowSlots(), "one free row for five: kept");
            twin.filter(new int[] {2});
            slotted.filter(new int[] {2});
            assertNull(slotted.rowSlots(), "a lone row keeps no free buffer row");
            assertEquals(1, slotted.state()[0].dim(0));
            step(twin, false, 9500);
            step(slotted, true, 9500);
            assertSameRows(twin, slotted);
            assertSameBuffers(twin, slotted);
        }
    }

    @Test
    void aJoinerLongerThanTheBatchAndARollGoBackToMlxLmsLayoutFirst() {
        try (ArrayScope scope = ArrayScope.open()) {
            BatchKvCache twin = merged(1000, 6, 4, 5);
            BatchKvCache slotted = merged(1000, 6, 4, 5);
            step(twin, false, 5000);
            step(slotted, true, 5000);
            twin.filter(new int[] {0, 2});
            slotted.filter(new int[] {0, 2});
            assertNotNull(slotted.rowSlots());

            // a joiner of 12 positions: this batch's rows shift right, which mlx-lm's extend copies
            twin.extend(merged(2000, 12));
            slotted.extend(merged(2000, 12));
            assertNull(slotted.rowSlots(), "the batch is back in mlx-lm's layout");
            step(twin, false, 6000);
            step(slotted, true, 6000);
            assertSameRows(twin, slotted);

            // a finish, then rows rolled back by different counts (speculative decoding's trim)
            twin.filter(new int[] {1, 2});
            slotted.filter(new int[] {1, 2});
            assertNotNull(slotted.rowSlots());
            int[] twinDone = twin.trimRows(new int[] {1, 0});
            int[] slottedDone = slotted.trimRows(new int[] {1, 0});
            assertArrayEquals(twinDone, slottedDone);
            step(twin, false, 7000);
            step(slotted, true, 7000);
            assertSameRows(twin, slotted);
            assertSameBuffers(twin, slotted);
        }
    }

    @Test
    void theGraphsWriteReadsMlxLmsLayout() {
        try (ArrayScope scope = ArrayScope.open()) {
            BatchKvCache twin = merged(1000, 5, 8, 2);
            BatchKvCache slotted = merged(1000, 5, 8, 2);
            step(twin, false, 5000);
            step(slotted, true, 5000);
            twin.filter(new int[] {0, 2});
            slotted.filter(new int[] {0, 2});
            assertNotNull(slotted.rowSlots());
            // a step of the graph (a prefill chunk, -Dmlxring.fusedBatch=false) after the fused rows
            step(twin, false, 6000);
            step(slotted, false, 6000);
            assertNull(slotted.rowSlots());
            assertSameRows(twin, slotted);
            assertSameBuffers(twin, slotted);
        }
    }
}
