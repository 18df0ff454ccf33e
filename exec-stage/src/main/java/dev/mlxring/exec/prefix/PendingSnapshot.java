package dev.mlxring.exec.prefix;

import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.kvstore.KvSnapshot;
import dev.mlxring.kvstore.KvTensor;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link KvSnapshots#capture} whose copy is deferred: the snapshot is built at once, its
 * shapes, dtypes and bytes count final, and can be published at once, while its bytes are written
 * later from MLX arrays of its own (views of the caches' buffers, not evaluated when taken), so
 * taking it never waits for a computation still running on those buffers. The bytes are written,
 * once, on the exec thread, by whichever comes first: {@link #complete()} or a reader's {@link
 * KvSnapshot#awaitFilled()} there (a row restoring the entry); they are the bytes {@link
 * KvSnapshots#capture} would have copied.
 *
 * <p>Ownership: the caller owns the snapshot's creator reference ({@link #snapshot()}; it
 * publishes or releases it) and this object, which holds the arrays and a reference of its own
 * to the snapshot until {@link #complete()}; every instance is completed exactly once (closing
 * its arrays and dropping its reference), whatever became of the snapshot. Exec thread only.
 */
public final class PendingSnapshot {
    private static final System.Logger LOG = System.getLogger("dev.mlxring.exec.prefix");

    private final KvSnapshot snapshot;
    private final List<MlxArray> arrays;
    private final List<MemorySegment> targets;
    private boolean completed;

    private PendingSnapshot(KvSnapshot.Builder builder, List<MlxArray> arrays, List<MemorySegment> targets) {
        this.arrays = arrays;
        this.targets = targets;
        KvSnapshot s = builder.buildPending(this::write);
        this.snapshot = s.retain();
    }

    /**
     * The caches' state taken as a pending snapshot carrying {@code checkpoints} (copied now: they
     * are filled) as {@link KvSnapshots#capture(KvCache[], List)} does, or null where that gives
     * null. The caches may be closed or changed right after.
     */
    public static PendingSnapshot take(KvCache[] caches, List<KvSnapshot> checkpoints) {
        for (KvCache c : caches) {
            if (c.isEmpty() || !KvSnapshots.snapshottable(c)) {
                return null;
            }
        }
        KvSnapshot.Builder b = KvSnapshot.builder();
        List<MlxArray> own = new ArrayList<>();
        List<MemorySegment> targets = new ArrayList<>();
        try (ArrayScope scope = ArrayScope.open()) {
            for (KvCache c : caches) {
                List<KvTensor> tensors = new ArrayList<>();
                for (MlxArray a : c.state()) {
                    MlxArray mine = Mlx.reshape(a, a.shape()).detach();
                    own.add(mine);
                    MemorySegment data = b.allocate(mine.nbytes());
                    targets.add(data);
                    tensors.add(new KvTensor(mine.dtype().mlxName, mine.shape(), data));
                }
                b.add(KvSnapshots.layerState(c, tensors));
            }
            KvSnapshots.copyCheckpoints(b, checkpoints);
            return new PendingSnapshot(b, own, targets);
        } catch (RuntimeException e) {
            own.forEach(MlxArray::close);
            b.abandon();
            throw e;
        }
    }

    /** The snapshot (the creator's reference: the caller publishes or releases it). */
    public KvSnapshot snapshot() {
        return snapshot;
    }

    /**
     * Submits the arrays for evaluation ({@code async_eval}) without waiting, so that
     * {@link #complete()} later finds them computed; nothing once the bytes are written.
     */
    public void submit() {
        if (!snapshot.filled()) {
            Mlx.asyncEval(arrays.toArray(MlxArray[]::new));
        }
    }

    /**
     * Writes the bytes unless a reader already had them written (evaluating the arrays, waiting
     * for what they depend on), closes the arrays and drops this object's reference; later calls
     * do nothing. A failed write leaves the snapshot failed ({@link KvSnapshot#awaitFilled()}
     * throws; the prefix cache serves it as a miss) and is logged, not thrown.
     */
    public void complete() {
        if (completed) {
            return;
        }
        completed = true;
        try {
            snapshot.awaitFilled();
        } catch (IllegalStateException e) {
            LOG.log(System.Logger.Level.WARNING, "prefix cache: could not copy a finished row's KV state", e);
        } finally {
            snapshot.release();
        }
    }

    /** The snapshot's fill: copies every array into its bytes, then closes the arrays. */
    private void write() {
        try {
            for (int i = 0; i < arrays.size(); i++) {
                arrays.get(i).copyTo(targets.get(i));
            }
        } finally {
            arrays.forEach(MlxArray::close);
        }
    }
}
