package dev.mlxring.perf;

import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.FastKernels;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.mlx.Numerics;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The cost of M activation rows against one row for {@code quantized_matmul(transpose=True)} over
 * one forward pass of SmolLM2-135M's shapes (30 layers of q/k/v/o and gate/up/down, 4-bit group
 * 32, plus the tied 8-bit head), float32 activations as that model runs them, per kernel choice
 * and numeric tier ({@code --numerics fast}: the fast tier's kernels, with {@code native} only).
 * Random weights (the kernels' cost does not depend on the values). Each (kernels, M) cell times
 * {@code --reps} evaluations of every shape after one warm-up, alternating the kernel choices
 * shape by shape so drifts of a shared machine hit both alike; the forward-pass figure is
 * 30 × the layer's shapes + the head. Besides wall time it reports the process's CPU time per
 * call (all threads: the kernels' workers, MLX's stream thread, the JVM), which a machine shared
 * with other work inflates far less than wall time.
 *
 * <pre>
 * QuantizedMatmulBenchmark [--rows 1,2,4,8] [--reps 5] [--cpu-kernels native,mlx] [--numerics exact,fast]
 *                          [--out FILE.md]
 * </pre>
 */
public final class QuantizedMatmulBenchmark {
    record Shape(String name, int n, int k, int bits, int count) {}

    /** One kernel choice and numeric tier. */
    record Variant(CpuKernels kernels, Numerics numerics) {
        String label() {
            return kernels.cliName() + (numerics == Numerics.EXACT ? "" : " " + numerics.cliName());
        }

        MlxArray matmul(MlxArray x, MlxArray[] q, int bits) {
            return numerics.fast()
                    ? FastKernels.quantizedMatmul(x, q[0], q[1], q[2], 32, bits, numerics)
                    : kernels.quantizedMatmul(x, q[0], q[1], q[2], true, 32, bits);
        }
    }

    private static final List<Shape> SHAPES = List.of(
            new Shape("q_proj / o_proj", 576, 576, 4, 60),
            new Shape("k_proj / v_proj", 192, 576, 4, 60),
            new Shape("gate_proj / up_proj", 1536, 576, 4, 60),
            new Shape("down_proj", 576, 1536, 4, 30),
            new Shape("lm_head (tied, 8-bit)", 49152, 576, 8, 1));

    private QuantizedMatmulBenchmark() {}

    public static void main(String[] argv) throws Exception {
        int[] rows = {1, 2, 4, 8};
        int reps = 5;
        List<CpuKernels> kernels = List.of(CpuKernels.NATIVE, CpuKernels.MLX);
        List<Numerics> numerics = List.of(Numerics.EXACT);
        Path out = null;
        Flags f = new Flags(argv);
        try {
            while (f.next()) {
                switch (f.flag()) {
                    case "--rows" ->
                        rows = Arrays.stream(f.value().split(","))
                                .mapToInt(Integer::parseInt)
                                .toArray();
                    case "--reps" -> reps = f.positive();
                    case "--cpu-kernels" ->
                        kernels = Arrays.stream(f.value().split(","))
                                .map(v -> CpuKernels.parse("--cpu-kernels", v.trim()))
                                .distinct()
                                .toList();
                    case "--numerics" ->
                        numerics = Arrays.stream(f.value().split(","))
                                .map(v -> Numerics.parse("--numerics", v.trim()))
                                .distinct()
                                .toList();
                    case "--out" -> out = Path.of(f.value());
                    default -> throw f.unknown();
                }
            }
        } catch (IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            System.exit(64);
        }
        List<Variant> variants = new ArrayList<>();
        for (CpuKernels k : kernels) {
            for (Numerics n : numerics) {
                if (n == Numerics.EXACT || k == CpuKernels.NATIVE) {
                    variants.add(new Variant(k, n));
                }
            }
        }
        // [variant][rows] -> ms per forward pass, wall and process CPU
        double[][] ms = new double[variants.size()][rows.length];
        double[][] cpuMs = new double[variants.size()][rows.length];
        try (ArrayScope scope = ArrayScope.open()) {
            SplittableRandom rnd = new SplittableRandom(7);
            for (Shape s : SHAPES) {
                MlxArray[] q = weights(rnd, s);
                for (int ri = 0; ri < rows.length; ri++) {
                    MlxArray x = Mlx.fromFloats(floats(rnd, rows[ri] * s.k(), 1f), rows[ri], s.k());
                    Mlx.eval(x);
                    for (Variant v : variants) {
                        time(v, x, q, s, 1); // warm-up
                    }
                    for (int ki = 0; ki < variants.size(); ki++) {
                        double[] each = time(variants.get(ki), x, q, s, reps);
                        ms[ki][ri] += each[0] * s.count();
                        cpuMs[ki][ri] += each[1] * s.count();
                        System.err.printf(
                                Locale.ROOT,
                                "[qmm] %-22s M=%-4d %-11s %9.3f ms wall %9.3f ms CPU%n",
                                s.name(),
                                rows[ri],
                                variants.get(ki).label(),
                                each[0],
                                each[1]);
                    }
                }
            }
        }
        StringBuilder sb = new StringBuilder();
        table(sb, "wall", variants, rows, ms);
        sb.append('\n');
        table(sb, "CPU", variants, rows, cpuMs);
        System.out.println(sb);
        if (out != null) {
            Files.writeString(out, sb.toString(), StandardCharsets.UTF_8);
        }
    }

    private static void table(StringBuilder sb, String what, List<Variant> variants, int[] rows, double[][] ms) {
        sb.append("| kernels (").append(what).append(" ms per forward pass) |");
        for (int m : rows) {
            sb.append(" M=").append(m).append(" ms |");
        }
        for (int ri = 1; ri < rows.length; ri++) {
            sb.append(" M=").append(rows[ri]).append(" / M=").append(rows[0]).append(" |");
        }
        sb.append("\n|---|").append("---:|".repeat(2 * rows.length - 1)).append('\n');
        for (int ki = 0; ki < variants.size(); ki++) {
            sb.append("| ").append(variants.get(ki).label()).append(" |");
            for (int ri = 0; ri < rows.length; ri++) {
                sb.append(String.format(Locale.ROOT, " %.1f |", ms[ki][ri]));
            }
            for (int ri = 1; ri < rows.length; ri++) {
                sb.append(String.format(Locale.ROOT, " %.2f× |", ms[ki][ri] / ms[ki][0]));
            }
            sb.append('\n');
        }
    }

    private static final com.sun.management.OperatingSystemMXBean OS = (com.sun.management.OperatingSystemMXBean)
            java.lang.management.ManagementFactory.getOperatingSystemMXBean();

    /**
     * Median wall ms of {@code reps} evaluations of a fresh quantized_matmul graph, and the mean
     * process-CPU ms over them (the OS counter is coarse, so CPU time is taken over all reps).
     */
    private static double[] time(Variant v, MlxArray x, MlxArray[] q, Shape s, int reps) {
        double[] t = new double[reps];
        long c0 = OS.getProcessCpuTime();
        for (int r = 0; r < reps; r++) {
            try (ArrayScope scope = ArrayScope.open()) {
                long t0 = System.nanoTime();
                MlxArray y = v.matmul(x, q, s.bits());
                Mlx.eval(y);
                t[r] = (System.nanoTime() - t0) / 1e6;
            }
        }
        return new double[] {DecodeBenchmark.median(t), (OS.getProcessCpuTime() - c0) / 1e6 / reps};
    }

    private static MlxArray[] weights(SplittableRandom rnd, Shape s) {
        int words = s.k() * s.bits() / 32;
        int[] w = new int[s.n() * words];
        for (int i = 0; i < w.length; i++) {
            w[i] = rnd.nextInt();
        }
        int groups = s.k() / 32;
        MlxArray[] q = {
            Mlx.astype(Mlx.fromInts(w, s.n(), words), Dtype.UINT32),
            Mlx.fromFloats(floats(rnd, s.n() * groups, 0.02f), s.n(), groups),
            Mlx.fromFloats(floats(rnd, s.n() * groups, 0.05f), s.n(), groups)
        };
        Mlx.eval(q);
        return q;
    }

    private static float[] floats(SplittableRandom rnd, int n, float mag) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) (rnd.nextGaussian() * mag);
        }
        return v;
    }
}
