package dev.mlxring.ingress.pool;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A {@link ModelPool.MemoryLimits} that never blocks its caller: each {@link #apply} records the
 * values and returns; one daemon thread applies the latest recorded values to the delegate, skipping
 * any it was handed while it was busy (only the newest pair matters) and any pair equal to the last
 * it applied.
 *
 * <p>Why: MLX's {@code set_cache_limit} on the CPU first synchronizes every CPU stream, so it waits
 * for the step each model's exec thread has in flight, and forever when a tensor-parallel rank is
 * lost mid-collective. The pool calls its limits under its lock on every admission and release; a
 * delegate that waits on MLX there would stall every request behind that step, and a request's
 * release (which must free its admission) behind a collective that never ends.
 *
 * <p>The cost: MLX's limits trail the budget by the time the applier thread takes to get to them
 * (at most the step in flight). The budget itself, which admission checks, is never late.
 *
 * <p>Threads: {@link #apply} from any thread; the delegate only on the applier thread. {@link
 * #close} stops the thread (waiting at most {@code closeTimeoutNs} for a delegate call in
 * progress: a daemon thread stuck in MLX does not keep the process alive).
 */
public final class AsyncMemoryLimits implements ModelPool.MemoryLimits, AutoCloseable {
    private final ModelPool.MemoryLimits delegate;
    private final long closeTimeoutNs;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Thread applier;

    // ---- under lock ----
    private long memoryLimitBytes = -1;
    private long cacheLimitBytes = -1;
    private long requested; // calls recorded
    private long taken; // recorded calls the applier has taken
    private boolean busy; // the applier is in a delegate call
    private boolean closed;

    // ---- applier thread only ----
    private long appliedMemoryBytes = -1;
    private long appliedCacheBytes = -1;

    /**
     * @param delegate applies the limits (may block: it runs on the applier thread alone)
     * @param threadName the applier thread's name
     * @param closeTimeoutNs how long {@link #close} waits for a delegate call in progress
     */
    public AsyncMemoryLimits(ModelPool.MemoryLimits delegate, String threadName, long closeTimeoutNs) {
        if (closeTimeoutNs < 0) {
            throw new IllegalArgumentException("a close timeout is >= 0 ns, got " + closeTimeoutNs);
        }
        this.delegate = java.util.Objects.requireNonNull(delegate, "delegate");
        this.closeTimeoutNs = closeTimeoutNs;
        this.applier = Thread.ofPlatform().name(threadName).daemon().unstarted(this::run);
        applier.start();
    }

    /** Records the values for the applier thread and returns at once; after {@link #close}, does nothing. */
    @Override
    public void apply(long memoryLimitBytes, long cacheLimitBytes) {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            this.memoryLimitBytes = memoryLimitBytes;
            this.cacheLimitBytes = cacheLimitBytes;
            requested++;
            changed.signal();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits until the applier has handed the delegate every value recorded before this call (or
     * skipped it as superseded or unchanged), at most {@code timeoutNs}.
     *
     * @return whether it caught up in time
     */
    public boolean awaitApplied(long timeoutNs) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutNs;
        lock.lock();
        try {
            long target = requested;
            while (taken < target || busy) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                changed.awaitNanos(left);
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    private void run() {
        while (true) {
            long memory;
            long cache;
            lock.lock();
            try {
                busy = false;
                changed.signalAll();
                while (taken == requested && !closed) {
                    changed.awaitUninterruptibly();
                }
                if (closed) {
                    return;
                }
                taken = requested;
                memory = memoryLimitBytes;
                cache = cacheLimitBytes;
                busy = true;
            } finally {
                lock.unlock();
            }
            if (memory == appliedMemoryBytes && cache == appliedCacheBytes) {
                continue;
            }
            try {
                delegate.apply(memory, cache);
                appliedMemoryBytes = memory;
                appliedCacheBytes = cache;
            } catch (RuntimeException e) {
                // The next change tries again; a failure here must not end the thread.
                System.getLogger(AsyncMemoryLimits.class.getName())
                        .log(System.Logger.Level.WARNING, "applying MLX's memory limits failed", e);
            }
        }
    }

    @Override
    public void close() {
        lock.lock();
        try {
            closed = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        try {
            applier.join(TimeUnit.NANOSECONDS.toMillis(closeTimeoutNs) + 1);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
