package dev.mlxring.pipeline.testing;

import dev.mlxring.pipeline.ExecutionBatch;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.ExecutionRun;
import dev.mlxring.pipeline.Executor;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.StepResult;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.IntSupplier;

/**
 * exec's stage double (no model): deterministic, observable, paced on demand.
 *
 * <p>A run prefills in {@link #prefillChunks} units, then commits the ids its {@code script} gives
 * for the plan, one per {@code advance()}; it finishes with "length" at the plan's max_tokens, else
 * with "stop" (EOS) after the last id. Opt-in failures, by the plan's max_tokens: a plan of
 * {@link #failingMaxTokens} fails alone after its second token with {@link #DRY} (as a run whose
 * token constraint ran dry); a plan of {@link #refusedMaxTokens} is refused when its run opens or
 * its row is inserted. When the plan asks for logprobs, each token has logprob {@value #LOGPROB}
 * and itself as the one top alternative, or with {@link #alternatives()} the plan's
 * {@code topLogprobs} alternatives. Every run reports {@link #cachedTokens} (capped at its prompt)
 * as read from the prefix cache.
 *
 * <p>With {@link #batching} on, {@link #openBatch} offers a {@link ScriptedBatch} whose rows follow
 * the same script; off, the engine runs the serial loop. The fields are set by a test before or
 * while the engine runs and read on the exec thread, hence volatile; the counters and the event log
 * are written on the exec thread and read by the test.
 */
public final class ScriptedExecutor implements Executor {
    /** The failure a run or row of {@link #failingMaxTokens} reports. */
    public static final String DRY = "scripted constraint can no longer be satisfied";

    /** The logprob of every scripted token and of its one alternative. */
    public static final float LOGPROB = -0.5f;

    /** The ids per plan; null for 1, 2, 3, ... without end (the run ends at max_tokens). */
    private final Function<ExecutionPlan, int[]> script;

    private final boolean alternatives;

    /** Runs opened, all runs together. */
    public final AtomicInteger openRuns = new AtomicInteger();
    /** Runs closed, all runs together. */
    public final AtomicInteger closedRuns = new AtomicInteger();
    /** Tokens produced by serial runs, all runs together. */
    public final AtomicInteger producedTokens = new AtomicInteger();
    /** Batches {@link #openBatch} offered. */
    public final AtomicInteger batchesOpened = new AtomicInteger();
    /** Exec-thread events in order: "open:id", "close:id" (serial runs) and the batch's own. */
    public final ConcurrentLinkedQueue<String> events = new ConcurrentLinkedQueue<>();
    /** What every run and batch row reports as read from the prefix cache, capped at its prompt. */
    public volatile int cachedTokens;
    /**
     * Each {@code advance()} of a serial run first sleeps this long on the exec thread (0: never), so
     * that requests stay running while a test acts.
     */
    public volatile long stepSleepMs;
    /**
     * A run or row whose plan has this max_tokens fails alone after its second token
     * ({@link StepResult.Kind#FAILED}, {@link #DRY}); 0: none.
     */
    public volatile int failingMaxTokens;
    /** A plan of this max_tokens is refused (a request error) when its run opens or row is inserted; 0: none. */
    public volatile int refusedMaxTokens;
    /** Prefill units a run or row takes before its first token; read when it opens. */
    public volatile int prefillChunks = 1;
    /** While set, every decode step of a serial run waits on it first. */
    public volatile CountDownLatch decodeGate;
    /** Counted down by a serial run's decode step as it starts waiting on {@link #decodeGate}. */
    public volatile CountDownLatch decodeGateReached;
    /**
     * While set, a batch's {@link ScriptedBatch#submitHeldStep} waits (up to 5 s) until this
     * counts every token its units produced so far (the test's view of what reached the session).
     */
    public volatile IntSupplier visibleTokens;
    /** Whether {@link #openBatch} offers a {@link ScriptedBatch}; off = the serial loop. */
    public volatile boolean batching;
    /** The batch {@link #openBatch} offered last, null before. */
    public volatile ScriptedBatch batch;
    /** The thread that opened the last run. */
    public volatile Thread thread;
    /** Whether the engine closed this executor. */
    public volatile boolean closed;

    /**
     * @param script the ids a plan's run commits, in order (not null; {@link #counting()} counts)
     * @param stepSleepMs the initial {@link #stepSleepMs}
     */
    public ScriptedExecutor(Function<ExecutionPlan, int[]> script, long stepSleepMs) {
        this(Objects.requireNonNull(script, "script"), stepSleepMs, false);
    }

    /** Commits the ids {@code script} gives, unpaced. */
    public ScriptedExecutor(Function<ExecutionPlan, int[]> script) {
        this(script, 0);
    }

    private ScriptedExecutor(Function<ExecutionPlan, int[]> script, long stepSleepMs, boolean alternatives) {
        this.script = script;
        this.stepSleepMs = stepSleepMs;
        this.alternatives = alternatives;
    }

    /** Ids 1..max_tokens, unpaced: every run ends with "length". */
    public static ScriptedExecutor counting() {
        return new ScriptedExecutor(null, 0, false);
    }

