package dev.mlxring.pipeline;

import com.lmax.disruptor.EventPoller;
import com.lmax.disruptor.RingBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.locks.LockSupport;

/**
 * The exec thread: the only thread that touches MLX. It pulls planned sessions from the request
 * ring with an {@link EventPoller} (never blocking on a producer), runs one safe work unit per
 * iteration, and publishes committed tokens to the token ring with a
 * non-blocking try-publish. Between work units — the safe points — it checks cancellation,
 * stop-string requests, consumer credits and new arrivals.
 *
 * <p>One policy, {@link BatchScheduler}, runs every session. Concurrency is the batch size: when
 * the executor offers batching and {@link EngineConfig#decodeConcurrency()} is above 1, sessions
 * run as rows of one batch (one unit over every row per iteration). Otherwise, and for a session
 * the batch cannot run (once the batch is empty: mlx_lm.server's drain), sessions run alone, one
 * after another in admission order, through the same policy over a {@link SoloBatch} of capacity
 * one (one {@link ExecutionRun#advance()} per iteration). A session whose consumer holds no credits
 * is paused with its state kept, and cancelled after the idle deadline; a full token ring pauses
 * the loop until the sink catches up. Nothing is buffered without bound. A session cancelled while
 * queued is settled at the next safe point, not when its turn comes.
 */
final class ExecLoop implements Runnable {
    /**
     * How long exec parks while the token ring is full. The sink frees slots without signalling
     * exec (a wake per consumed event would cost the sink a syscall), so this wait polls.
     */
    private static final long RING_FULL_PARK_NS = 100_000L;

    private final EventPoller<RequestEvent> poller;
    private final TokenPublisher out;
    private final Executor executor;
    private final EngineConfig config;
    private final ArrayDeque<Session> queue = new ArrayDeque<>();
    private final EventPoller.Handler<RequestEvent> enqueue = (event, sequence, endOfBatch) -> {
        if (!event.session.settledBeforeExec) {
            queue.add(event.session);
        }
        event.session = null;
        return true;
    };

    private static final System.Logger LOG = System.getLogger(ExecLoop.class.getName());

    private volatile boolean running = true;
    private volatile Thread thread;
    /** Why the loop stopped on its own (a failure outside any session); null while healthy. */
    private volatile Throwable fatal;

    private final ExecActivity activity = new ExecActivity();
    /** The batch policy, or null when sessions run one at a time only. Opened on the exec thread. */
    private BatchScheduler batched;
    /** The same policy over one session at a time: sessions that run alone. Opened on the exec thread. */
    private BatchScheduler solo;

    ExecLoop(EventPoller<RequestEvent> poller, RingBuffer<TokenEvent> tokens, Executor executor, EngineConfig config) {
        this.poller = poller;
        this.out = new TokenPublisher(tokens);
        this.executor = executor;
        this.config = config;
    }

    void wake() {
        Thread t = thread;
        if (t != null && config.waitMode() == WaitMode.BLOCKING) {
            LockSupport.unpark(t);
        }
    }

    void stop() {
        running = false;
        wake();
    }

    /** What exec is doing now (any thread). */
    ExecActivity activity() {
        return activity;
    }

    /** Why exec stopped by itself, or null while it runs (or after an orderly {@link #stop()}). */
    Throwable fatal() {
        return fatal;
    }

    @Override
    public void run() {
        thread = Thread.currentThread();
        Outcome drainAs = null;
        try {
            batched = openBatch();
            solo = BatchScheduler.solo(executor, out, config, activity);
            while (running) {
                out.resetRingFull();
                boolean worked = poll();
                try {
                    worked |= step();
                } catch (Throwable e) {
                    // This thread's exception handler: a unit's failure already failed its rows
                    // (BatchScheduler); anything else thrown between units is logged and the MLX
                    // thread goes on.
                    LOG.log(System.Logger.Level.ERROR, "exec failed between units; continuing", e);
                }
                if (!worked) {
                    idle();
                }
            }
            drainAs = Outcome.cancelled("engine shut down", Usage.NONE);
        } catch (Throwable e) {
            // Outside any session (the request ring itself failed): exec cannot go on. Health
            // reports it from now on and everything queued fails instead of waiting forever.
            fatal = e;
            LOG.log(System.Logger.Level.ERROR, "exec stage stopped", e);
            drainAs = Outcome.failed(
                    Outcome.ErrorType.INTERNAL, StageExceptionHandler.describe("exec stage", e), Usage.NONE);
        } finally {
            try {
                drain(drainAs);
            } finally {
                executor.close();
            }
        }
    }

