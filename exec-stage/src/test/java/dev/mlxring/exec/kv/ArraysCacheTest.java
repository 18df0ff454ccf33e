package dev.mlxring.exec.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import org.junit.jupiter.api.Test;

/**
 * {@link ArraysCache}'s row operations as mlx-lm's {@code ArraysCache} defines them: merge copies
 * each row's arrays (an empty row stays zero), extract gives a row back, filter and select keep
 * rows, extend appends (zeros for the side without state); the mask combines left padding and
 * lengths and steps back with {@code advance}. BatchParityTest checks the same operations
 * against mlx-lm's BatchGenerator end to end.
 */
class ArraysCacheTest {
    /** A solo cache whose two arrays are {@code [1, 2]} and {@code [1, 3]} filled from {@code base}. */
    private static ArraysCache solo(float base) {
        ArraysCache c = new ArraysCache(2);
        c.set(0, Mlx.fromFloats(new float[] {base, base + 1}, 1, 2));
        c.set(1, Mlx.fromFloats(new float[] {base + 2, base + 3, base + 4}, 1, 3));
        return c;
    }

    private static float[] values(MlxArray a) {
        Mlx.eval(a);
        return Mlx.contiguous(a).toFloatArray();
    }

    /**
     * Each row's offset counts only the positions its mask leaves valid: a right-padded chunk
     * advances a row by its own length, left padding is not counted, and merge, filter, extend
     * and extract carry the row's own offset, not the batch's.
     */
    @Test
    void eachRowsOffsetCountsOnlyItsOwnPositions() {
        try (ArrayScope scope = ArrayScope.open();
                ArraysCache a = solo(10);
                ArraysCache b = solo(20)) {
            a.advance(7);
            b.advance(3);
            try (ArraysCache merged = ArraysCache.merge(a, new ArraysCache(2), b)) {
                assertEquals(7, merged.rowOffset(0));
                assertEquals(0, merged.rowOffset(1), "an empty row has consumed nothing");
                assertEquals(3, merged.rowOffset(2));
                merged.prepare(new int[] {16, 5, 0});
                merged.advance(16);
                assertEquals(23, merged.offset(), "the batch stepped the whole chunk");
                assertArrayEquals(
                        new int[] {23, 5, 3},
                        new int[] {merged.rowOffset(0), merged.rowOffset(1), merged.rowOffset(2)},
                        "a right-padded chunk advances each row by its own length");
                merged.finalizePadding();
                merged.advance(1);
                try (ArraysCache row1 = merged.extract(1)) {
                    assertEquals(6, row1.offset(), "extract gives the row's own offset");
                }
                merged.filter(new int[] {2, 1});
                ArraysCache joining = ArraysCache.merge(new ArraysCache(2), new ArraysCache(2));
                joining.set(0, Mlx.zeros(new int[] {2, 2}, merged.get(0).dtype()));
                joining.set(1, Mlx.zeros(new int[] {2, 3}, merged.get(1).dtype()));
                joining.prepare(new int[] {2, 4});
                joining.advance(4);
                merged.extend(joining);
                assertArrayEquals(
                        new int[] {4, 6, 2, 4},
                        new int[] {merged.rowOffset(0), merged.rowOffset(1), merged.rowOffset(2), merged.rowOffset(3)},
                        "filter keeps and extend appends the rows' own offsets");
            }
        }
    }

    @Test
    void mergeExtractFilterAndExtendKeepEachRowsState() {
        try (ArrayScope scope = ArrayScope.open();
                ArraysCache a = solo(10);
                ArraysCache empty = new ArraysCache(2);
                ArraysCache b = solo(20)) {
            try (ArraysCache merged = ArraysCache.merge(a, empty, b)) {
                assertEquals(3, merged.batchSize());
                assertArrayEquals(new float[] {10, 11, 0, 0, 20, 21}, values(merged.get(0)));
                assertNull(merged.makeMask(4), "a merge with state has no padding");
                try (ArraysCache row2 = merged.extract(2)) {
                    assertArrayEquals(new float[] {22, 23, 24}, values(row2.get(1)));
                }
                try (ArraysCache kept = merged.select(new int[] {2, 0})) {
                    assertArrayEquals(new float[] {22, 23, 24, 12, 13, 14}, values(kept.get(1)));
                }
                merged.filter(new int[] {0, 2});
                assertArrayEquals(new float[] {10, 11, 20, 21}, values(merged.get(0)));
                ArraysCache joining = ArraysCache.merge(new ArraysCache(2), new ArraysCache(2));
                merged.extend(joining);
                assertEquals(4, merged.batchSize());
                assertArrayEquals(new float[] {12, 13, 14, 22, 23, 24, 0, 0, 0, 0, 0, 0}, values(merged.get(1)));
                assertTrue(joining.isEmpty(), "extend takes the other's arrays");
            }
        }
    }

