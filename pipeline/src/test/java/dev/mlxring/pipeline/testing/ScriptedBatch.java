package dev.mlxring.pipeline.testing;

import dev.mlxring.pipeline.BatchStep;
import dev.mlxring.pipeline.ExecutionBatch;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.Outcome;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.Usage;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntSupplier;

/**
 * The batch {@link ScriptedExecutor#openBatch} offers, with its runs' row semantics: each row runs
 * the executor's {@code prefillChunks} units of prefill, then commits its script's ids, one per
 * unit; it finishes with "length" in the unit that commits its max_tokens-th token, else with
 * "stop" in the unit after its script's last id; the executor's opt-in failures
 * and refusals apply to rows as to runs. Plans with a KV scheme are not accepted. Records the most rows
 * it held at once, its units, and its events ("insert:id", "remove:id", "finish:id", "fail:id") in
 * the executor's log. Called on the exec thread only; the test reads the counters and sets the
 * volatile knobs.
 */
public final class ScriptedBatch implements ExecutionBatch {
    private final ScriptedExecutor exec;
    private final int maxRows;
    private final LinkedHashMap<Integer, Row> rows = new LinkedHashMap<>();
    private int nextRow;

    /** The most rows held at once. */
    public final AtomicInteger mostRows = new AtomicInteger();
    /** Units run, all steps together. */
    public final AtomicInteger units = new AtomicInteger();
    /** Per unit in order: 'P' read a chunk, 'D' decode-only, '-' neither (nothing to read). */
    public final StringBuffer unitKinds = new StringBuffer();
    /** A unit run while this many rows are in flight throws. 0 = never. */
    public volatile int failWhenRows;
    /** While set, each unit waits on it. */
    public volatile CountDownLatch unitGate;
    /** Offers decode-only units, as exec-stage's mechanics do, when set. */
    public volatile boolean decodeOnlyUnits;
    /** A unit that reads a prefill chunk takes this long: the chunk's cost. */
    public volatile int prefillUnitMillis;
    /** Every unit takes at least this long: the generating rows' step. */
    public volatile int unitMillis;
    /** Per request id: how many units had run when its row was inserted (an index into {@link #unitKinds}). */
    public final Map<String, Integer> insertedAtUnit = new ConcurrentHashMap<>();
    /** Whether the engine closed this batch. */
    public volatile boolean closed;
    /** Tokens its units produced, all rows together. */
    public final AtomicInteger tokensOut = new AtomicInteger();
    /** Calls of {@link #submitHeldStep}. */
    public final AtomicInteger heldSubmits = new AtomicInteger();
    /**
     * Calls of {@link #submitHeldStep} made before the tokens produced so far were visible
     * ({@link ScriptedExecutor#visibleTokens} did not reach them within 5 s).
     */
    public final AtomicInteger submitsBeforeTokens = new AtomicInteger();

    ScriptedBatch(ScriptedExecutor exec, int maxRows) {
        this.exec = exec;
        this.maxRows = maxRows;
    }

    /** One row's plan, script and progress. */
    private static final class Row {
        final ExecutionPlan plan;
        /** The script, null for counting ({@link ScriptedExecutor#idAt}). */
        final int[] ids;

        int prefillLeft;
        int produced;

        Row(ExecutionPlan plan, int[] ids, int prefillLeft) {
            this.plan = plan;
            this.ids = ids;
            this.prefillLeft = prefillLeft;
        }

        Usage usage() {
            return new Usage(plan.prompt().length(), produced, 0);
        }
    }

    @Override
    public boolean accepts(ExecutionPlan plan) {
        return plan.kvScheme() == null;
    }

    @Override
    public int insert(ExecutionPlan plan) throws RequestException {
        exec.refuseIfScripted(plan);
        if (rows.size() == maxRows) {
            throw new IllegalStateException("more rows than the cap " + maxRows);
        }
        int row = nextRow++;
        rows.put(row, new Row(plan, exec.script(plan), exec.prefillChunks));
        insertedAtUnit.put(plan.requestId(), unitKinds.length());
        mostRows.accumulateAndGet(rows.size(), Math::max);
        exec.events.add("insert:" + plan.requestId());
        return row;
    }

