package dev.mlxring.pipeline;

import com.lmax.disruptor.EventHandler;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The plan stage (one thread): seals the {@link ExecutionPlan} and applies admission: at most
 * {@code maxQueued} sessions admitted and not yet terminal, beyond that the session fails as
 * OVERLOADED (503). A session that failed here or in prep is settled right away through the
 * token ring (it never waits behind running work); the rest go on to exec, which is woken after
 * each batch.
 */
final class PlanHandler implements EventHandler<RequestEvent> {
    private final Planner planner;
    private final AtomicInteger admitted;
    private final int maxQueued;
    private final int maxTopLogprobs;
    private final Runnable wakeExec;
    private final RingBuffer<TokenEvent> tokens;
    private Sequence sequence;
    /** Plan thread only: an admission slot is taken and the plan not yet sealed. */
    private boolean slotHeldWithoutPlan;

    PlanHandler(
            Planner planner,
            AtomicInteger admitted,
            int maxQueued,
            int maxTopLogprobs,
            Runnable wakeExec,
            RingBuffer<TokenEvent> tokens) {
        this.planner = planner;
        this.admitted = admitted;
        this.maxQueued = maxQueued;
        this.maxTopLogprobs = maxTopLogprobs;
        this.wakeExec = wakeExec;
        this.tokens = tokens;
    }

    @Override
    public void setSequenceCallback(Sequence sequenceCallback) {
        this.sequence = sequenceCallback;
    }

    @Override
    public void onEvent(RequestEvent event, long sequence, boolean endOfBatch) {
        Session s = event.session;
        s.stamp(Session.Stage.PLAN);
        if (s.failure == null && !s.isCancelRequested()) {
            admit(s);
        }
        if (s.failure != null) {
            settleEarly(s);
        }
        if (endOfBatch) {
            // Publish our progress before waking exec: its poller is gated on this sequence, and
            // the processor would only publish it after the batch (exec would find nothing and
            // park a full period). Safe: every event up to here is fully handled.
            this.sequence.set(sequence);
            wakeExec.run();
        }
    }

    /** Takes an admission slot and seals the plan, or sets the session's failure. */
    private void admit(Session s) {
        int top = s.request().topLogprobs();
        if (top > maxTopLogprobs) {
            // The token ring's events carry at most that many alternatives per token.
            s.failure = Outcome.failed(
                    Outcome.ErrorType.INVALID_REQUEST,
                    "top_logprobs must be at most " + maxTopLogprobs
                            + " on this engine (EngineConfig.maxTopLogprobs), got " + top,
                    Usage.NONE);
            return;
        }
        if (admitted.incrementAndGet() > maxQueued) {
            admitted.decrementAndGet();
            s.failure = Outcome.failed(
                    Outcome.ErrorType.OVERLOADED,
                    "the engine is at capacity (" + maxQueued + " requests admitted); retry later",
                    Usage.NONE);
            return;
        }
        slotHeldWithoutPlan = true;
        try {
            s.plan = planner.plan(s.request(), s.prepared);
            slotHeldWithoutPlan = false;
            s.advanceTo(Lifecycle.QUEUED);
        } catch (RequestException e) {
            releaseSlot();
            s.failure = Outcome.failed(e.type(), e.getMessage(), Usage.NONE);
        } catch (RuntimeException | StackOverflowError e) {
            releaseSlot();
            s.failure = Outcome.failed(Outcome.ErrorType.INTERNAL, "planning failed: " + e, Usage.NONE);
        }
    }

    private void releaseSlot() {
        slotHeldWithoutPlan = false;
        admitted.decrementAndGet();
    }

    /** A session that failed in prep or plan settles now, through the token ring. */
    private void settleEarly(Session s) {
        s.settledBeforeExec = true;
        // Blocking claim: the sink drains independently of exec, so a slot frees up soon.
        long seq = tokens.next();
        TokenEvent t = tokens.get(seq);
        t.session = s;
        t.kind = TokenEvent.TERMINAL;
        t.outcome = s.failure;
        tokens.publish(seq);
    }

    /**
     * The stage's {@link StageExceptionHandler} action: something escaped {@link #onEvent}. A
     * session without a plan gives back its slot and settles as FAILED; a planned one already
     * went on to exec. Exec is woken either way: the processor publishes this sequence after us.
     */
    void failEvent(RequestEvent event, Throwable ex) {
        Session s = event.session;
        try {
            if (slotHeldWithoutPlan) {
                releaseSlot();
            }
            if (s != null && s.plan == null && !s.settledBeforeExec) {
                s.failure = Outcome.failed(
                        Outcome.ErrorType.INTERNAL, StageExceptionHandler.describe("planning", ex), Usage.NONE);
                settleEarly(s);
            }
        } finally {
            wakeExec.run();
        }
    }
}
