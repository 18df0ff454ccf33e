package dev.mlxring.pipeline;

import java.util.ArrayDeque;
import java.util.function.Supplier;
import org.agrona.collections.Int2ObjectHashMap;

/**
 * Continuous-batching policy on the exec thread: which queued sessions become rows of the
 * running batch and when, and what happens to a row between units. It imports no cache, tensor
 * or MLX class; the mechanics are behind {@link ExecutionBatch}.
 *
 * <p>Policy, in order, at every safe point (between two {@link ExecutionBatch#step} units):
 * <ol>
 *   <li>Rows whose session was cancelled or matched a stop string leave the batch now
 *       ({@code remove}); the others go on unchanged.</li>
 *   <li>Admission is first come, first served: queued sessions join while fewer than
 *       {@code decodeConcurrency} rows are in flight and, with {@code --kv-budget}, while the
 *       batch's projected KV bytes (every row at its longest, prompt + max tokens) stay within the
 *       budget; a session that alone would exceed it fails with a message naming the limit. A
 *       session the batch cannot run
 *       ({@link ExecutionBatch#accepts} false) stops admission until the batch is empty; the loop
 *       then runs it alone (mlx_lm.server's drain), so nothing overtakes it.</li>
 *   <li>A row whose consumer holds no credits holds the whole batch (a batch steps all its rows
 *       or none), for at most the idle-consumer timeout, after which that row is cancelled and
 *       the others go on. So nothing is buffered without bound and a stalled client costs the
 *       others at most that timeout once.</li>
 *   <li>A unit runs only when the token ring has room for everything it may publish (a token and
 *       a terminal event per row), so committed tokens are never held back inside exec.</li>
 *   <li>Prefill takes at most {@link EngineConfig#prefillShare()} of exec's time while rows are
 *       generating and no more rows wait than generate: every unit that reads a prompt chunk
 *       earns the generating rows {@code (1 - share) / share} of its prefill time in decode-only units
 *       ({@link ExecutionBatch#step(BatchStep, boolean)}), which run before the next chunk; while
 *       fewer rows generate than wait for their first token, that is scaled by generating ÷
 *       waiting rows (each waiting row weighs as much as a generating one, so a burst that finds
 *       one row generating is not held back for that row's full repayment). Its
 *       prefill time is the unit's time less the generating rows' own step in it, taken as the
 *       median of the last five units that read no chunk (the generating rows got their step in the reading unit
 *       too, so only what the chunk added is owed: a short joiner's read, about one step of the
 *       running rows, no longer makes the next joiner wait a step's worth of decode-only units); every
 *       unit that reads no chunk (a full unit that found nothing to read included) pays them off
 *       with its own time, so a read already repaid never holds a later arrival back (up to
 *       one chunk's worth is kept from units run while nothing generated, so a row that starts
 *       right after a long chunk catches up first). So a long prompt slows the running rows to
 *       about half speed at the default share instead of one token per chunk. With share 1 every
 *       unit may read a chunk (mlx-lm's {@code BatchGenerator}).</li>
 * </ol>
 * A unit that fails fails every row in it (their device state is shared) and the batch is
 * replaced; a row that fails to start (its plan refused) fails alone.
 *
 * <p>Exec thread only. Per token it allocates nothing: rows live in a fixed array and a
 * primitive-keyed map, and the step's entries in one reused {@link BatchStep}.
 */
final class BatchScheduler {
    private static final System.Logger LOG = System.getLogger(BatchScheduler.class.getName());

    /** Opens a fresh batch (at start and after a unit failed). */
    private final Supplier<ExecutionBatch> opener;
    /** Whether this is the capacity-one scheduler over {@link SoloBatch} (its units count as SOLO). */
    private final boolean solo;

    private final TokenPublisher out;
    private final EngineConfig config;
    private final Session[] rows;
    /** Each row's longest length, prompt + max tokens (parallel to {@link #rows}): what --kv-budget projects. */
    private final int[] positions;

