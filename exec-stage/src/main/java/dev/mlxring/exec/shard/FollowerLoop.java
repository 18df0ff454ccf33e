package dev.mlxring.exec.shard;

import dev.mlxring.exec.batch.ContinuousBatch;
import dev.mlxring.pipeline.BatchStep;
import dev.mlxring.pipeline.ExecutionBatch;
import dev.mlxring.pipeline.ExecutionRun;
import dev.mlxring.pipeline.Executor;
import dev.mlxring.pipeline.RequestException;
import dev.mlxring.pipeline.SamplingParams;
import java.io.DataInputStream;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;

/**
 * A follower rank's exec: replays rank 0's executor calls ({@link ShardedExecutor}) on this
 * rank's own executor, over its part of the model, in the order they come; the collectives in
 * each forward meet rank 0's. It runs no HTTP, prep, plan or sink: what it computes is the
 * same batch as rank 0's, whose tokens it never reports.
 *
 * <p>A call that fails here, or that gives another result than rank 0's (an insert that is not
 * given the row id rank 0 got, a unit whose committed tokens differ from rank 0's digest of the
 * same unit), means this rank left the group's step: it tells rank 0
 * ({@code FAILED}) and {@link #run} throws {@link ShardGroupException}. Runs on the follower's
 * one MLX thread; owns the runs and batches it opens and closes them on every exit.
 */
public final class FollowerLoop {
    private final Executor local;
    private final FollowerChannel channel;
    private final Map<Integer, ExecutionRun> runs = new HashMap<>();
    private final Map<Integer, ExecutionBatch> batches = new HashMap<>();
    private final Map<Integer, BatchStep> steps = new HashMap<>();
    /** What this rank's previous unit of each run / batch committed ({@link StepDigest}). */
    private final Map<Integer, Long> runDigests = new HashMap<>();

    private final Map<Integer, Long> batchDigests = new HashMap<>();
    private long calls;

    public FollowerLoop(Executor local, FollowerChannel channel) {
        this.local = local;
        this.channel = channel;
    }

    /**
     * Replays calls until rank 0 shuts the group down (returns) or the group fails (throws).
     *
     * @return the number of calls replayed
     */
    public long run() throws InterruptedException {
        try {
            while (true) {
                Frame f = channel.take();
                if (f == FollowerChannel.LOST) {
                    throw new ShardGroupException(channel.lostReason());
                }
                if (f.type() == Frame.SHUTDOWN) {
                    return calls;
                }
                try {
                    apply(f);
                } catch (ShardGroupException e) {
                    throw e;
                } catch (IOException | RuntimeException | RequestException e) {
                    String reason = "replaying call " + calls + " (frame type " + f.type() + ") failed: " + e;
                    channel.reportFailure(reason);
                    throw new ShardGroupException(reason);
                }
                calls++;
            }
        } finally {
            closeAll();
        }
    }

    private void apply(Frame f) throws IOException, RequestException {
        DataInputStream in = f.body();
        switch (f.type()) {
            case Frame.OPEN_RUN -> {
                int id = in.readInt();
                int cached = in.readInt();
                ExecutionRun r = local.open(PlanCodec.read(in));
                runs.put(id, r);
                checkReuse(cached, r.cachedTokens(), "run " + id);
            }
            case Frame.ADVANCE -> {
                int id = in.readInt();
                ExecutionRun r = run(id);
                check(in.readLong(), runDigests.getOrDefault(id, 0L), "run " + id);
                runDigests.put(id, StepDigest.of(r.advance()));
            }
            case Frame.CLOSE_RUN -> {
                int id = in.readInt();
                runDigests.remove(id);
                ExecutionRun r = runs.remove(id);
                if (r != null) {
                    r.close();
                }
            }
            case Frame.OPEN_BATCH -> {
                int id = in.readInt();
                int maxRows = in.readInt();
                int maxPrefillRows = in.readInt();
                boolean shortPromptsFirst = in.readBoolean();
                ExecutionBatch b = local.openBatch(maxRows, maxPrefillRows, shortPromptsFirst);
                if (b == null) {
                    throw new IllegalStateException("rank 0 opened a batch this rank's executor does not offer");
                }
                if (b instanceof ContinuousBatch c) {
                    c.holdFirstTokenSteps(false); // as rank 0's (ShardedExecutor#openBatch)
                }
                batches.put(id, b);
                steps.put(id, new BatchStep(maxRows, SamplingParams.MAX_TOP_LOGPROBS));
            }
            case Frame.INSERT -> {
                int id = in.readInt();
                int row = in.readInt();
                int cached = in.readInt();
                ExecutionBatch b = batch(id);
                int mine = b.insert(PlanCodec.read(in));
                if (mine != row) {
                    throw new IllegalStateException("diverged: rank 0 inserted row " + row + ", this rank got " + mine);
                }
                checkReuse(cached, b.cachedTokens(mine), "row " + row);
            }
            case Frame.REMOVE -> {
                int id = in.readInt();
                batch(id).remove(in.readInt());
            }
            case Frame.STEP -> {
                int id = in.readInt();
                ExecutionBatch b = batch(id);
                check(in.readLong(), batchDigests.getOrDefault(id, 0L), "batch " + id);
                boolean prefill = in.readBoolean();
                BatchStep out = steps.get(id);
                b.step(out, prefill);
                batchDigests.put(id, StepDigest.of(out));
            }
            case Frame.CLOSE_BATCH -> {
                int id = in.readInt();
                ExecutionBatch b = batches.remove(id);
                steps.remove(id);
                batchDigests.remove(id);
                if (b != null) {
                    b.close();
                }
            }
            default -> throw new IllegalStateException("unknown control frame type " + f.type());
        }
    }

    /** Rank 0's digest of the previous unit against this rank's: they differ once the ranks diverged. */
    private void check(long rank0, long mine, String what) {
        if (rank0 != mine) {
            throw new IllegalStateException("diverged: " + what + "'s previous unit committed other tokens here than"
                    + " on rank 0 (digest " + Long.toHexString(mine) + " vs " + Long.toHexString(rank0) + ")");
        }
    }

    /**
     * The prefix cache must have reused as many prompt tokens here as on rank 0: otherwise the
     * ranks would feed different lengths into the same collectives (which need not even fail).
     */
    private static void checkReuse(int rank0, int mine, String what) {
        if (rank0 != mine) {
            throw new IllegalStateException(
                    "diverged: " + what + " reused " + mine + " cached prompt tokens here and " + rank0 + " on rank 0");
        }
    }

    private ExecutionRun run(int id) {
        ExecutionRun r = runs.get(id);
        if (r == null) {
            throw new IllegalStateException("rank 0 advanced run " + id + ", which this rank has not opened");
        }
        return r;
    }

    private ExecutionBatch batch(int id) {
        ExecutionBatch b = batches.get(id);
        if (b == null) {
            throw new IllegalStateException("rank 0 used batch " + id + ", which this rank has not opened");
        }
        return b;
    }

    private void closeAll() {
        for (ExecutionRun r : runs.values()) {
            r.close();
        }
        runs.clear();
        for (ExecutionBatch b : batches.values()) {
            b.close();
        }
        batches.clear();
    }
}
