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
 * {@link Mlx#rollRowsRight} (the batch caches' per-row roll, {@code mlxr_roll_rows.cpp}) against
 * the gather it replaces, {@code take_along_axis(a, (arange(n) - shift) % n, 2)}, live in one
 * process: the same bytes, for float32, bfloat16 and uint32 buffers (a quantized cache's packed
 * words), shifts of zero, within the capacity, of the whole capacity and past it, and negative;
 * the input's buffer taken over and moved in place (nothing else holds it), the input still held
 * (a fresh buffer, the input left as it was), and a strided view (a slice of positions).
 */
class RollRowsTest {

    enum Input {
        /** Evaluated, then released before the roll is: the primitive takes its buffer. */
        RELEASED,
        /** Still held by the test: a fresh buffer, the input unchanged. */
        HELD,
        /** A slice of a longer buffer's positions (not row-contiguous). */
        VIEW
    }

    record Case(Dtype dtype, int[] shape, int[] shifts, Input input) {
        @Override
        public String toString() {
            return dtype + " " + Arrays.toString(shape) + " shifts " + Arrays.toString(shifts) + " " + input;
        }
    }

    static Stream<Case> cases() {
        List<Case> c = new ArrayList<>();
        for (Dtype d : new Dtype[] {Dtype.FLOAT32, Dtype.BFLOAT16, Dtype.UINT32}) {
            for (Input in : Input.values()) {
                c.add(new Case(d, new int[] {7, 3, 10, 5}, new int[] {0, 1, 3, 9, 10, 12, -1}, in));
                c.add(new Case(d, new int[] {8, 3, 256, 64}, new int[] {0, 0, 1, 1, 2, 1, 1, 3}, in));
                c.add(new Case(d, new int[] {1, 2, 1, 4}, new int[] {5}, in));
            }
        }
        return c.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void rollsEachRowAsTheGatherDoes(Case c) {
        try (ArrayScope scope = ArrayScope.open()) {
            int[] shape = c.shape();
            int n = shape[2];
            int[] source = c.input() == Input.VIEW ? new int[] {shape[0], shape[1], n + 3, shape[3]} : shape;
            MlxArray base = SameBytes.evaluated(SameBytes.seeded(c), c.dtype(), source);
            MlxArray a = c.input() == Input.VIEW
                    ? Mlx.slice(
                            base, new int[] {0, 0, 2, 0}, new int[] {shape[0], shape[1], n + 2, shape[3]}, new int[] {
                                1, 1, 1, 1
                            })
                    : base;
            Mlx.eval(a);
            byte[] before = a.toBytes();
            MlxArray expected = Mlx.takeAlongAxis(a, index(c.shifts(), n), 2);
            Mlx.eval(expected);
            MlxArray rolled = Mlx.rollRowsRight(a, c.shifts());
            if (c.input() == Input.RELEASED) {
                a.close();
            }
            Mlx.eval(rolled);
            assertArrayEquals(expected.toBytes(), rolled.toBytes(), c.toString());
            if (c.input() != Input.RELEASED) {
                assertArrayEquals(before, a.toBytes(), "the input of " + c + " changed");
            }
        }
    }

    @Test
    void refusesAnArrayThatIsNotOneRowPerShift() {
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray a = Mlx.zeros(new int[] {2, 1, 4, 3}, Dtype.FLOAT32);
            assertThrows(MlxException.class, () -> Mlx.rollRowsRight(a, new int[] {1, 2, 3}));
            MlxArray flat = Mlx.zeros(new int[] {2, 4}, Dtype.FLOAT32);
            assertThrows(MlxException.class, () -> Mlx.rollRowsRight(flat, new int[] {1, 2}));
        }
    }

    /** {@code (arange(n) - shift[r]) % n} as {@code [B, 1, n, 1]}. */
    private static MlxArray index(int[] shifts, int n) {
        int[] index = new int[shifts.length * n];
        for (int r = 0; r < shifts.length; r++) {
            for (int j = 0; j < n; j++) {
                index[r * n + j] = Math.floorMod(j - shifts[r], n);
            }
        }
        return Mlx.fromInts(index, shifts.length, 1, n, 1);
    }
}
