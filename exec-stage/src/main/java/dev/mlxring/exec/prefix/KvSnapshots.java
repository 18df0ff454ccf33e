package dev.mlxring.exec.prefix;

import dev.mlxring.exec.kv.ArraysCache;
import dev.mlxring.exec.kv.DenseKvCache;
import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.kv.QuantizedKvCache;
import dev.mlxring.kvstore.KvSnapshot;
import dev.mlxring.kvstore.KvTensor;
import dev.mlxring.kvstore.LayerState;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.ArrayList;
import java.util.List;

/**
 * Layer caches to and from the kvstore's byte snapshots — mlx-lm's {@code copy.deepcopy} of a
 * {@code prompt_cache} for {@code LRUPromptCache}. A snapshot keeps each layer's whole buffers
 * (capacity included) and its offset, so a restored cache holds the same arrays and grows
 * exactly as the cache it was taken from, and restoring with a smaller offset is mlx-lm's
 * {@code trim_prompt_cache}. A recurrent layer ({@link ArraysCache}) is copied as its arrays at
 * the caches' offset, and may carry {@linkplain #checkpoint checkpoints} of its state taken at
 * earlier positions; such a snapshot restores only at those positions or its length.
 *
 * <p>Exec thread only (it evaluates and creates MLX arrays).
 */
public final class KvSnapshots {
    private KvSnapshots() {}

    /**
     * Copies the caches' state into a new snapshot (evaluating it), or returns null when a layer
     * is empty or of a kind the kvstore does not hold (it would not be trimmable). The caller owns
     * the returned snapshot's reference; the caches are unchanged.
     */
    public static KvSnapshot capture(KvCache[] caches) {
        return capture(caches, List.of());
    }

    /**
     * As above, carrying {@code checkpoints} ({@link #checkpoint}s of the same caches at earlier
     * positions, below their offset; copied, still owned by the caller) as the snapshot's
     * restorable positions besides its length.
     */
    public static KvSnapshot capture(KvCache[] caches, List<KvSnapshot> checkpoints) {
        List<KvCache> layers = List.of(caches);
        for (KvCache c : layers) {
            if (c.isEmpty() || !snapshottable(c)) {
                return null;
            }
        }
        // One evaluation for every layer's state, then the copies: a copy of an unevaluated array
        // waits on MLX's stream by itself, a round trip per array (60 for a 30-layer row).
        List<MlxArray> states = new ArrayList<>();
        for (KvCache c : layers) {
            states.addAll(List.of(c.state()));
        }
        Mlx.eval(states.toArray(MlxArray[]::new));
        KvSnapshot.Builder b = KvSnapshot.builder();
        try {
            for (KvCache c : layers) {
                b.add(layerState(c, copy(b, c.state())));
            }
            copyCheckpoints(b, checkpoints);
            return b.build();
        } catch (RuntimeException e) {
            b.abandon();
            throw e;
        }
    }

    /** A layer's state in a snapshot: {@code c}'s kind and offset over {@code tensors}. */
    static LayerState layerState(KvCache c, List<KvTensor> tensors) {
        return switch (c) {
            case QuantizedKvCache q ->
                new LayerState(LayerState.Kind.QUANTIZED, q.offset(), q.groupSize(), q.bits(), tensors);
            case ArraysCache a -> new LayerState(LayerState.Kind.RECURRENT, a.offset(), 0, 0, tensors);
            default -> new LayerState(LayerState.Kind.DENSE, c.offset(), 0, 0, tensors);
        };
    }

    /** Adds copies of {@code checkpoints} (filled snapshots, still the caller's) to {@code b}. */
    static void copyCheckpoints(KvSnapshot.Builder b, List<KvSnapshot> checkpoints) {
        for (KvSnapshot cp : checkpoints) {
            List<LayerState> recurrent = new ArrayList<>();
            for (LayerState l : cp.layers()) {
                List<KvTensor> tensors = new ArrayList<>();
                for (KvTensor t : l.tensors()) {
                    var data = b.allocate(t.data().byteSize());
                    data.copyFrom(t.data());
                    tensors.add(new KvTensor(t.dtype(), t.shape(), data));
                }
                recurrent.add(new LayerState(LayerState.Kind.RECURRENT, l.offset(), 0, 0, tensors));
            }
            b.checkpoint(new KvSnapshot.Checkpoint(cp.tokens(), recurrent));
        }
    }