    private int count;
    private final Int2ObjectHashMap<Session> byRow;
    private final BatchStep unit;
    private final ExecActivity activity;
    private ExecutionBatch batch;
    /**
     * Prefill time not yet repaid to the generating rows: each unit that read a chunk adds its
     * prefill time (its time less {@link #stepNs()}); each unit that read none (decode-only, or a
     * full unit with nothing to read) repays its own time divided by the decode time then owed per
     * unit of prefill time ({@link #decodePerPrefill()}). It is capped at the longest prefill
     * time, so a prompt read while nothing generated buys a row that starts generating right after
     * it at most one chunk's worth of catching up.
     */
    private long unrepaidPrefillNs;
    /** The longest prefill time of a unit that read a chunk so far (the cap's measure). */
    private long longestPrefillUnitNs;
    /**
     * The last {@value #STEPS_KEPT} units that read no chunk, newest at {@code stepsSeen %}
     * {@value #STEPS_KEPT}: their median is what the generating rows' own step costs, taken off a
     * reading unit's time to leave its prefill time. The median, because single units mislead both
     * ways: one stretched by a preempted thread or a finishing row, and the few-ms unit after a
     * join or a finish whose step the unit before had already computed (mlx-lm's pipelined step).
     */
    private final long[] recentStepsNs = new long[STEPS_KEPT];
    /** Units that read no chunk since the batch last emptied (how much of {@link #recentStepsNs} is filled). */
    private int stepsSeen;

    private static final int STEPS_KEPT = 5;

    /** Opens the executor's batch; null when it offers none (sessions then run alone, {@link #solo}). */
    static BatchScheduler open(Executor executor, TokenPublisher out, EngineConfig config, ExecActivity activity) {
        if (config.decodeConcurrency() <= 1) {
            return null;
        }
        Supplier<ExecutionBatch> opener = () ->
                executor.openBatch(config.decodeConcurrency(), config.promptConcurrency(), config.shortPromptsFirst());
        ExecutionBatch batch = opener.get();
        return batch == null
                ? null
                : new BatchScheduler(opener, batch, config.decodeConcurrency(), false, out, config, activity);
    }

    /**
     * The same policy over a {@link SoloBatch}: one session at a time through {@link Executor#open},
     * for executors without a batch, {@code decodeConcurrency} 1, and sessions a batch cannot run.
     */
    static BatchScheduler solo(Executor executor, TokenPublisher out, EngineConfig config, ExecActivity activity) {
        Supplier<ExecutionBatch> opener = () -> new SoloBatch(executor);
        return new BatchScheduler(opener, opener.get(), 1, true, out, config, activity);
    }

    private BatchScheduler(
            Supplier<ExecutionBatch> opener,
            ExecutionBatch batch,
            int capacity,
            boolean solo,
            TokenPublisher out,
            EngineConfig config,
            ExecActivity activity) {
        this.opener = opener;
        this.solo = solo;
        this.activity = activity;
        this.batch = batch;
        this.out = out;
        this.config = config;
        this.rows = new Session[capacity];
        this.positions = new int[rows.length];
        this.byRow = new Int2ObjectHashMap<>(2 * rows.length, 0.65f);
        this.unit = new BatchStep(rows.length, config.maxTopLogprobs());
    }

    /** Rows in flight. */
    int size() {
        return count;
    }

    /** False once a failed batch could not be replaced: the loop then runs every session alone. */
    boolean available() {
        return batch != null;
    }

