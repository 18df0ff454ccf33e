package dev.mlxring.mlx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The exact fused block's entry for a batch's rows ({@link FusedDecoderBlock#forwardRows(MlxArray,
 * MlxArray, MlxArray, int, MlxArray, MlxArray)}) refuses, with an error naming what, the inputs
 * whose graph it does not reproduce (the graph's rope and attention would run MLX's own ops on
 * them): rope offsets that are not int32 {@code [B]}, and a mask that is not boolean or not of
 * the scores' shape {@code [B, heads, L, offset + L]} (L new positions per row: 1 for a decode
 * step, K + 1 for a verification round). Its bytes against the graph's are
 * FusedBlockTest's (exec-stage).
 */
class FusedDecoderBlockRowsTest {
    private static final int DIM = 64;
    private static final int HIDDEN = 128;
    private static final int HEAD_DIM = 32;
    private static final int ROWS = 2;
    private static final int OFFSET = 5;

    @Test
    void refusesWhatTheGraphWouldNotRunNatively() {
        assumeTrue(FusedDecoderBlock.available(Numerics.EXACT), "this CPU has no native kernels: no fused block");
        try (ArrayScope s = ArrayScope.open();
                FusedDecoderBlock block = block(new SplittableRandom(7))) {
            MlxArray offsets = Mlx.fromInts(new int[] {OFFSET, OFFSET - 2}, ROWS);
            MlxArray mask = mask(OFFSET + 1);
            // the covered case runs: h [B, 1, D] and the cache buffers
            MlxArray[] r = block.forwardRows(x(1), cache(), cache(), OFFSET, offsets, mask);
            Mlx.eval(r);
            assertArrayEquals(new int[] {ROWS, 1, DIM}, r[0].shape());

            // a verification round's [B, K + 1]: two new positions per row over OFFSET + 2 keys
            MlxArray[] two = block.forwardRows(x(2), cache(), cache(), OFFSET, offsets, mask(OFFSET + 2));
            Mlx.eval(two);
            assertArrayEquals(new int[] {ROWS, 2, DIM}, two[0].shape());

            // a mask for one position does not cover two
            assertRefused("mask", () -> block.forwardRows(x(2), cache(), cache(), OFFSET, offsets, mask));
            assertRefused(
                    "rope offsets",
                    () -> block.forwardRows(x(1), cache(), cache(), OFFSET, Mlx.astype(offsets, Dtype.FLOAT32), mask));
            assertRefused(
                    "rope offsets",
                    () -> block.forwardRows(
                            x(1), cache(), cache(), OFFSET, Mlx.fromInts(new int[] {1, 2, 3}, 3), mask));
            assertRefused(
                    "mask",
                    () -> block.forwardRows(x(1), cache(), cache(), OFFSET, offsets, Mlx.astype(mask, Dtype.FLOAT32)));
            assertRefused("mask", () -> block.forwardRows(x(1), cache(), cache(), OFFSET, offsets, mask(OFFSET + 2)));
        }
    }

    /**
     * LoRA deltas ({@link FusedDecoderBlock.LowRank}) change only the rows that add a pair: a row
     * adding none keeps the bytes of the call without deltas, a row adding one differs; and the
     * entry refuses pairs that do not fit their projection, are not float32, or a row naming a pair
     * that is not there.
     */
    @Test
    void lowRankDeltasChangeTheirRowsOnlyAndRefuseWhatDoesNotFit() {
        assumeTrue(FusedDecoderBlock.available(Numerics.EXACT), "this CPU has no native kernels: no fused block");
        SplittableRandom rnd = new SplittableRandom(11);
        try (ArrayScope s = ArrayScope.open();
                FusedDecoderBlock block = block(new SplittableRandom(7))) {
            MlxArray offsets = Mlx.fromInts(new int[] {OFFSET, OFFSET - 2}, ROWS);
            MlxArray mask = mask(OFFSET + 1);
            MlxArray x = x(1);
            // a rank-4 pair on the up projection (D -> HIDDEN) of row 0 only
            MlxArray a = random(rnd, DIM, 4);
            MlxArray b = random(rnd, 4, HIDDEN);
            int[] rows = new int[7 * ROWS];
            java.util.Arrays.fill(rows, -1);
            rows[5 * ROWS] = 0;
            FusedDecoderBlock.LowRank up = new FusedDecoderBlock.LowRank(new MlxArray[] {a, b}, new float[] {2f}, rows);
            MlxArray plain = block.forwardRows(x, cache(), cache(), OFFSET, offsets, mask)[0];
            MlxArray delta = block.forwardRows(x, cache(), cache(), OFFSET, offsets, mask, up)[0];
            Mlx.eval(plain, delta);
            byte[] p = plain.toBytes();
            byte[] d = delta.toBytes();
            int row = DIM * Float.BYTES;
            assertArrayEquals(
                    java.util.Arrays.copyOfRange(p, row, 2 * row),
                    java.util.Arrays.copyOfRange(d, row, 2 * row),
                    "row 1 adds no pair: the plain call's bytes");
            assertTrue(
                    !java.util.Arrays.equals(java.util.Arrays.copyOf(p, row), java.util.Arrays.copyOf(d, row)),
                    "row 0's delta changed nothing");
            // the single-row entry takes them too
            MlxArray one = random(new SplittableRandom(3), 1, 1, DIM);
            int[] oneRow = {-1, -1, -1, -1, -1, 0, -1};
            Mlx.eval(block.forward(
                    one,
                    Mlx.zeros(new int[] {1, 1, 16, HEAD_DIM}, Dtype.FLOAT32),
                    Mlx.zeros(new int[] {1, 1, 16, HEAD_DIM}, Dtype.FLOAT32),
                    OFFSET,
                    false,
                    new FusedDecoderBlock.LowRank(new MlxArray[] {a, b}, new float[] {2f}, oneRow)));

            java.util.function.Function<FusedDecoderBlock.LowRank, MlxArray[]> call =
                    lowRank -> block.forwardRows(x, cache(), cache(), OFFSET, offsets, mask, lowRank);
            int[] onQ = rows.clone();
            onQ[5 * ROWS] = -1;
            onQ[0] = 0; // the q projection's output is 2 * HEAD_DIM wide, not HIDDEN
            assertRefused(
                    "low-rank pair 0 on projection 0",
                    () -> call.apply(new FusedDecoderBlock.LowRank(new MlxArray[] {a, b}, new float[] {2f}, onQ)));
            assertRefused(
                    "float32",
                    () -> call.apply(new FusedDecoderBlock.LowRank(
                            new MlxArray[] {Mlx.astype(a, Dtype.FLOAT16), b}, new float[] {2f}, rows)));
            int[] missing = rows.clone();
            missing[5 * ROWS] = 1;
            assertRefused(
                    "low-rank pair 1 of 1",
                    () -> call.apply(new FusedDecoderBlock.LowRank(new MlxArray[] {a, b}, new float[] {2f}, missing)));
        }
    }