    private BatchScheduler openBatch() {
        try {
            return BatchScheduler.open(executor, out, config, activity);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "could not open a batch; running sessions one at a time", e);
            return null;
        }
    }

    private boolean poll() {
        try {
            return poller.poll(enqueue) == EventPoller.PollState.PROCESSING;
        } catch (Exception e) {
            throw new IllegalStateException("request ring poll failed", e);
        }
    }

    private void idle() {
        switch (config.waitMode()) {
            case BLOCKING -> park();
            case YIELDING -> Thread.yield();
            case BUSY_SPIN -> Thread.onSpinWait();
        }
    }

    /**
     * Parks until there is work. Safe against lost wake-ups: every waker first makes its change
     * visible (plan publishes its sequence; cancel, release and requestStop write the session)
     * and then unparks; an unpark that comes before the park leaves a permit, so the park
     * returns at once and the next iteration sees the change.
     */
    private void park() {
        long deadlineNs = earliest(batched == null ? 0 : batched.wakeDeadlineNs(), solo.wakeDeadlineNs());
        if (out.ringFull()) {
            LockSupport.parkNanos(this, RING_FULL_PARK_NS);
        } else if (deadlineNs != 0) {
            // A row waits for credits: release() and cancel() wake us; the idle-consumer deadline
            // bounds the sleep.
            LockSupport.parkNanos(this, Math.max(deadlineNs - System.nanoTime(), 1L));
        } else {
            // Nothing running or queued: plan (new work), cancel and stop wake us.
            LockSupport.park(this);
        }
    }

    /** The earlier of two deadlines, 0 meaning none. */
    private static long earliest(long a, long b) {
        return a == 0 ? b : b == 0 ? a : Math.min(a, b);
    }

    /** One safe work unit; returns whether anything happened. */
    private boolean step() {
        settleCancelledWhileQueued();
        if (solo.size() > 0) {
            // A session running alone holds exec until it ends; arrivals wait behind it.
            return solo.step();
        }
        if (batched != null && batched.available()) {
            boolean worked = batched.admit(queue);
            if (batched.size() > 0) {
                return batched.step() | worked;
            }
            if (worked) {
                return true;
            }
            // The batch is empty: a session it cannot run (now at the head) runs alone below.
        }
        boolean worked = solo.admit(queue);
        return solo.size() > 0 ? solo.step() | worked : worked;
    }

    /** Cancelled sessions waiting behind the running ones settle now, not when their turn comes. */
    private void settleCancelledWhileQueued() {
        if (queue.isEmpty()) {
            return;
        }
        var it = queue.iterator();
        while (it.hasNext()) {
            Session q = it.next();
            if (q.isCancelRequested() && out.publishTerminal(q, Outcome.cancelled(q.cancelReason(), Usage.NONE))) {
                it.remove();
            }
        }
    }

    /**
     * On close (or after a fatal failure): every queued or running session ends with {@code as}
     * (cancelled on close), so each still settles once.
     */
    private void drain(Outcome as) {
        try {
            poll();
        } catch (RuntimeException e) {
            // the ring is what failed: settle what we hold
        }
        long deadline = System.nanoTime() + 5_000_000_000L;
        if (batched != null) {
            batched.drain(as, deadline);
        }
        if (solo != null) {
            solo.drain(as, deadline);
        }
        for (Session next = queue.poll(); next != null; next = queue.poll()) {
            while (!out.publishTerminal(next, as) && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
        }
    }
}