    /**
     * Admits queued sessions in order while there is room; stops at the first one the batch cannot
     * run (it waits at the head of the queue for the batch to empty). Returns whether anything happened.
     */
    boolean admit(ArrayDeque<Session> queue) {
        boolean worked = false;
        while (count < rows.length && batch != null) {
            Session s = queue.peek();
            if (s != null && s.state().isTerminal()) {
                queue.poll(); // settled while queued (Engine.abandonInFlight): nothing to run
                worked = true;
                continue;
            }
            if (s == null || !s.isCancelRequested() && !batch.accepts(s.plan)) {
                return worked;
            }
            if (!out.hasRoom(1)) {
                // Room for the terminal event a refused or cancelled session would need.
                return worked;
            }
            int longest = s.isCancelRequested() ? 0 : s.plan.prompt().length() + s.plan.maxTokens();
            long budget = config.kvBudgetBytes();
            long projected = budget == 0 || longest == 0
                    ? 0
                    : batch.projectedKvBytes(count + 1, Math.max(longest, longestInFlight()));
            if (projected > budget && count > 0) {
                return worked; // held back until rows leave; nothing overtakes it
            }
            queue.poll();
            worked = true;
            if (s.isCancelRequested()) {
                out.publishTerminal(s, Outcome.cancelled(s.cancelReason(), Usage.NONE));
                continue;
            }
            if (projected > budget) {
                out.publishTerminal(
                        s,
                        Outcome.failed(
                                Outcome.ErrorType.INVALID_REQUEST,
                                "this request needs up to "
                                        + projected + " bytes of KV cache (prompt "
                                        + s.plan.prompt().length() + " + max_tokens "
                                        + s.plan.maxTokens() + " positions), more than the server's --kv-budget of "
                                        + budget
                                        + " bytes; lower max_tokens or shorten the prompt",
                                Usage.NONE));
                continue;
            }
            s.advanceTo(Lifecycle.RUNNING);
            s.stamp(Session.Stage.EXEC);
            int row;
            try {
                s.planHandedOff = true;
                row = batch.insert(s.plan);
            } catch (RequestException e) {
                out.publishTerminal(s, Outcome.failed(e.type(), e.getMessage(), Usage.NONE));
                continue;
            } catch (RuntimeException | Error e) {
                // An Error too (a broken invariant in the executor): the session fails alone and
                // the exec thread goes on, as for a unit that throws.
                LOG.log(System.Logger.Level.ERROR, "a session could not start; failing it", e);
                out.publishTerminal(
                        s, Outcome.failed(Outcome.ErrorType.INTERNAL, "could not start generation: " + e, Usage.NONE));
                continue;
            }
            s.batchRow = row;
            s.cachedPromptTokens(batch.cachedTokens(row));
            s.pausedSinceNs = 0;
            positions[count] = longest;
            rows[count++] = s;
            byRow.put(row, s);
        }
        return worked;
    }

    /** One safe point and, when every row may go on, one unit; returns whether anything happened. */
    boolean step() {
        boolean worked = settleRequests();
        if (count == 0) {
            return worked;
        }
        int before = count;
        boolean hold = holdForCredits();
        worked |= count != before;
        if (hold || count == 0) {
            return worked;
        }
        if (!out.hasRoom(2 * count)) {
            return worked;
        }
        boolean prefill = prefillThisUnit();
        boolean readsPrompts = prefill && batch.prefillPending();
        double decodePerPrefill = decodePerPrefill();
        long startNs = System.nanoTime();
        activity.begin(
                solo ? ExecActivity.Unit.SOLO : prefill ? ExecActivity.Unit.BATCH : ExecActivity.Unit.BATCH_DECODE_ONLY,
                count,
                startNs);
        try {
            batch.step(unit, prefill);
            // The unit's tokens leave before the forward it may have held back is submitted.
            publishUnit();
            batch.submitHeldStep();
        } catch (Throwable e) {
            LOG.log(System.Logger.Level.ERROR, "a unit failed; failing its " + count + " row(s)", e);
            failAll(StageExceptionHandler.describe("exec", e));
            return true;
        } finally {
            activity.end();
        }
        long tookNs = System.nanoTime() - startNs;
        if (readsPrompts) {
            // The generating rows stepped in this unit too: only the time the chunk added is owed.
            long prefillNs = Math.max(0, tookNs - stepNs());
            longestPrefillUnitNs = Math.max(longestPrefillUnitNs, prefillNs);
            unrepaidPrefillNs = Math.min(unrepaidPrefillNs + prefillNs, longestPrefillUnitNs);
        } else {
            // Any unit that read no prompt gave the generating rows a step: a full unit with nothing
            // to read repays as a decode-only one does, so a read long repaid never holds a later
            // arrival back.
            unrepaidPrefillNs =
                    decodePerPrefill <= 0 ? 0 : Math.max(0, unrepaidPrefillNs - (long) (tookNs / decodePerPrefill));
            recentStepsNs[stepsSeen++ % STEPS_KEPT] = tookNs;
        }
        return true;
    }