    @Test
    void theMaskCombinesLeftPaddingAndLengthsAndAdvances() {
        try (ArrayScope scope = ArrayScope.open();
                ArraysCache c = ArraysCache.merge(new ArraysCache(2), new ArraysCache(2))) {
            // an all-empty merge: left padding of zeros, every position valid
            assertArrayEquals(new int[] {1, 1, 1, 1, 1, 1}, bools(c.makeMask(3)));
            c.prepare(new int[] {2, 3});
            assertArrayEquals(new int[] {1, 1, 0, 1, 1, 1}, bools(c.makeMask(3)));
            c.advance(2);
            assertArrayEquals(new int[] {0, 0, 1, 0}, bools(c.makeMask(2)));
            assertArrayEquals(new int[] {0, 1}, c.lengths());
            c.finalizePadding();
            assertNull(c.makeMask(2));
            assertFalse(c.isTrimmable());
        }
    }

    /**
     * Rollback points: two recorded forwards (2 positions, then 1) over a kernel of 3; forgetting
     * the last 2 positions leaves the conv inputs ending at the first position and the state after
     * it, steps the offset back and ends the recording; without a recording, or beyond it, trim
     * refuses (fail closed), and a batch keeps no rollback points.
     */
    @Test
    void trimRestoresTheRecordedStateAfterTheLastKeptPosition() {
        try (ArrayScope scope = ArrayScope.open();
                ArraysCache c = new ArraysCache(2)) {
            c.set(0, column(1, 2));
            c.set(1, column(100));
            assertThrows(IllegalStateException.class, () -> c.trim(1), "no rollback points kept");
            assertEquals(0, c.trim(0), "nothing to forget needs no rollback points");
            c.keepRollbackPoints();
            assertTrue(c.isTrimmable());
            // forward 1: positions 3, 4; states 100 -> 101 -> 102
            c.recordPositions(column(1, 2, 3, 4), new MlxArray[] {c.get(1), column(101), column(102)});
            c.set(0, column(3, 4));
            c.set(1, column(102));
            c.advance(2);
            // forward 2: position 5; state 102 -> 103
            c.recordPositions(column(3, 4, 5), new MlxArray[] {c.get(1), column(103)});
            c.set(0, column(4, 5));
            c.set(1, column(103));
            c.advance(1);
            assertThrows(IllegalStateException.class, () -> c.trim(4), "only 3 positions were recorded");
            c.keepRollbackPoints();
            c.recordPositions(column(1, 2, 3, 4), new MlxArray[] {c.get(1), column(101), column(102)});
            c.recordPositions(column(3, 4, 5), new MlxArray[] {column(102), column(103)});
            assertEquals(2, c.trim(2));
            assertArrayEquals(new float[] {2, 3}, values(c.get(0)), "the conv inputs ending at the kept position");
            assertArrayEquals(new float[] {101}, values(c.get(1)), "the state after the kept position");
            assertEquals(1, c.offset());
            assertFalse(c.isTrimmable(), "a trim ends the recording");
        }
        try (ArrayScope scope = ArrayScope.open();
                ArraysCache a = solo(1);
                ArraysCache b = solo(2);
                ArraysCache batch = ArraysCache.merge(a, b)) {
            assertThrows(IllegalStateException.class, batch::keepRollbackPoints);
        }
    }

    /** {@code [1, n, 1]} holding {@code values}. */
    private static MlxArray column(float... values) {
        return Mlx.fromFloats(values, 1, values.length, 1);
    }

    private static int[] bools(MlxArray mask) {
        return Mlx.astype(mask, dev.mlxring.mlx.Dtype.INT32).toIntArray();
    }
}
