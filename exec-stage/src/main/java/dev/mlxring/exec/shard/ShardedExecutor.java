package dev.mlxring.exec.shard;

import dev.mlxring.exec.batch.ContinuousBatch;
import dev.mlxring.pipeline.BatchStep;
import dev.mlxring.pipeline.ExecutionBatch;
import dev.mlxring.pipeline.ExecutionPlan;
import dev.mlxring.pipeline.ExecutionRun;
import dev.mlxring.pipeline.Executor;
import dev.mlxring.pipeline.Outcome.ErrorType;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.StepResult;
import dev.mlxring.pipeline.Usage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Rank 0's {@link Executor} of a tensor-parallel group: the local executor over this rank's part
 * of the model, with every call that changes device state also sent to the other ranks
 * ({@link LeaderChannel}), so each rank runs the same batch op for op: rows inserted and removed,
 * each unit stepped, each serial run opened, advanced and closed, in rank 0's order. The other
 * ranks replay the calls ({@link FollowerLoop}) and meet rank 0 in the collectives of every
 * forward. Calls that only read ({@code accepts}, {@code projectedKvBytes}, {@code rows}) stay local.
 *
 * <p>Each advance and step also carries a digest of what the previous one committed here
 * ({@link StepDigest}: rows, kinds, tokens), which every other rank compares with its own: a rank
 * whose tokens went another way (a kernel that is not deterministic on its device) is caught one
 * unit later instead of feeding the group wrong hidden states.
 *
 * <p>A call that does no collective (open, insert, remove, close) runs locally first and is sent
 * only when it succeeded, so a refused request costs the other ranks nothing; a call that does
 * (advance, step) is sent first. Any failure once a call has been sent leaves the ranks out of
 * step, so it fails the group: the call throws {@link ShardGroupException} with the reason (the
 * rows in flight fail with it) and {@link #unavailableReason()} reports it from then on.
 *
 * <p>A collective that never returns (MLX cannot abort every one) would leave the requests in
 * flight hanging; {@link #onWedged} lets the engine fail them instead.
 *
 * <p>Exec thread only, except {@link #unavailableReason()} and {@link #onWedged} (any thread).
 */
public final class ShardedExecutor implements Executor {
    /** How long after the group failed the exec thread may stay inside a call before it counts as blocked. */
    public static final long WEDGE_GRACE_NS = TimeUnit.SECONDS.toNanos(2);

    private final Executor local;
    private final LeaderChannel channel;
    private int nextRunId;
    private int nextBatchId;
    /** When the exec thread entered the local executor's current call; 0 between calls. */
    private volatile long inCallSinceNs;

    public ShardedExecutor(Executor local, LeaderChannel channel) {
        this.local = local;
        this.channel = channel;
    }

    @Override
    public ExecutionRun open(ExecutionPlan plan) throws RequestException {
        refuseConstraint(plan);
        checkUp();
        ExecutionRun run = inCall(() -> local.open(plan));
        int id = nextRunId++;
        int cached = run.cachedTokens();
        try {
            channel.send(Frame.of(Frame.OPEN_RUN, o -> {
                o.writeInt(id);
                o.writeInt(cached);
                PlanCodec.write(o, plan);
            }));
        } catch (RuntimeException e) {
            run.close();
            throw e;
        }
        return new Run(id, run);
    }

    /**
     * A token constraint is driven on the leader alone, so the followers would sample unmasked:
     * such a plan is refused (its constraint closed) until the mask travels with the steps.
     */
    private static void refuseConstraint(ExecutionPlan plan) throws RequestException {
        if (plan.constraint() != null) {
            plan.constraint().close();
            throw new RequestException(
                    ErrorType.UNSUPPORTED, "token constraints (structured outputs) do not run tensor-parallel yet");
        }
    }

    @Override
    public ExecutionBatch openBatch(int maxRows, int maxPrefillRows) {
        return openBatch(maxRows, maxPrefillRows, false);
    }

    @Override
    public ExecutionBatch openBatch(int maxRows, int maxPrefillRows, boolean shortPromptsFirst) {
        checkUp();
        ExecutionBatch batch = inCall(() -> local.openBatch(maxRows, maxPrefillRows, shortPromptsFirst));
        if (batch == null) {
            return null;
        }
        if (batch instanceof ContinuousBatch c) {
            // Every rank submits each forward at the same call: none is held for a first token.
            c.holdFirstTokenSteps(false);
        }
        int id = nextBatchId++;
        try {
            channel.send(Frame.of(Frame.OPEN_BATCH, o -> {
                o.writeInt(id);
                o.writeInt(maxRows);
                o.writeInt(maxPrefillRows);
                o.writeBoolean(shortPromptsFirst);
            }));
        } catch (RuntimeException e) {
            batch.close();
            throw e;
        }
        return new Batch(id, batch);
    }

    /**
     * Runs {@code action} (with the failure's message) if, {@code graceNs} after the group
     * failed, the exec thread is still inside a call of the local executor: blocked in a
     * collective that MLX cannot abort (a collective already queued when the ring's sockets
     * died waits for ever; NCCL and MPI give no abort at all). The composition root passes
     * {@code Engine::abandonInFlight}, so the requests in flight fail instead of hanging. Once;
     * on a daemon thread.
     */
    public void onWedged(Consumer<String> action, long graceNs) {
        Thread watch = new Thread(
                () -> {
                    String reason;
                    try {
                        reason = channel.failedFuture().get();
                        Thread.sleep(TimeUnit.NANOSECONDS.toMillis(graceNs));
                    } catch (InterruptedException | ExecutionException e) {
                        return;
                    }
                    if (inCallSinceNs != 0) {
                        action.accept(
                                new ShardGroupException(reason + "; rank 0's exec thread is blocked in a collective")
                                        .getMessage());
                    }
                },
                "mlxring-shard-wedge-watch");
        watch.setDaemon(true);
        watch.start();
    }

    /** Why the group cannot run, or null while every rank answers. Any thread. */
    @Override
    public String unavailableReason() {
        String why = channel.failure();
        return why == null ? null : new ShardGroupException(why).getMessage();
    }

    /** Closes the local executor and tells the other ranks to close theirs. Exec thread. */
    @Override
    public void close() {
        try {
            channel.close();
        } finally {
            local.close();
        }
    }

    /** One call into the local executor (which may block in a collective). */
    private interface LocalCall<T, E extends Exception> {
        T run() throws E;
    }

    /** Runs {@code call} with the exec thread marked as inside the local executor (for {@link #onWedged}). */
    private <T, E extends Exception> T inCall(LocalCall<T, E> call) throws E {
        inCallSinceNs = Math.max(1, System.nanoTime());
        try {
            return call.run();
        } finally {
            inCallSinceNs = 0;
        }
    }

    private void checkUp() {
        String why = channel.failure();
        if (why != null) {
            throw new ShardGroupException(why);
        }
    }

    /** A failure after the call was sent: the ranks are out of step, so the group fails. */
    private ShardGroupException groupFailure(RuntimeException e) {
        if (e instanceof ShardGroupException g) {
            return g;
        }
        channel.fail("rank 0's forward failed: " + e.getMessage());
        return new ShardGroupException(channel.failure() != null ? channel.failure() : e.getMessage());
    }

    /** Sends a closing call if the group is still up; a closed or failed group needs none. */
    private void sendQuietly(Frame f) {
        if (channel.failure() == null) {
            try {
                channel.send(f);
            } catch (ShardGroupException e) {
                // the group failed meanwhile; the other ranks are gone
            }
        }
    }

    private static Frame idFrame(byte type, int id) {
        return Frame.of(type, o -> o.writeInt(id));
    }

    private final class Run implements ExecutionRun {
        private final int id;
        private final ExecutionRun run;
        /** What the previous advance committed, for the other ranks to check theirs against. */
        private long digest;

        Run(int id, ExecutionRun run) {
            this.id = id;
            this.run = run;
        }

        @Override
        public StepResult advance() {
            long previous = digest;
            channel.send(Frame.of(Frame.ADVANCE, o -> {
                o.writeInt(id);
                o.writeLong(previous);
            }));
            StepResult r;
            try {
                r = inCall(run::advance);
            } catch (RuntimeException e) {
                throw groupFailure(e);
            }
            digest = StepDigest.of(r);
            return r;
        }

        @Override
        public int promptTokens() {
            return run.promptTokens();
        }

        @Override
        public int completionTokens() {
            return run.completionTokens();
        }

        @Override
        public int cachedTokens() {
            return run.cachedTokens();
        }

        @Override
        public void close() {
            try {
                inCall(() -> {
                    run.close();
                    return null;
                });
            } finally {
                sendQuietly(idFrame(Frame.CLOSE_RUN, id));
            }
        }
    }

    private final class Batch implements ExecutionBatch {
        private final int id;
        private final ExecutionBatch batch;
        /** What the previous unit committed, for the other ranks to check theirs against. */
        private long digest;

        Batch(int id, ExecutionBatch batch) {
            this.id = id;
            this.batch = batch;
        }

        /**
         * As the local batch, except quantized KV plans: the sharded batch has no parity cell
         * over {@code BatchQuantizedKvCache}, so they run alone (the sharded serial path), as before.
         */
        @Override
        public boolean accepts(ExecutionPlan plan) {
            return plan.kvScheme() == null && batch.accepts(plan);
        }

        @Override
        public int insert(ExecutionPlan plan) throws RequestException {
            refuseConstraint(plan);
            checkUp();
            int row = inCall(() -> batch.insert(plan));
            int cached = batch.cachedTokens(row);
            channel.send(Frame.of(Frame.INSERT, o -> {
                o.writeInt(id);
                o.writeInt(row);
                o.writeInt(cached);
                PlanCodec.write(o, plan);
            }));
            return row;
        }

        @Override
        public Usage remove(int row) {
            Usage usage = inCall(() -> batch.remove(row));
            sendQuietly(Frame.of(Frame.REMOVE, o -> {
                o.writeInt(id);
                o.writeInt(row);
            }));
            return usage;
        }

        @Override
        public void step(BatchStep out) {
            step(out, true);
        }

        @Override
        public boolean decodeOnlyUseful() {
            return batch.decodeOnlyUseful();
        }

        @Override
        public boolean prefillPending() {
            return batch.prefillPending();
        }

        @Override
        public int generatingRows() {
            return batch.generatingRows();
        }

        @Override
        public void step(BatchStep out, boolean prefill) {
            long previous = digest;
            channel.send(Frame.of(Frame.STEP, o -> {
                o.writeInt(id);
                o.writeLong(previous);
                o.writeBoolean(prefill);
            }));
            try {
                inCall(() -> {
                    batch.step(out, prefill);
                    return null;
                });
            } catch (RuntimeException e) {
                throw groupFailure(e);
            }
            digest = StepDigest.of(out);
        }

        @Override
        public long projectedKvBytes(int rows, int positions) {
            return batch.projectedKvBytes(rows, positions);
        }

        @Override
        public int rows() {
            return batch.rows();
        }

        @Override
        public int cachedTokens(int row) {
            return batch.cachedTokens(row);
        }

        @Override
        public void close() {
            try {
                inCall(() -> {
                    batch.close();
                    return null;
                });
            } finally {
                sendQuietly(idFrame(Frame.CLOSE_BATCH, id));
            }
        }
    }
}