    /**
     * Hands the unit's entries to the sink: tokens, and each ended row's terminal. Before the
     * batch submits a forward it held back ({@link ExecutionBatch#submitHeldStep}), so a first token
     * leaves without waiting for the next step's compute.
     */
    private void publishUnit() {
        for (int i = 0; i < unit.count; i++) {
            Session s = byRow.get(unit.rows[i]);
            StepResult r = unit.results[i];
            if (r.kind == StepResult.Kind.TOKEN) {
                s.takeCredit();
                out.publishToken(s, r);
            } else if (r.kind == StepResult.Kind.FINISHED) {
                leave(s);
                out.publishTerminal(s, Outcome.completed(r.finishReason, unit.usages[i]));
            } else if (r.kind == StepResult.Kind.FAILED) {
                leave(s);
                out.publishTerminal(s, Outcome.failed(r.errorType, r.errorMessage, unit.usages[i]));
            }
        }
    }

    /**
     * Whether this unit may read a prompt chunk: always, unless rows are generating while others
     * wait to read and a read is not yet repaid to the generating rows ({@link #unrepaidPrefillNs}).
     */
    private boolean prefillThisUnit() {
        if (config.prefillShare() >= 1 || !batch.decodeOnlyUseful()) {
            return true;
        }
        return unrepaidPrefillNs <= 0;
    }

    /**
     * Decode-only time owed now per unit of prefill time: {@code (1 - share) / share}, scaled by
     * generating ÷ waiting rows while fewer rows generate than wait for their first token. So each
     * waiting row weighs as much as a generating one: a burst of prompts that finds one row
     * generating is read after that row's few steps, not after the share's full repayment made for
     * one row's sake, and prefill's part of exec's time is never below the share.
     */
    private double decodePerPrefill() {
        double share = config.prefillShare();
        double ratio = (1 - share) / share;
        int generating = batch.generatingRows();
        int waiting = count - generating;
        return generating < waiting ? ratio * generating / waiting : ratio;
    }

    /**
     * The generating rows' own step: the median of the last {@value #STEPS_KEPT} units that read
     * no chunk (the lower middle of an even count); 0 when none ran since the batch last emptied
     * (a reading unit is then all prefill).
     */
    private long stepNs() {
        int n = Math.min(stepsSeen, STEPS_KEPT);
        if (n == 0) {
            return 0;
        }
        // Rank each kept unit by how many are shorter (ties by index): no sort, no allocation.
        for (int i = 0; i < n; i++) {
            int below = 0;
            for (int j = 0; j < n; j++) {
                long a = recentStepsNs[j];
                long b = recentStepsNs[i];
                if (a < b || a == b && j < i) {
                    below++;
                }
            }
            if (below == (n - 1) / 2) {
                return recentStepsNs[i];
            }
        }
        throw new IllegalStateException("no median");
    }

    private int longestInFlight() {
        int longest = 0;
        for (int i = 0; i < count; i++) {
            longest = Math.max(longest, positions[i]);
        }
        return longest;
    }

    /** The latest time exec may sleep while a row waits for credits; 0 when none waits. */
    long wakeDeadlineNs() {
        long deadline = 0;
        for (int i = 0; i < count; i++) {
            long since = rows[i].pausedSinceNs;
            if (since != 0) {
                long d = since + config.idleConsumerTimeoutNs();
                deadline = deadline == 0 ? d : Math.min(deadline, d);
            }
        }
        return deadline;
    }