    /**
     * Over buffers with a row capacity (rows in buffer rows of their own, positions from a base),
     * each tier's block gives every row the bytes of the call over buffers holding the rows in
     * order from position 0: the same h, the same keys and values written at the row's own slot
     * and base, and the buffer rows no row names left as they were; slots outside the buffers,
     * given twice or a base past the capacity are refused.
     */
    @Test
    void rowSlotsGiveEachRowTheBytesOfTheRowsInOrder() {
        assumeTrue(FusedDecoderBlock.available(Numerics.EXACT), "this CPU has no native kernels: no fused block");
        for (Numerics tier : Numerics.values()) {
            if (!FusedDecoderBlock.available(tier)) {
                continue;
            }
            try (ArrayScope s = ArrayScope.open();
                    FusedDecoderBlock block = block(tier, new SplittableRandom(7))) {
                SplittableRandom rnd = new SplittableRandom(5);
                MlxArray keys = random(rnd, ROWS, 1, 16, HEAD_DIM);
                MlxArray values = random(rnd, ROWS, 1, 16, HEAD_DIM);
                int[] slots = {3, 1};
                int base = 5;
                MlxArray slottedKeys = random(rnd, 4, 1, 24, HEAD_DIM);
                MlxArray slottedValues = random(rnd, 4, 1, 24, HEAD_DIM);
                MlxArray before = Mlx.contiguous(slottedKeys);
                Mlx.eval(before);
                int[] one = {1, 1, 1, 1};
                for (int r = 0; r < ROWS; r++) {
                    int[] start = {slots[r], 0, base, 0};
                    int[] stop = {slots[r] + 1, 1, base + 16, HEAD_DIM};
                    slottedKeys = Mlx.sliceUpdate(slottedKeys, rowOf(keys, r), start, stop, one);
                    slottedValues = Mlx.sliceUpdate(slottedValues, rowOf(values, r), start, stop, one);
                }
                MlxArray x = x(1);
                MlxArray offsets = Mlx.fromInts(new int[] {OFFSET, OFFSET - 2}, ROWS);
                MlxArray mask = mask(OFFSET + 1);
                int[] padding = {0, 2};
                MlxArray[] inOrder = tier == Numerics.EXACT
                        ? block.forwardRows(x, keys, values, OFFSET, offsets, mask)
                        : block.forwardRows(x, keys, values, OFFSET, padding);
                MlxArray[] slotted = tier == Numerics.EXACT
                        ? block.forwardRows(
                                x,
                                slottedKeys,
                                slottedValues,
                                OFFSET,
                                offsets,
                                mask,
                                FusedDecoderBlock.LowRank.NONE,
                                slots,
                                base)
                        : block.forwardRows(x, slottedKeys, slottedValues, OFFSET, padding, slots, base);
                Mlx.eval(inOrder);
                Mlx.eval(slotted);
                assertArrayEquals(inOrder[0].toBytes(), slotted[0].toBytes(), tier + ": h");
                for (int r = 0; r < ROWS; r++) {
                    for (int kv = 1; kv <= 2; kv++) {
                        MlxArray expected =
                                Mlx.slice(inOrder[kv], new int[] {r, 0, 0, 0}, new int[] {r + 1, 1, 16, HEAD_DIM}, one);
                        MlxArray got = Mlx.slice(
                                slotted[kv],
                                new int[] {slots[r], 0, base, 0},
                                new int[] {slots[r] + 1, 1, base + 16, HEAD_DIM},
                                one);
                        assertArrayEquals(
                                Mlx.contiguous(expected).toBytes(),
                                Mlx.contiguous(got).toBytes(),
                                tier + ": row " + r + "'s " + (kv == 1 ? "keys" : "values"));
                    }
                }
                for (int free : new int[] {0, 2}) {
                    int[] start = {free, 0, 0, 0};
                    int[] stop = {free + 1, 1, 24, HEAD_DIM};
                    assertArrayEquals(
                            Mlx.contiguous(Mlx.slice(before, start, stop, one)).toBytes(),
                            Mlx.contiguous(Mlx.slice(slotted[1], start, stop, one))
                                    .toBytes(),
                            tier + ": free buffer row " + free + " untouched");
                }
                MlxArray k = slottedKeys;
                MlxArray v = slottedValues;
                java.util.function.BiFunction<int[], Integer, MlxArray[]> call = (sl, b) -> tier == Numerics.EXACT
                        ? block.forwardRows(x, k, v, OFFSET, offsets, mask, FusedDecoderBlock.LowRank.NONE, sl, b)
                        : block.forwardRows(x, k, v, OFFSET, padding, sl, b);
                assertRefused("row slot 4", () -> call.apply(new int[] {4, 1}, base));
                assertRefused("row slot 1", () -> call.apply(new int[] {1, 1}, base));
                assertRefused("base + offset + L", () -> call.apply(slots, 24 - OFFSET));
            }
        }
    }

