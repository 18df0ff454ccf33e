package dev.mlxring.ingress.pool;

import java.lang.management.ManagementFactory;

/**
 * The bytes a server may hold in model weights and request peaks ({@code --memory-budget}). A
 * plain count, not thread-safe: {@link ModelPool} takes and gives bytes under its lock.
 */
public final class MemoryBudget {
    /** The share of physical memory the default budget takes: the rest is the OS's, the JVM's and the page cache's. */
    public static final double DEFAULT_FRACTION_OF_PHYSICAL = 0.75;

    private final long totalBytes;
    private long usedBytes;

    public MemoryBudget(long totalBytes) {
        if (totalBytes < 1) {
            throw new IllegalArgumentException("a memory budget is a positive byte count, got " + totalBytes);
        }
        this.totalBytes = totalBytes;
    }

    /** {@link #DEFAULT_FRACTION_OF_PHYSICAL} of this machine's physical memory. */
    public static long defaultBytes() {
        var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        return (long) (os.getTotalMemorySize() * DEFAULT_FRACTION_OF_PHYSICAL);
    }

    public long totalBytes() {
        return totalBytes;
    }

    public long usedBytes() {
        return usedBytes;
    }

    public long freeBytes() {
        return totalBytes - usedBytes;
    }

    /** Takes {@code bytes} if they are free; false (nothing taken) if not. */
    boolean tryTake(long bytes) {
        if (bytes > freeBytes()) {
            return false;
        }
        usedBytes += bytes;
        return true;
    }

    /** Gives back {@code bytes} taken before. */
    void give(long bytes) {
        usedBytes -= bytes;
        if (usedBytes < 0) {
            throw new IllegalStateException("more bytes given back than taken: " + usedBytes);
        }
    }
}