    /**
     * The recurrent layers' state alone ({@link LayerState.Kind#RECURRENT} layers, in layer
     * order, at their offset): a checkpoint for {@link #capture(KvCache[], List)}, taken between
     * prefill chunks. Null when the caches hold no full recurrent state. The caller owns it.
     */
    public static KvSnapshot checkpoint(KvCache[] caches) {
        KvSnapshot.Builder b = KvSnapshot.builder();
        int n = 0;
        try {
            for (KvCache c : caches) {
                if (c instanceof ArraysCache a) {
                    if (!a.isFull()) {
                        b.abandon();
                        return null;
                    }
                    b.add(new LayerState(LayerState.Kind.RECURRENT, a.offset(), 0, 0, copy(b, a.state())));
                    n++;
                }
            }
            if (n == 0) {
                b.abandon();
                return null;
            }
            return b.build();
        } catch (RuntimeException e) {
            b.abandon();
            throw e;
        }
    }

    static boolean snapshottable(KvCache c) {
        return c instanceof DenseKvCache || c instanceof QuantizedKvCache || (c instanceof ArraysCache a && a.isFull());
    }

    private static List<KvTensor> copy(KvSnapshot.Builder b, MlxArray[] arrays) {
        List<KvTensor> tensors = new ArrayList<>();
        for (MlxArray a : arrays) {
            var data = b.allocate(a.nbytes());
            a.copyTo(data);
            tensors.add(new KvTensor(a.dtype().mlxName, a.shape(), data));
        }
        return tensors;
    }

    /**
     * New layer caches holding the snapshot's buffers with every offset set to {@code keep}
     * (at most the snapshot's tokens; for a snapshot with recurrent layers one of its
     * {@linkplain KvSnapshot#boundaries() boundaries}, whose recurrent state they take). The
     * caller owns them; the snapshot is unchanged. A pending snapshot ({@link PendingSnapshot}) is
     * filled first ({@link KvSnapshot#awaitFilled()}).
     *
     * @throws IllegalStateException when the snapshot's bytes could not be written
     */
    public static KvCache[] restore(KvSnapshot snapshot, int keep) {
        if (keep < 0 || keep > snapshot.tokens()) {
            throw new IllegalArgumentException(
                    "cannot keep " + keep + " of a snapshot's " + snapshot.tokens() + " positions");
        }
        snapshot.awaitFilled();
        List<LayerState> recurrent = snapshot.trimmable() ? List.of() : snapshot.recurrentAt(keep);
        int nextRecurrent = 0;
        List<LayerState> layers = snapshot.layers();
        KvCache[] out = new KvCache[layers.size()];
        int made = 0;
        try (ArrayScope scope = ArrayScope.open()) {
            for (LayerState layer : layers) {
                LayerState l = layer.kind() == LayerState.Kind.RECURRENT ? recurrent.get(nextRecurrent++) : layer;
                MlxArray[] a = new MlxArray[l.tensors().size()];
                for (int i = 0; i < a.length; i++) {
                    KvTensor t = l.tensors().get(i);
                    a[i] = Mlx.fromBytes(t.data(), t.shape(), Dtype.parse(t.dtype()));
                }
                out[made] = switch (l.kind()) {
                    case DENSE -> DenseKvCache.restored(a[0], a[1], keep);
                    case QUANTIZED ->
                        QuantizedKvCache.restored(
                                l.groupSize(), l.bits(), keep, new MlxArray[] {a[0], a[1], a[2]}, new MlxArray[] {
                                    a[3], a[4], a[5]
                                });
                    case RECURRENT -> ArraysCache.restored(a, keep);
                };
                made++;
            }
        } catch (RuntimeException e) {
            for (int i = 0; i < made; i++) {
                out[i].close();
            }
            throw e;
        }
        return out;
    }
}