    /** Row {@code r} of a {@code [B, 1, n, D]} buffer. */
    private static MlxArray rowOf(MlxArray a, int r) {
        return Mlx.slice(
                a, new int[] {r, 0, 0, 0}, new int[] {r + 1, a.dim(1), a.dim(2), a.dim(3)}, new int[] {1, 1, 1, 1});
    }

    private static void assertRefused(String naming, org.junit.jupiter.api.function.Executable call) {
        MlxException e = assertThrows(MlxException.class, call);
        assertTrue(e.getMessage().contains(naming), "the error names " + naming + ": " + e.getMessage());
    }

    /** A llama block of float32 activations: 2 heads over 1 kv head of 32, 4-bit projections in groups of 32. */
    private static FusedDecoderBlock block(SplittableRandom rnd) {
        return block(Numerics.EXACT, rnd);
    }

    /** That block in the given tier. */
    private static FusedDecoderBlock block(Numerics tier, SplittableRandom rnd) {
        int[][] shapes = {
            {2 * HEAD_DIM, DIM},
            {HEAD_DIM, DIM},
            {HEAD_DIM, DIM},
            {DIM, 2 * HEAD_DIM},
            {HIDDEN, DIM},
            {HIDDEN, DIM},
            {DIM, HIDDEN}
        };
        List<FusedDecoderBlock.Projection> projections = new ArrayList<>();
        for (int[] shape : shapes) {
            MlxArray[] q = Mlx.quantize(random(rnd, shape), 32, 4);
            projections.add(new FusedDecoderBlock.Projection(q[0], q[1], q[2], 4, 32));
        }
        FusedDecoderBlock.Layout layout = new FusedDecoderBlock.Layout(
                2, 1, HEAD_DIM, HEAD_DIM, false, 10000f, 1f, 1e-5f, (float) (1 / Math.sqrt(HEAD_DIM)));
        return new FusedDecoderBlock(tier, layout, random(rnd, DIM), random(rnd, DIM), projections, null, null, null);
    }

    private static MlxArray x(int length) {
        return random(new SplittableRandom(length), ROWS, length, DIM);
    }

    private static MlxArray cache() {
        return Mlx.zeros(new int[] {ROWS, 1, 16, HEAD_DIM}, Dtype.FLOAT32);
    }

    /** The batch's boolean mask over {@code keys} positions, row 1's first two padding. */
    private static MlxArray mask(int keys) {
        int[] m = new int[ROWS * keys];
        for (int k = 0; k < keys; k++) {
            m[k] = 1;
            m[keys + k] = k >= 2 ? 1 : 0;
        }
        return Mlx.greater(Mlx.fromInts(m, ROWS, 1, 1, keys), Mlx.scalar(0, Dtype.INT32));
    }

    /** Uniform in [-0.5, 0.5), {@code shape}'s elements in order (shared with FastAttentionRowsTest). */
    static MlxArray random(SplittableRandom rnd, int... shape) {
        int n = 1;
        for (int d : shape) {
            n *= d;
        }
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) (rnd.nextDouble() - 0.5);
        }
        return Mlx.fromFloats(v, shape);
    }
}
