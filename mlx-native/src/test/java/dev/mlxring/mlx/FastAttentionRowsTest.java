package dev.mlxring.mlx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The fast tiers' attention runs the query heads of one kv head's group over the keys and values
 * they share, up to four at once ({@link FusedDecoderBlock#fastAttentionRows}); each head's
 * arithmetic is the one it has alone, so the block's outputs keep the bytes of the head-by-head
 * pass: for groups of 1 to 7 heads (7: a pass of four and one of three), head sizes 64 and 128,
 * float32 and bfloat16 caches, a decode step and a verification round's 5 positions, contexts
 * of one attention range and of two (past the 8-bit tier's 512 positions), and a batch's
 * left-padded rows.
 */
class FastAttentionRowsTest {
    private static final int DIM = 64;
    private static final int HIDDEN = 96;

    /** heads, kv heads, head size. */
    private static final int[][] LAYOUTS = {{9, 3, 64}, {8, 2, 64}, {7, 1, 64}, {4, 2, 128}, {2, 2, 64}};

    @ParameterizedTest
    @EnumSource(
            value = Numerics.class,
            names = {"FAST", "FAST_Q8"})
    void groupedHeadsKeepTheBytesOfHeadByHead(Numerics tier) {
        assumeTrue(FusedDecoderBlock.available(tier), "this CPU has no fast kernels for " + tier);
        int before = FusedDecoderBlock.fastAttentionRows(4);
        try {
            assumeTrue(
                    FusedDecoderBlock.fastAttentionRows(0) == 4,
                    "this CPU has no AVX-512: the attention runs head by head only");
            int cases = 0;
            for (int[] layout : LAYOUTS) {
                for (Dtype dtype : new Dtype[] {Dtype.FLOAT32, Dtype.BFLOAT16}) {
                    for (int length : new int[] {1, 5}) {
                        for (int offset : new int[] {37, 600}) {
                            SplittableRandom rnd = new SplittableRandom(31L * cases + 7);
                            try (ArrayScope s = ArrayScope.open();
                                    FusedDecoderBlock block = block(tier, layout, dtype, rnd)) {
                                String what = tier + " heads " + layout[0] + "/" + layout[1] + " of " + layout[2] + ", "
                                        + dtype + ", L " + length + ", offset " + offset;
                                int capacity = offset + length + 3;
                                MlxArray keys = Mlx.astype(
                                        FusedDecoderBlockRowsTest.random(rnd, 2, layout[1], capacity, layout[2]),
                                        dtype);
                                MlxArray values = Mlx.astype(
                                        FusedDecoderBlockRowsTest.random(rnd, 2, layout[1], capacity, layout[2]),
                                        dtype);
                                MlxArray x = Mlx.astype(FusedDecoderBlockRowsTest.random(rnd, 2, length, DIM), dtype);
                                int[] padding = {0, 3};
                                assertSameBytes(
                                        what + ", rows", () -> block.forwardRows(x, keys, values, offset, padding));
                                MlxArray one = Mlx.slice(
                                        x, new int[] {0, 0, 0}, new int[] {1, length, DIM}, new int[] {1, 1, 1});
                                MlxArray k1 = firstRow(keys);
                                MlxArray v1 = firstRow(values);
                                assertSameBytes(what + ", one row", () -> block.forward(one, k1, v1, offset, true));
                            }
                            cases++;
                        }
                    }
                }
            }
            assertEquals(LAYOUTS.length * 2 * 2 * 2, cases);
        } finally {
            FusedDecoderBlock.fastAttentionRows(before);
        }
    }

    /** The call's outputs with the heads grouped equal, byte for byte, those of the heads one by one. */
    private static void assertSameBytes(String what, java.util.function.Supplier<MlxArray[]> call) {
        FusedDecoderBlock.fastAttentionRows(1);
        MlxArray[] alone = call.get();
        Mlx.eval(alone);
        byte[][] expected = new byte[alone.length][];
        for (int i = 0; i < alone.length; i++) {
            expected[i] = Mlx.contiguous(alone[i]).toBytes();
        }
        FusedDecoderBlock.fastAttentionRows(4);
        MlxArray[] grouped = call.get();
        Mlx.eval(grouped);
        for (int i = 0; i < grouped.length; i++) {
            assertArrayEquals(
                    expected[i],
                    Mlx.contiguous(grouped[i]).toBytes(),
                    what + ": output " + i + " (h, keys, values) differs");
        }
    }

    private static MlxArray firstRow(MlxArray a) {
        return Mlx.contiguous(Mlx.slice(
                a, new int[] {0, 0, 0, 0}, new int[] {1, a.dim(1), a.dim(2), a.dim(3)}, new int[] {1, 1, 1, 1}));
    }

    /** A llama block of the layout's heads and activations of {@code dtype}, 4-bit projections in groups of 32. */
    private static FusedDecoderBlock block(Numerics tier, int[] layout, Dtype dtype, SplittableRandom rnd) {
        int heads = layout[0];
        int kvHeads = layout[1];
        int headDim = layout[2];
        int[][] shapes = {
            {heads * headDim, DIM},
            {kvHeads * headDim, DIM},
            {kvHeads * headDim, DIM},
            {DIM, heads * headDim},
            {HIDDEN, DIM},
            {HIDDEN, DIM},
            {DIM, HIDDEN}
        };
        List<FusedDecoderBlock.Projection> projections = new ArrayList<>();
        for (int[] shape : shapes) {
            MlxArray[] q = Mlx.quantize(Mlx.astype(FusedDecoderBlockRowsTest.random(rnd, shape), dtype), 32, 4);
            projections.add(new FusedDecoderBlock.Projection(q[0], q[1], q[2], 4, 32));
        }
        FusedDecoderBlock.Layout l = new FusedDecoderBlock.Layout(
                heads, kvHeads, headDim, headDim, false, 10000f, 1f, 1e-5f, (float) (1 / Math.sqrt(headDim)));
        return new FusedDecoderBlock(
                tier,
                l,
                Mlx.astype(FusedDecoderBlockRowsTest.random(rnd, DIM), dtype),
                Mlx.astype(FusedDecoderBlockRowsTest.random(rnd, DIM), dtype),
                projections,
                null,
                null,
                null);
    }
}