    @Override
    public int cachedTokens(int row) {
        Row r = rows.get(row);
        return r == null ? 0 : exec.cachedTokens(r.plan);
    }

    @Override
    public Usage remove(int row) {
        Row r = rows.remove(row);
        exec.events.add("remove:" + r.plan.requestId());
        return r.usage();
    }

    @Override
    public boolean decodeOnlyUseful() {
        boolean generating = false;
        boolean prefilling = false;
        for (Row r : rows.values()) {
            generating |= r.prefillLeft == 0;
            prefilling |= r.prefillLeft > 0;
        }
        return decodeOnlyUnits && generating && prefilling;
    }

    @Override
    public int generatingRows() {
        return (int) rows.values().stream().filter(r -> r.prefillLeft == 0).count();
    }

    @Override
    public boolean prefillPending() {
        return rows.values().stream().anyMatch(r -> r.prefillLeft > 0);
    }

    @Override
    public void step(BatchStep out) {
        step(out, true);
    }

    @Override
    public void step(BatchStep out, boolean prefill) {
        out.clear();
        if (!decodeOnlyUnits && !prefill) {
            throw new IllegalStateException("a decode-only unit was asked of mechanics that offer none");
        }
        boolean readsChunk = prefill && prefillPending();
        unitKinds.append(!prefill ? 'D' : readsChunk ? 'P' : '-');
        if (readsChunk) {
            ScriptedExecutor.sleep(prefillUnitMillis);
        }
        ScriptedExecutor.sleep(unitMillis);
        ScriptedExecutor.await(unitGate);
        units.incrementAndGet();
        if (failWhenRows > 0 && rows.size() == failWhenRows) {
            throw new IllegalStateException("unit failed");
        }
        for (var it = rows.entrySet().iterator(); it.hasNext(); ) {
            var e = it.next();
            Row r = e.getValue();
            if (r.prefillLeft > 0) {
                if (prefill) {
                    r.prefillLeft--;
                }
                continue;
            }
            if (exec.failsNow(r.plan, r.produced)) {
                out.fail(e.getKey(), Outcome.ErrorType.INVALID_REQUEST, ScriptedExecutor.DRY, r.usage());
                exec.events.add("fail:" + r.plan.requestId());
                it.remove();
                continue;
            }
            String end = "stop";
            if (ScriptedExecutor.hasIdAt(r.ids, r.produced)) {
                int id = ScriptedExecutor.idAt(r.ids, r.produced++);
                exec.logprobs(r.plan, id, out.add(e.getKey()).token(id));
                tokensOut.incrementAndGet();
                end = r.produced == r.plan.maxTokens() ? "length" : null;
            }
            if (end != null) {
                out.finish(e.getKey(), end, r.usage());
                exec.events.add("finish:" + r.plan.requestId());
                it.remove();
            }
        }
    }

    /** Counts the call and, while {@link ScriptedExecutor#visibleTokens} is set, waits for it (see there). */
    @Override
    public void submitHeldStep() {
        heldSubmits.incrementAndGet();
        IntSupplier visible = exec.visibleTokens;
        if (visible == null) {
            return;
        }
        int produced = tokensOut.get();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (visible.getAsInt() < produced) {
            if (System.nanoTime() > deadline) {
                submitsBeforeTokens.incrementAndGet();
                return;
            }
            ScriptedExecutor.sleep(1);
        }
    }

    /** One byte per position per row: budgets in tests read as positions. */
    @Override
    public long projectedKvBytes(int rowCount, int positions) {
        return (long) rowCount * positions;
    }

    @Override
    public int rows() {
        return rows.size();
    }

    @Override
    public void close() {
        closed = true;
        rows.clear();
    }
}
