package dev.mlxring.exec.prefix;

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
 * {@code trim_prompt_cache}.
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
        List<KvCache> layers = List.of(caches);
        for (KvCache c : layers) {
            if (c.isEmpty() || !(c instanceof DenseKvCache || c instanceof QuantizedKvCache)) {
                return null;
            }
        }
        KvSnapshot.Builder b = KvSnapshot.builder();
        try {
            for (KvCache c : layers) {
                List<KvTensor> tensors = new ArrayList<>();
                for (MlxArray a : c.state()) {
                    var data = b.allocate(a.nbytes());
                    a.copyTo(data);
                    tensors.add(new KvTensor(a.dtype().mlxName, a.shape(), data));
                }
                b.add(
                        c instanceof QuantizedKvCache q
                                ? new LayerState(
                                        LayerState.Kind.QUANTIZED, q.offset(), q.groupSize(), q.bits(), tensors)
                                : new LayerState(LayerState.Kind.DENSE, c.offset(), 0, 0, tensors));
            }
            return b.build();
        } catch (RuntimeException e) {
            b.abandon();
            throw e;
        }
    }

    /**
     * New layer caches holding the snapshot's buffers with every offset set to {@code keep}
     * (at most the snapshot's tokens). The caller owns them; the snapshot is unchanged.
     */
    public static KvCache[] restore(KvSnapshot snapshot, int keep) {
        if (keep < 0 || keep > snapshot.tokens()) {
            throw new IllegalArgumentException(
                    "cannot keep " + keep + " of a snapshot's " + snapshot.tokens() + " positions");
        }
        List<LayerState> layers = snapshot.layers();
        KvCache[] out = new KvCache[layers.size()];
        int made = 0;
        try (ArrayScope scope = ArrayScope.open()) {
            for (LayerState l : layers) {
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
