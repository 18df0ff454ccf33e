package dev.mlxring.pipeline;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The handle of one completion attempt. Any thread may {@link #cancel}, {@link #release} credits,
 * read the {@link #state()} and wait on {@link #result()}; the stage threads own the rest.
 *
 * <p>Concurrency contract: the lifecycle moves forward only (CAS on {@link #state}); the terminal
 * transition happens exactly once, on the sink thread, after the last span was delivered, so
 * {@link #result()} completes once on every path. Fields written by a stage before it publishes
 * the ring event are visible to the next stage through the Disruptor's sequence barriers.
 */
public final class Session {
    private final String id;
    private final GenerationRequest request;
    private final GenerationListener listener;
    private final AtomicReference<Lifecycle> state = new AtomicReference<>(Lifecycle.CREATED);
    private final AtomicInteger credits;
    /** Unparks the exec thread, which parks while it has nothing to run (see ExecLoop#idle). */
    private final Runnable wakeExec;

    private final CompletableFuture<Outcome> result = new CompletableFuture<>();
    private final long createdNs = System.nanoTime();
    /** When the session first reached each {@link Stage} (by ordinal), 0 before; each written by that stage's thread. */
    private final long[] stageNs = new long[STAGES];

    private volatile boolean cancelRequested;
    private volatile String cancelReason;
    /** Set by the sink when a stop string matched: the exec loop ends the run at its next safe point. */
    private volatile boolean stopRequested;
    /** Prompt tokens read from the prefix cache: written by exec as the run starts, before any token. */
    private volatile int cachedPromptTokens;

    // Written by prep/plan threads before the event moves on (ordered by the ring's barriers).
    PreparedPrompt prepared;
    ExecutionPlan plan;
    Outcome failure;
    /** Set by plan when it settled the session itself (a prep/plan failure); exec skips it. */
    boolean settledBeforeExec;

    // Exec thread only.
    /** Whether exec handed the plan to the executor (open or insert), which then owns its constraint. */
    boolean planHandedOff;
    /** This session's row in the batch running it (the shared batch or a solo one), -1 when none. */
    int batchRow = -1;

    long pausedSinceNs;

    // Sink thread only.
    TextSink textSink;
    long spanSequence;
    boolean sinkStopped;
    String listenerFailure;
    /** Set when this session's text sink threw: the session ends FAILED with this message. */
    String sinkFailure;
    /** The type the session fails with when {@link #sinkFailure} is set ({@link TextSinkFailure#type()}). */
    Outcome.ErrorType sinkFailureType = Outcome.ErrorType.INTERNAL;
    /** Whether the sink gave back this session's admission slot (exactly once). */
    boolean admissionReleased;

    int deliveredTokens;

    /**
     * Closes the plan's token constraint unless the executor took it over (exec thread, once the
     * session is settled): a session cancelled, refused or abandoned before its run or row opened
     * still releases what plan built for it.
     */
    void closeUnclaimedConstraint() {
        ExecutionPlan p = plan;
        if (planHandedOff || p == null || p.constraint() == null) {
            return;
        }
        planHandedOff = true;
        try {
            p.constraint().close();
        } catch (RuntimeException e) {
            System.getLogger("dev.mlxring.pipeline")
                    .log(System.Logger.Level.WARNING, "closing the token constraint of session " + id + " failed", e);
        }
    }

    /**
     * The points of a session's way through the stages whose times {@link #stageNs} gives, in
     * pipeline order: prep takes it from the request ring ({@link #PREP}), plan takes it from prep
     * ({@link #PLAN}), exec starts its run or batch row ({@link #EXEC}), exec publishes its first
     * token to the token ring ({@link #FIRST_TOKEN}), the sink takes that token ({@link #SINK}).
     */
    public enum Stage {
        PREP,
        PLAN,
        EXEC,
        FIRST_TOKEN,
        SINK
    }

    private static final int STAGES = Stage.values().length;

    /**
     * When this session first reached {@code stage} ({@link System#nanoTime()}, as
     * {@link #createdNs()}), or 0 if it has not. Read it once the session settled (in
     * {@link GenerationListener#onComplete} or after {@link #result()} completes): each stage writes
     * its time before handing the session on, and the hand-offs order those writes before the
     * settle.
     */
    public long stageNs(Stage stage) {
        return stageNs[stage.ordinal()];
    }

    /** Records that the calling stage has reached {@code stage} now, unless it was recorded already. */
    void stamp(Stage stage) {
        stamp(stage, System.nanoTime());
    }

    /** Records that the calling stage reached {@code stage} at {@code nowNs}, unless it was recorded already. */
    void stamp(Stage stage, long nowNs) {
        if (stageNs[stage.ordinal()] == 0) {
            stageNs[stage.ordinal()] = nowNs;
        }
    }

    Session(String id, GenerationRequest request, GenerationListener listener, int credits, Runnable wakeExec) {
        this.id = id;
        this.request = request;
        this.listener = listener;
        this.credits = new AtomicInteger(credits);
        this.wakeExec = wakeExec;
    }

    public String id() {
        return id;
    }

    public GenerationRequest request() {
        return request;
    }

    GenerationListener listener() {
        return listener;
    }

    /**
     * The prompt's token count once prep has run (0 before). Readable from the sink thread's
     * callbacks: prep writes it before the request moves on through the rings.
     */
    public int promptTokens() {
        PreparedPrompt p = prepared;
        return p == null ? 0 : p.length();
    }

    /**
     * The prompt tokens this session's run read from the prefix cache (0 before exec started it,
     * or with no cache hit). Readable from the sink thread's callbacks: exec writes it before it
     * publishes the session's first token.
     */
    public int cachedPromptTokens() {
        return cachedPromptTokens;
    }

    void cachedPromptTokens(int tokens) {
        cachedPromptTokens = tokens;
    }

    public Lifecycle state() {
        return state.get();
    }

    public long createdNs() {
        return createdNs;
    }

    /** Completes once with the terminal outcome, on every path. */
    public CompletableFuture<Outcome> result() {
        return result;
    }

    /**
     * Asks the engine to stop this session at its next safe point (between prefill chunks and
     * decode steps, or before it starts). Idempotent; a no-op once terminal.
     */
    public void cancel(String reason) {
        if (!cancelRequested) {
            cancelReason = reason;
            cancelRequested = true;
            // Written before the wake: a parked exec thread sees the request when it runs.
            wakeExec.run();
        }
    }

    public boolean isCancelRequested() {
        return cancelRequested;
    }

    String cancelReason() {
        return cancelReason == null ? "cancelled" : cancelReason;
    }

    /** Returns delivery credits taken by spans the consumer has now finished with. */
    public void release(int spans) {
        if (spans < 0) {
            throw new IllegalArgumentException("release takes the number of spans handled, >= 0; got " + spans);
        }
        if (credits.getAndAdd(spans) <= 0) {
            // The session may be paused for want of credits, with exec parked: resume it. Other
            // releases need no wake (exec is running this session or another one).
            wakeExec.run();
        }
    }

    /** Sink thread: a stop string matched; exec ends the run at its next safe point. */
    void requestStop() {
        stopRequested = true;
        wakeExec.run();
    }

    boolean isStopRequested() {
        return stopRequested;
    }

    int credits() {
        return credits.get();
    }

    void takeCredit() {
        credits.decrementAndGet();
    }

    /** Moves forward to {@code next} unless already terminal; returns whether it moved. */
    boolean advanceTo(Lifecycle next) {
        while (true) {
            Lifecycle cur = state.get();
            if (cur.isTerminal() || cur.ordinal() >= next.ordinal() && !next.isTerminal()) {
                return false;
            }
            if (state.compareAndSet(cur, next)) {
                return true;
            }
        }
    }

    /** The single terminal transition. */
    boolean settle(Outcome outcome) {
        if (!advanceTo(outcome.state())) {
            return false;
        }
        result.complete(outcome);
        return true;
    }
}