    /** Rows cancelled or asked to stop leave now (each needs one terminal slot). */
    private boolean settleRequests() {
        boolean worked = false;
        for (int i = count - 1; i >= 0; i--) {
            Session s = rows[i];
            boolean cancel = s.isCancelRequested();
            if (!cancel && !s.isStopRequested()) {
                continue;
            }
            if (!out.hasRoom(1)) {
                return worked;
            }
            Usage usage = batch.remove(s.batchRow);
            leave(s);
            out.publishTerminal(
                    s, cancel ? Outcome.cancelled(s.cancelReason(), usage) : Outcome.completed("stop", usage));
            worked = true;
        }
        return worked;
    }

    /**
     * Whether a row without credits holds the batch this time. Rows stalled past the idle-consumer
     * timeout are cancelled instead (then the rest may go on).
     */
    private boolean holdForCredits() {
        boolean hold = false;
        long now = 0;
        for (int i = count - 1; i >= 0; i--) {
            Session s = rows[i];
            if (s.credits() > 0) {
                s.pausedSinceNs = 0;
                continue;
            }
            if (now == 0) {
                now = System.nanoTime();
            }
            if (s.pausedSinceNs == 0) {
                s.pausedSinceNs = now;
                hold = true;
            } else if (now - s.pausedSinceNs > config.idleConsumerTimeoutNs() && out.hasRoom(1)) {
                Usage usage = batch.remove(s.batchRow);
                leave(s);
                out.publishTerminal(
                        s,
                        Outcome.cancelled(
                                "consumer did not read for " + config.idleConsumerTimeoutNs() / 1_000_000 + " ms",
                                usage));
            } else {
                hold = true;
            }
        }
        return hold;
    }

    /** The row is no longer in the batch (finished or removed). */
    private void leave(Session s) {
        byRow.remove(s.batchRow);
        for (int i = 0; i < count; i++) {
            if (rows[i] == s) {
                // Keep admission order: rows are few, and order makes the pause scan deterministic.
                System.arraycopy(rows, i + 1, rows, i, count - i - 1);
                System.arraycopy(positions, i + 1, positions, i, count - i - 1);
                rows[--count] = null;
                break;
            }
        }
        s.batchRow = -1;
        if (count == 0) {
            stepsSeen = 0; // the next rows' step is not these rows'
        }
    }

    /**
     * A unit failed: a fresh batch replaces this one, then every row fails (room was checked), so
     * a client that sees its failure finds the engine ready again.
     */
    private void failAll(String message) {
        try {
            batch.close();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "closing a failed batch failed", e);
        }
        batch = null;
        try {
            batch = opener.get();
            unrepaidPrefillNs = 0;
            longestPrefillUnitNs = 0;
            stepsSeen = 0;
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "could not open a new batch; running serially from now on", e);
        }
        while (count > 0) {
            Session s = rows[0];
            leave(s);
            out.publishTerminal(s, Outcome.failed(Outcome.ErrorType.INTERNAL, message, Usage.NONE));
        }
    }

    /**
     * On shutdown or a fatal failure: every row ends with {@code as} (its usage so far), trying to
     * publish until {@code deadlineNs}; then the batch is closed.
     */
    void drain(Outcome as, long deadlineNs) {
        while (count > 0) {
            Session s = rows[count - 1];
            Usage usage = Usage.NONE;
            try {
                if (batch != null) {
                    usage = batch.remove(s.batchRow);
                }
            } catch (RuntimeException e) {
                // the batch is what failed: settle the row without its usage
            }
            leave(s);
            Outcome o = new Outcome(as.state(), as.finishReason(), as.errorType(), as.message(), usage);
            while (!out.publishTerminal(s, o) && System.nanoTime() < deadlineNs) {
                Thread.onSpinWait();
            }
        }
        close();
    }

    void close() {
        if (batch != null) {
            batch.close();
            batch = null;
        }
    }
}
