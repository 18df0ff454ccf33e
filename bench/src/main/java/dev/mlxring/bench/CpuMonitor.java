package dev.mlxring.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Measures how much CPU the rest of the machine used while a benchmark run was going: busy time
 * of all CPUs ({@code /proc/stat}, including steal) minus the CPU time of this JVM and of the
 * processes given as its own (a subprocess engine, a server under test; {@code /proc/<pid>/stat}), in cores (1.0 = one core fully busy). On a 2-core
 * machine anything well above 0 means the numbers of that run are contaminated. Linux only;
 * elsewhere {@link #available()} is false and the numbers are NaN.
 */
public final class CpuMonitor {
    /** USER_HZ; 100 on every mainstream Linux build. */
    private static final double TICKS_PER_S = 100.0;

    private static final Path STAT = Path.of("/proc/stat");

    public record Sample(long nanos, long busyTicks, long ownTicks) {}

    private final long[] pids;
    private final boolean reapedChildren;

    /** A monitor that counts this JVM and the processes {@code pids} as its own. */
    public CpuMonitor(long... pids) {
        this(false, pids);
    }

    private CpuMonitor(boolean reapedChildren, long... pids) {
        this.pids = pids.clone();
        this.reapedChildren = reapedChildren;
    }

    /**
     * A monitor that counts this JVM and the child processes it has waited for as its own: a
     * short-lived child's CPU (a {@code llama-bench} run) is its own once {@link Process#waitFor}
     * returned, taken before the second sample.
     */
    public static CpuMonitor withReapedChildren() {
        return new CpuMonitor(true);
    }

    public static boolean available() {
        return Files.isReadable(STAT);
    }

    public Sample sample() {
        if (!available()) {
            return new Sample(System.nanoTime(), -1, -1);
        }
        long busy = machineBusyTicks();
        long own = processTicks(ProcessHandle.current().pid(), reapedChildren);
        for (long pid : pids) {
            own += processTicks(pid, false);
        }
        return new Sample(System.nanoTime(), busy, own);
    }

    /** Foreign CPU between two samples, in cores. */
    public static double foreignCores(Sample a, Sample b) {
        if (a.busyTicks() < 0 || b.busyTicks() < 0) {
            return Double.NaN;
        }
        double wallS = (b.nanos() - a.nanos()) / 1e9;
        long foreign = (b.busyTicks() - a.busyTicks()) - (b.ownTicks() - a.ownTicks());
        return wallS <= 0 ? 0 : Math.max(0, foreign / TICKS_PER_S / wallS);
    }

    /** Samples for {@code windowMs} and returns the foreign CPU in that window, in cores. */
    public double foreignNow(long windowMs) throws InterruptedException {
        Sample a = sample();
        Thread.sleep(windowMs);
        return foreignCores(a, sample());
    }

    private static long machineBusyTicks() {
        try {
            String first = Files.readAllLines(STAT).get(0); // cpu user nice system idle iowait irq softirq steal ...
            String[] f = first.trim().split("\\s+");
            long busy = 0;
            for (int i : new int[] {1, 2, 3, 6, 7, 8}) {
                if (i < f.length) {
                    busy += Long.parseLong(f[i]);
                }
            }
            return busy;
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    private static long processTicks(long pid, boolean reapedChildren) {
        try {
            String s = Files.readString(Path.of("/proc/" + pid + "/stat"));
            String[] f = s.substring(s.lastIndexOf(')') + 2).trim().split("\\s+");
            // after "pid (comm) ": state=0 ... utime=11 stime=12 cutime=13 cstime=14
            long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]);
            return reapedChildren ? ticks + Long.parseLong(f[13]) + Long.parseLong(f[14]) : ticks;
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    public static String cores(double v) {
        return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.2f", v);
    }
}
