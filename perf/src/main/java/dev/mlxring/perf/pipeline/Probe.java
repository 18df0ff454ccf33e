package dev.mlxring.perf.pipeline;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * What a JMH trial of {@link PipelineBenchmark} records besides JMH's own numbers, over its
 * measurement iterations only: latency samples taken inside the pipeline (per-stage hand-offs,
 * per-token exec-to-listener), bytes allocated per stage thread (HotSpot's per-thread counters,
 * so the allocation {@code -prof gc} reports can be attributed to a stage) and the CPU the whole
 * process used. Appends tab-separated rows to the file named by {@code -Dmlxring.pipeline.probe}
 * (and prints them), one row per metric.
 */
final class Probe {
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    /** A fixed-capacity buffer of nanosecond samples (no allocation while recording). */
    static final class Samples {
        private final long[] values;
        private int n;

        Samples(int capacity) {
            values = new long[capacity];
        }

        void add(long v) {
            if (n < values.length) {
                values[n++] = v;
            }
        }

        void reset() {
            n = 0;
        }

        int count() {
            return n;
        }

        long[] sorted() {
            long[] s = Arrays.copyOf(values, n);
            Arrays.sort(s);
            return s;
        }

        static double percentile(long[] sorted, double p) {
            if (sorted.length == 0) {
                return Double.NaN;
            }
            int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
            return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
        }
    }

    private final String bench;
    private final String config;
    private volatile boolean measuring;
    private boolean started;
    private long cpu0;
    private long wall0;
    private Map<String, long[]> alloc0 = Map.of();
    /** Tokens (or requests) the listener saw while measuring; written by the sink thread only. */
    volatile long units;

    Probe(String bench, String config) {
        this.bench = bench;
        this.config = config;
    }

    boolean measuring() {
        return measuring;
    }

    /** Called before each iteration: the first measurement iteration resets the counters. */
    void iteration(boolean measurement, Samples... toReset) {
        if (measurement && !started) {
            started = true;
            for (Samples s : toReset) {
                s.reset();
            }
            units = 0;
            alloc0 = threadAllocations();
            cpu0 = OS.getProcessCpuTime();
            wall0 = System.nanoTime();
        }
        measuring = measurement;
    }

    /** Bytes allocated so far by each live thread, grouped by name ("mlxring-prep-0", "jmh", ...). */
    private static Map<String, long[]> threadAllocations() {
        Map<String, long[]> m = new TreeMap<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            long b = THREADS.getThreadAllocatedBytes(t.threadId());
            if (b >= 0) {
                m.computeIfAbsent(group(t.getName()), k -> new long[1])[0] += b;
            }
        }
        return m;
    }

    private static String group(String name) {
        if (name.startsWith("mlxring-")) {
            return name;
        }
        if (name.contains("jmh-worker") || name.startsWith("org.openjdk.jmh")) {
            return "jmh-worker";
        }
        return "other";
    }

    /** Writes the rows: samples as µs percentiles, allocation as bytes per unit, CPU as cores. */
    void report(String unit, Map<String, Samples> samples) {
        measuring = false;
        long wall = System.nanoTime() - wall0;
        double cores = (OS.getProcessCpuTime() - cpu0) / (double) wall;
        Map<String, long[]> alloc1 = threadAllocations();
        long n = units;
        StringBuilder out = new StringBuilder();
        for (var e : samples.entrySet()) {
            long[] s = e.getValue().sorted();
            out.append(String.format(
                    Locale.ROOT,
                    "%s\t%s\tlatency\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f%n",
                    bench,
                    config,
                    e.getKey(),
                    s.length,
                    us(Samples.percentile(s, 50)),
                    us(Samples.percentile(s, 90)),
                    us(Samples.percentile(s, 99)),
                    us(Samples.percentile(s, 99.9)),
                    us(s.length == 0 ? Double.NaN : s[s.length - 1])));
        }
        Map<String, Double> perUnit = new LinkedHashMap<>();
        double total = 0;
        for (var e : alloc1.entrySet()) {
            long before = alloc0.containsKey(e.getKey()) ? alloc0.get(e.getKey())[0] : 0;
            double b = n == 0 ? Double.NaN : (e.getValue()[0] - before) / (double) n;
            perUnit.put(e.getKey(), b);
            total += b;
        }
        for (var e : perUnit.entrySet()) {
            out.append(String.format(
                    Locale.ROOT, "%s\t%s\talloc\t%s\t%d\t%.3f%n", bench, config, e.getKey(), n, e.getValue()));
        }
        out.append(String.format(Locale.ROOT, "%s\t%s\talloc\tall threads\t%d\t%.3f%n", bench, config, n, total));
        out.append(String.format(Locale.ROOT, "%s\t%s\tcpu\tprocess cores\t%d\t%.2f%n", bench, config, n, cores));
        out.append(
                String.format(Locale.ROOT, "%s\t%s\tunits\t%s\t%d\t%.1f%n", bench, config, unit, n, n / (wall / 1e9)));
        System.out.print(out);
        String file = System.getProperty("mlxring.pipeline.probe");
        if (file != null) {
            try {
                Path p = Path.of(file);
                if (p.getParent() != null) {
                    Files.createDirectories(p.getParent());
                }
                Files.writeString(p, out, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            } catch (IOException e) {
                System.err.println("probe: cannot write " + file + ": " + e);
            }
        }
    }

    private static double us(double ns) {
        return ns / 1000.0;
    }
}
