package dev.mlxring.perf;

import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.Arrays;
import java.util.Locale;

/**
 * What a batch cache's join writes, in process: {@code --layers} pairs of buffers (a model's keys
 * and values per layer) of one side of {@code --rows-a} rows and one of {@code --rows-b} rows, both
 * {@code [rows, --heads, --capacity, --head-dim]} float32, joined into {@code [rows-a + rows-b,
 * heads, --size, head-dim]} with side a's first {@code --filled-a} positions shifted right by
 * {@code --left-a} and side b's first {@code --filled-b} by {@code --left-b}, zeros elsewhere
 * (the batch caches' {@code extend}). Two ways, alternating, {@code --reps} times each per round:
 * MLX's graph (zeros of the joined shape, a slice update per side: what {@code KvBuffers.joined}
 * built before) and {@link Mlx#placeRows} (what it builds). Prints each round's median wall time
 * of one evaluated join of every buffer. {@code --cache-limit 0} makes every buffer a fresh
 * allocation (MLX's buffer cache off), as a first join of a new size is.
 *
 * <pre>
 * JoinedRowsCost [--layers 30] [--rows-a 1] [--rows-b 15] [--heads 3] [--head-dim 64] [--capacity 256]
 *                [--size 287] [--left-a 2] [--filled-a 48] [--left-b 0] [--filled-b 50] [--reps 5]
 *                [--rounds 3] [--cache-limit -1]
 * </pre>
 */
public final class JoinedRowsCost {
    private static final String USAGE = "JoinedRowsCost [--layers 30] [--rows-a 1] [--rows-b 15] [--heads 3]"
            + " [--head-dim 64] [--capacity 256] [--size 287] [--left-a 2] [--filled-a 48] [--left-b 0]"
            + " [--filled-b 50] [--reps 5] [--rounds 3] [--cache-limit -1]";

    record Options(
            int layers,
            int rowsA,
            int rowsB,
            int heads,
            int headDim,
            int capacity,
            int size,
            int leftA,
            int filledA,
            int leftB,
            int filledB,
            int reps,
            int rounds,
            long cacheLimit) {}

    private JoinedRowsCost() {}

    public static void main(String[] argv) {
        Options o = Flags.parseOrExit(argv, JoinedRowsCost::parse, USAGE);
        if (o.cacheLimit() >= 0) {
            Mlx.setCacheLimit(o.cacheLimit());
        }
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray[] a = new MlxArray[o.layers()];
            MlxArray[] b = new MlxArray[o.layers()];
            MlxArray one = Mlx.fromFloats(new float[] {1f}, 1);
            for (int i = 0; i < o.layers(); i++) {
                a[i] = Mlx.add(
                        Mlx.zeros(new int[] {o.rowsA(), o.heads(), o.capacity(), o.headDim()}, Dtype.FLOAT32), one);
                b[i] = Mlx.add(
                        Mlx.zeros(new int[] {o.rowsB(), o.heads(), o.capacity(), o.headDim()}, Dtype.FLOAT32), one);
            }
            Mlx.eval(a);
            Mlx.eval(b);
            for (int round = 1; round <= o.rounds(); round++) {
                double[] graph = new double[o.reps()];
                double[] placed = new double[o.reps()];
                for (int rep = 0; rep < o.reps(); rep++) {
                    graph[rep] = timed(o, a, b, false);
                    placed[rep] = timed(o, a, b, true);
                }
                System.out.printf(
                        Locale.ROOT,
                        "round %d: zeros + slice updates %.1f ms, placeRows %.1f ms (medians of %d, %d buffers of [%d, %d, %d, %d])%n",
                        round,
                        median(graph),
                        median(placed),
                        o.reps(),
                        2 * o.layers(),
                        o.rowsA() + o.rowsB(),
                        o.heads(),
                        o.size(),
                        o.headDim());
            }
        }
    }

    /** One join of every layer's two buffers, evaluated, in ms; the results freed. */
    private static double timed(Options o, MlxArray[] a, MlxArray[] b, boolean primitive) {
        try (ArrayScope scope = ArrayScope.open()) {
            int rows = o.rowsA() + o.rowsB();
            int lenA = Math.min(o.filledA(), o.size() - o.leftA());
            int lenB = Math.min(o.filledB(), o.size() - o.leftB());
            MlxArray[] out = new MlxArray[2 * o.layers()];
            long t0 = System.nanoTime();
            for (int i = 0; i < out.length; i++) {
                MlxArray x = a[i / 2];
                MlxArray y = b[i / 2];
                if (primitive) {
                    out[i] = Mlx.placeRows(
                            new MlxArray[] {x, y}, new int[] {o.leftA(), o.leftB()}, new int[] {lenA, lenB}, o.size());
                } else {
                    int[] unit = {1, 1, 1, 1};
                    MlxArray z = Mlx.zeros(new int[] {rows, o.heads(), o.size(), o.headDim()}, Dtype.FLOAT32);
                    MlxArray za = Mlx.sliceUpdate(
                            z,
                            Mlx.slice(
                                    x,
                                    new int[] {0, 0, 0, 0},
                                    new int[] {o.rowsA(), o.heads(), lenA, o.headDim()},
                                    unit),
                            new int[] {0, 0, o.leftA(), 0},
                            new int[] {o.rowsA(), o.heads(), o.leftA() + lenA, o.headDim()},
                            unit);
                    z.close(); // superseded: MLX may donate its buffer, as the cache's updates do
                    out[i] = Mlx.sliceUpdate(
                            za,
                            Mlx.slice(
                                    y,
                                    new int[] {0, 0, 0, 0},
                                    new int[] {o.rowsB(), o.heads(), lenB, o.headDim()},
                                    unit),
                            new int[] {o.rowsA(), 0, o.leftB(), 0},
                            new int[] {rows, o.heads(), o.leftB() + lenB, o.headDim()},
                            unit);
                    za.close();
                }
            }
            Mlx.eval(out);
            return (System.nanoTime() - t0) / 1e6;
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    static Options parse(String[] argv) {
        int[] v = {30, 1, 15, 3, 64, 256, 287, 2, 48, 0, 50, 5, 3};
        String[] names = {
            "--layers",
            "--rows-a",
            "--rows-b",
            "--heads",
            "--head-dim",
            "--capacity",
            "--size",
            "--left-a",
            "--filled-a",
            "--left-b",
            "--filled-b",
            "--reps",
            "--rounds"
        };
        long cacheLimit = -1;
        Flags f = new Flags(argv);
        while (f.next()) {
            if (f.flag().equals("--cache-limit")) {
                try {
                    cacheLimit = Long.parseLong(f.value());
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("--cache-limit must be a number of bytes, got " + f.value());
                }
                continue;
            }
            int k = Arrays.asList(names).indexOf(f.flag());
            if (k < 0) {
                throw new IllegalArgumentException("unknown flag " + f.flag());
            }
            v[k] = f.nonNegative();
        }
        for (int k : new int[] {0, 3, 4, 6, 11, 12}) {
            if (v[k] == 0) {
                throw new IllegalArgumentException(names[k] + " must be positive");
            }
        }
        if (v[7] > v[6] || v[9] > v[6] || v[8] > v[5] || v[10] > v[5]) {
            throw new IllegalArgumentException(
                    "a side's left padding must fit --size and its filled positions --capacity");
        }
        return new Options(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], cacheLimit);
    }
}
