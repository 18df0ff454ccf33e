package dev.mlxring.mlx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link Mlx#placeRows} (the batch caches' joined buffers, {@code mlxr_place_rows.cpp}) against
 * the graph it replaces, zeros of the joined shape and one slice update of each source's first
 * positions, live in one process: the same bytes over the whole buffer, for float32, bfloat16
 * and uint32 sources (a quantized cache's packed words), placements at the front, in the middle
 * and flush with the end, sources that place nothing (an empty side), and sources that are views
 * (a slice of longer positions; a transposed buffer whose head dim is not contiguous). The
 * sources are left as they were.
 */
class PlaceRowsTest {

    enum Source {
        /** A whole row-major buffer. */
        WHOLE,
        /** A slice of a longer buffer's positions (rows not contiguous). */
        POSITIONS_VIEW,
        /** A transposed buffer: positions contiguous, the head dim strided. */
        TRANSPOSED
    }

    /** Source {@code s}: {@code rows[s]} rows of {@code positions[s]} positions, placed at {@code left[s]}, {@code length[s]} of them. */
    record Case(
            Dtype dtype,
            int heads,
            int dim,
            int size,
            int[] rows,
            int[] positions,
            int[] left,
            int[] length,
            Source source) {
        @Override
        public String toString() {
            return dtype + " H" + heads + " D" + dim + " size " + size + " rows " + Arrays.toString(rows)
                    + " positions "
                    + Arrays.toString(positions) + " left " + Arrays.toString(left) + " length "
                    + Arrays.toString(length)
                    + " " + source;
        }
    }

    static Stream<Case> cases() {
        List<Case> c = new ArrayList<>();
        for (Dtype d : new Dtype[] {Dtype.FLOAT32, Dtype.BFLOAT16, Dtype.UINT32}) {
            for (Source src : Source.values()) {
                // a lone row joining a burst: both sides shifted, capacity past both
                c.add(new Case(
                        d,
                        3,
                        64,
                        304,
                        new int[] {1, 15},
                        new int[] {256, 304},
                        new int[] {2, 0},
                        new int[] {48, 50},
                        src));
                // one side flush with the end, the other placing nothing (an empty side)
                c.add(new Case(
                        d, 2, 5, 12, new int[] {3, 2}, new int[] {12, 4}, new int[] {0, 7}, new int[] {12, 0}, src));
                // three sources, odd sizes, one placed at the very end
                c.add(new Case(
                        d,
                        1,
                        3,
                        9,
                        new int[] {2, 1, 2},
                        new int[] {5, 9, 3},
                        new int[] {4, 0, 6},
                        new int[] {5, 9, 3},
                        src));
            }
        }
        return c.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void placesEachSourceAsZerosAndSliceUpdatesDo(Case c) {
        try (ArrayScope scope = ArrayScope.open()) {
            var rnd = SameBytes.seeded(c);
            int n = c.rows().length;
            MlxArray[] sources = new MlxArray[n];
            byte[][] before = new byte[n][];
            int total = 0;
            for (int s = 0; s < n; s++) {
                sources[s] = source(rnd, c, s);
                Mlx.eval(sources[s]);
                before[s] = sources[s].toBytes();
                total += c.rows()[s];
            }
            MlxArray expected = Mlx.zeros(new int[] {total, c.heads(), c.size(), c.dim()}, c.dtype());
            int row = 0;
            int[] unit = {1, 1, 1, 1};
            for (int s = 0; s < n; s++) {
                int r = c.rows()[s];
                int len = c.length()[s];
                if (len > 0) {
                    MlxArray part =
                            Mlx.slice(sources[s], new int[] {0, 0, 0, 0}, new int[] {r, c.heads(), len, c.dim()}, unit);
                    expected = Mlx.sliceUpdate(
                            expected,
                            part,
                            new int[] {row, 0, c.left()[s], 0},
                            new int[] {row + r, c.heads(), c.left()[s] + len, c.dim()},
                            unit);
                }
                row += r;
            }
            Mlx.eval(expected);
            // a freed buffer of the result's size, every byte set: MLX's allocator hands it out
            // again, so bytes the primitive leaves unwritten show
            int[] shape = {total, c.heads(), c.size(), c.dim()};
            MlxArray dirt = Mlx.astype(
                    Mlx.add(Mlx.zeros(shape, Dtype.FLOAT32), Mlx.fromFloats(new float[] {-1f}, 1)), c.dtype());
            Mlx.eval(dirt);
            dirt.close();
            MlxArray placed = Mlx.placeRows(sources, c.left(), c.length(), c.size());
            Mlx.eval(placed);
            assertArrayEquals(shape, placed.shape(), c.toString());
            assertArrayEquals(expected.toBytes(), placed.toBytes(), c.toString());
            for (int s = 0; s < n; s++) {
                assertArrayEquals(before[s], sources[s].toBytes(), "source " + s + " of " + c + " changed");
            }
        }
    }

    @Test
    void refusesAPlacementThatDoesNotFit() {
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray a = Mlx.zeros(new int[] {2, 1, 4, 3}, Dtype.FLOAT32);
            MlxArray b = Mlx.zeros(new int[] {1, 1, 4, 3}, Dtype.BFLOAT16);
            MlxArray otherDim = Mlx.zeros(new int[] {1, 1, 4, 2}, Dtype.FLOAT32);
            MlxArray[] one = {a};
            // past the buffer, more positions than the source has, negative
            assertThrows(MlxException.class, () -> Mlx.placeRows(one, new int[] {3}, new int[] {4}, 6));
            assertThrows(MlxException.class, () -> Mlx.placeRows(one, new int[] {0}, new int[] {5}, 8));
            assertThrows(MlxException.class, () -> Mlx.placeRows(one, new int[] {-1}, new int[] {2}, 8));
            // sources that differ in dtype or head dim
            assertThrows(
                    MlxException.class,
                    () -> Mlx.placeRows(new MlxArray[] {a, b}, new int[] {0, 0}, new int[] {1, 1}, 4));
            assertThrows(
                    MlxException.class,
                    () -> Mlx.placeRows(new MlxArray[] {a, otherDim}, new int[] {0, 0}, new int[] {1, 1}, 4));
            assertThrows(IllegalArgumentException.class, () -> Mlx.placeRows(one, new int[] {0, 0}, new int[] {1}, 4));
        }
    }

    /** Source {@code s} of the case as the case's kind of array, its values seeded. */
    private static MlxArray source(java.util.SplittableRandom rnd, Case c, int s) {
        int r = c.rows()[s];
        int p = c.positions()[s];
        int[] unit = {1, 1, 1, 1};
        return switch (c.source()) {
            case WHOLE -> SameBytes.evaluated(rnd, c.dtype(), new int[] {r, c.heads(), p, c.dim()});
            case POSITIONS_VIEW ->
                Mlx.slice(
                        SameBytes.evaluated(rnd, c.dtype(), new int[] {r, c.heads(), p + 3, c.dim()}),
                        new int[] {0, 0, 1, 0},
                        new int[] {r, c.heads(), p + 1, c.dim()},
                        unit);
            case TRANSPOSED ->
                Mlx.transpose(
                        SameBytes.evaluated(rnd, c.dtype(), new int[] {r, c.heads(), c.dim(), p}),
                        new int[] {0, 1, 3, 2});
        };
    }
}