    /**
     * As {@link #counting()}, with each token {@code id} carrying the plan's {@code topLogprobs}
     * alternatives {@code 100 * id + k} of logprob {@code -(topLogprobs - k)}: listed least likely
     * first.
     */
    public static ScriptedExecutor alternatives() {
        return new ScriptedExecutor(null, 0, true);
    }

    /** The ids {@code plan}'s run or row commits, null for 1, 2, 3, ... up to its max_tokens. */
    int[] script(ExecutionPlan plan) {
        return script == null ? null : script.apply(plan);
    }

    /** The id a run or row of script {@code ids} commits at {@code index}, as {@link #script} says. */
    static int idAt(int[] ids, int index) {
        return ids == null ? index + 1 : ids[index];
    }

    /** Whether script {@code ids} has an id at {@code index}. */
    static boolean hasIdAt(int[] ids, int index) {
        return ids == null || index < ids.length;
    }

    /** What a run or row of {@code plan} reports as read from the prefix cache. */
    int cachedTokens(ExecutionPlan plan) {
        return Math.min(cachedTokens, plan.prompt().length());
    }

    @Override
    public ExecutionBatch openBatch(int maxRows, int maxPrefillRows) {
        if (!batching) {
            return null;
        }
        batchesOpened.incrementAndGet();
        ScriptedBatch b = new ScriptedBatch(this, maxRows);
        batch = b;
        return b;
    }

    /** Throws the request error that refuses {@code plan} when its max_tokens is {@link #refusedMaxTokens}. */
    void refuseIfScripted(ExecutionPlan plan) throws RequestException {
        int refused = refusedMaxTokens;
        if (refused > 0 && plan.maxTokens() == refused) {
            throw new RequestException(Outcome.ErrorType.INVALID_REQUEST, "max_tokens " + refused + " is refused");
        }
    }

    /** Whether a run or row of {@code plan} that committed {@code produced} tokens fails now. */
    boolean failsNow(ExecutionPlan plan, int produced) {
        int failing = failingMaxTokens;
        return produced == 2 && failing > 0 && plan.maxTokens() == failing;
    }

    @Override
    public ExecutionRun open(ExecutionPlan plan) throws RequestException {
        refuseIfScripted(plan);
        thread = Thread.currentThread();
        openRuns.incrementAndGet();
        events.add("open:" + plan.requestId());
        return new Run(plan, script(plan), prefillChunks);
    }

    @Override
    public void close() {
        closed = true;
    }

    /** Writes token {@code id}'s logprobs into {@code r} when {@code plan} asks for them. */
    void logprobs(ExecutionPlan plan, int id, StepResult r) {
        if (!plan.logprobs()) {
            return;
        }
        r.logprob = LOGPROB;
        if (alternatives) {
            r.topCount = plan.topLogprobs();
            for (int k = 0; k < r.topCount; k++) {
                r.topIds[k] = 100 * id + k;
                r.topLogprobs[k] = -(r.topCount - k);
            }
            return;
        }
        r.topCount = 1;
        r.topIds[0] = id;
        r.topLogprobs[0] = LOGPROB;
    }

    /** Waits on {@code gate} when set, keeping an interrupt for the caller. */
    static void await(CountDownLatch gate) {
        if (gate == null) {
            return;
        }
        try {
            gate.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Sleeps {@code millis} (none at 0), keeping an interrupt for the caller. */
    static void sleep(long millis) {
        if (millis <= 0) {
            return;
        }
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private final class Run implements ExecutionRun {
        private final ExecutionPlan plan;
        private final int[] ids;
        private final int prefillUnits;
        private final StepResult r;
        private int prefilled;
        private int produced;

        Run(ExecutionPlan plan, int[] ids, int prefillUnits) {
            this.plan = plan;
            this.ids = ids;
            this.prefillUnits = prefillUnits;
            this.r = new StepResult(Math.max(1, plan.topLogprobs()));
        }

        @Override
        public StepResult advance() {
            sleep(stepSleepMs);
            if (prefilled < prefillUnits) {
                prefilled++;
                return r.prefilled();
            }
            CountDownLatch gate = decodeGate;
            CountDownLatch reached = decodeGateReached;
            if (gate != null && reached != null) {
                reached.countDown();
            }
            await(gate);
            if (produced == plan.maxTokens()) {
                return r.finished("length");
            }
            if (!hasIdAt(ids, produced)) {
                return r.finished("stop");
            }
            if (failsNow(plan, produced)) {
                return r.failed(Outcome.ErrorType.INVALID_REQUEST, DRY);
            }
            producedTokens.incrementAndGet();
            int id = idAt(ids, produced++);
            r.token(id);
            logprobs(plan, id, r);
            return r;
        }

        @Override
        public int promptTokens() {
            return plan.prompt().length();
        }

        @Override
        public int completionTokens() {
            return produced;
        }

        @Override
        public int cachedTokens() {
            return ScriptedExecutor.this.cachedTokens(plan);
        }

        @Override
        public void close() {
            closedRuns.incrementAndGet();
            events.add("close:" + plan.requestId());
        }
    }
}
