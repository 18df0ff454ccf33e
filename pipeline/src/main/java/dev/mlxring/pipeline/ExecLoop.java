package dev.mlxring.pipeline;

import com.lmax.disruptor.EventPoller;
import com.lmax.disruptor.RingBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.locks.LockSupport;

/**
 * The exec thread: the only thread that touches MLX. It pulls planned sessions from the request
 * ring with an {@link EventPoller} (never blocking on a producer), runs one safe work unit of the
 * active session per iteration, and publishes committed tokens to the token ring with a
 * non-blocking try-publish. Between work units — the safe points — it checks cancellation,
 * stop-string requests, consumer credits and new arrivals.
 *
 * <p>Concurrency is the batch size: when the executor offers batching and
 * {@link EngineConfig#decodeConcurrency()} is above 1, sessions run as rows of one batch, admitted
 * and settled by the {@link BatchScheduler} (one unit over every row per iteration). Otherwise, and
 * for a session the batch cannot run, sessions run alone, one after another in admission order:
 * one {@link ExecutionRun#advance()} per iteration. A session whose consumer holds no credits is
 * paused with its state kept, and cancelled after the idle deadline; a full token ring pauses the
 * loop until the sink catches up. Nothing is buffered without bound. A session cancelled while
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
    private Session active;
    /** A token or terminal event that could not be published yet (token ring full). */
    private boolean pendingToken;
    private Outcome pendingTerminal;
    private final StepResult pending;
    private final ExecActivity activity = new ExecActivity();
    /** The batch policy, or null when sessions run one at a time only. Opened on the exec thread. */
    private BatchScheduler batched;

    ExecLoop(EventPoller<RequestEvent> poller, RingBuffer<TokenEvent> tokens, Executor executor, EngineConfig config) {
        this.poller = poller;
        this.out = new TokenPublisher(tokens);
        this.executor = executor;
        this.config = config;
        this.pending = new StepResult(config.maxTopLogprobs());
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
            while (running) {
                out.resetRingFull();
                boolean worked = poll();
                try {
                    worked |= step();
                } catch (Throwable e) {
                    // This thread's exception handler: whatever a session's work throws (a bug, a
                    // stack overflow, an MLX allocation failure) fails that session only, and the
                    // MLX thread goes on with the next one.
                    LOG.log(System.Logger.Level.ERROR, "exec failed on a session; failing it and continuing", e);
                    if (active != null && pendingTerminal == null) {
                        worked |= finish(Outcome.failed(Outcome.ErrorType.INTERNAL,
                                StageExceptionHandler.describe("exec", e), usage(active)));
                    }
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
            drainAs = Outcome.failed(Outcome.ErrorType.INTERNAL, StageExceptionHandler.describe("exec stage", e),
                    Usage.NONE);
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
        long batchDeadlineNs = batched == null ? 0 : batched.wakeDeadlineNs();
        if (out.ringFull()) {
            LockSupport.parkNanos(this, RING_FULL_PARK_NS);
        } else if (batchDeadlineNs != 0) {
            // A row waits for credits: release() and cancel() wake us; its deadline bounds the sleep.
            LockSupport.parkNanos(this, Math.max(batchDeadlineNs - System.nanoTime(), 1L));
        } else if (active != null) {
            // Paused for want of credits: release() and cancel() wake us; the idle-consumer
            // deadline is the longest we may sleep.
            long leftNs = active.pausedSinceNs + config.idleConsumerTimeoutNs() - System.nanoTime();
            LockSupport.parkNanos(this, Math.max(leftNs, 1L));
        } else {
            // Nothing running or queued: plan (new work), cancel and stop wake us.
            LockSupport.park(this);
        }
    }

    /** One safe work unit; returns whether anything happened. */
    private boolean step() {
        if (pendingTerminal != null) {
            return retryTerminal();
        }
        settleCancelledWhileQueued();
        if (active == null && batched != null && batched.available()) {
            boolean worked = batched.admit(queue);
            if (batched.size() > 0) {
                return batched.step() | worked;
            }
            if (worked) {
                return true;
            }
            // The batch is empty: a session it cannot run (now at the head) runs alone below.
        }
        if (active == null) {
            // startNext may settle a failed or cancelled session right away (active back to null).
            return startNext();
        }
        Session s = active;
        if (pendingToken) {
            if (!out.publishToken(s, pending)) {
                return false;
            }
            pendingToken = false;
        }
        if (s.isCancelRequested()) {
            return finish(Outcome.cancelled(s.cancelReason(), usage(s)));
        }
        if (s.isStopRequested()) {
            return finish(Outcome.completed("stop", usage(s)));
        }
        if (s.credits() <= 0) {
            long now = System.nanoTime();
            if (s.pausedSinceNs == 0) {
                s.pausedSinceNs = now;
            } else if (now - s.pausedSinceNs > config.idleConsumerTimeoutNs()) {
                return finish(Outcome.cancelled("consumer did not read for "
                        + config.idleConsumerTimeoutNs() / 1_000_000 + " ms", usage(s)));
            }
            return false;
        }
        s.pausedSinceNs = 0;
        StepResult r;
        activity.begin(ExecActivity.Unit.SOLO, 1, System.nanoTime());
        try {
            r = s.run.advance();
        } catch (RuntimeException e) {
            return finish(Outcome.failed(Outcome.ErrorType.INTERNAL, "generation failed: " + e.getMessage(), usage(s)));
        } finally {
            activity.end();
        }
        switch (r.kind) {
            case PREFILLED -> {
                return true;
            }
            case TOKEN -> {
                s.takeCredit();
                if (!out.publishToken(s, r)) {
                    copy(r, pending);
                    pendingToken = true;
                }
                return true;
            }
            case FINISHED -> {
                return finish(Outcome.completed(r.finishReason, usage(s)));
            }
            case FAILED -> {
                return finish(Outcome.failed(r.errorType, r.errorMessage, usage(s)));
            }
            default -> throw new IllegalStateException("unknown step kind " + r.kind);
        }
    }

    private boolean startNext() {
        Session s = queue.poll();
        if (s == null) {
            return false;
        }
        if (s.state().isTerminal()) {
            return true; // settled while queued (Engine.abandonInFlight): nothing to run
        }
        active = s;
        if (s.isCancelRequested()) {
            return finish(Outcome.cancelled(s.cancelReason(), Usage.NONE));
        }
        s.advanceTo(Lifecycle.RUNNING);
        try {
            s.planHandedOff = true;
            s.run = executor.open(s.plan);
            s.cachedPromptTokens(s.run.cachedTokens());
        } catch (RequestException e) {
            return finish(Outcome.failed(e.type(), e.getMessage(), Usage.NONE));
        } catch (RuntimeException e) {
            return finish(Outcome.failed(Outcome.ErrorType.INTERNAL, "could not start generation: " + e, Usage.NONE));
        }
        return true;
    }

    /** Cancelled sessions waiting behind the active one settle now, not when their turn comes. */
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

    private static Usage usage(Session s) {
        ExecutionRun run = s.run;
        return run == null ? Usage.NONE : new Usage(run.promptTokens(), run.completionTokens(), run.cachedTokens());
    }

    /** Releases the active run (device state first), then publishes its terminal event. */
    private boolean finish(Outcome outcome) {
        Session s = active;
        if (s.run != null) {
            try {
                s.run.close();
            } finally {
                s.run = null;
            }
        }
        pendingToken = false;
        pendingTerminal = outcome;
        return retryTerminal();
    }

    private boolean retryTerminal() {
        if (!out.publishTerminal(active, pendingTerminal)) {
            return false;
        }
        pendingTerminal = null;
        active = null;
        return true;
    }

    private static void copy(StepResult from, StepResult to) {
        to.kind = from.kind;
        to.token = from.token;
        to.logprob = from.logprob;
        to.topCount = from.topCount;
        System.arraycopy(from.topIds, 0, to.topIds, 0, from.topCount);
        System.arraycopy(from.topLogprobs, 0, to.topLogprobs, 0, from.topCount);
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
        if (active != null && pendingTerminal == null) {
            finish(new Outcome(as.state(), as.finishReason(), as.errorType(), as.message(), usage(active)));
        }
        while (true) {
            if (pendingTerminal != null) {
                if (!retryTerminal()) {
                    if (System.nanoTime() > deadline) {
                        break;
                    }
                    Thread.onSpinWait();
                    continue;
                }
            }
            Session next = queue.poll();
            if (next == null) {
                break;
            }
            active = next;
            pendingTerminal = as;
        }
    }
}
