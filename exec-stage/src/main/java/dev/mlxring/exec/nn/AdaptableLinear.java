package dev.mlxring.exec.nn;

import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A linear layer of a model that serves named adapters per row ({@link AdapterSlots}): the base
 * layer, and for each loaded adapter that converts it its {@link LoraLinear} or
 * {@link DoraLinear}. A forward with no {@link RowAdapters} is the base layer's. With them, the
 * base output is computed once over every row; for each adapter among the rows, its layer's output
 * over every row (a LoRA layer adds its delta to the shared base output; a DoRA layer computes
 * its own, as mlx-lm's does) replaces the base output on that adapter's rows only
 * ({@code where} over a row mask, so each row's bytes are those of the batch run with its adapter
 * on every row). An adapter that does not convert this layer leaves its rows the base output.
 */
public final class AdaptableLinear implements Linear {
    private final String path;
    private final Linear base;
    private final int inDims;
    private final Map<NamedAdapter, Linear> adapted = new ConcurrentHashMap<>();

    AdaptableLinear(String path, Linear base, int inDims) {
        this.path = path;
        this.base = base;
        this.inDims = inDims;
    }

    public String path() {
        return path;
    }

    /** The layer as loaded, without adapters. */
    public Linear base() {
        return base;
    }

    int inDims() {
        return inDims;
    }

    void attach(NamedAdapter adapter, Linear layer) {
        adapted.put(adapter, layer);
    }

    void detach(NamedAdapter adapter) {
        adapted.remove(adapter);
    }

    /** {@code adapter}'s layer here (its {@link LoraLinear} or {@link DoraLinear}), null where it does not convert this one. */
    public Linear adapted(NamedAdapter adapter) {
        return adapted.get(adapter);
    }

    /** Whether {@code adapter} converts this layer (is attached to it). */
    boolean converts(NamedAdapter adapter) {
        return adapted.containsKey(adapter);
    }

    @Override
    public MlxArray forward(MlxArray x) {
        RowAdapters rows = RowAdapters.current();
        MlxArray y = base.forward(x);
        if (rows == null) {
            return y;
        }
        if (x.dim(0) != rows.rowCount()) {
            throw new IllegalStateException(
                    path + ": a forward over " + x.dim(0) + " rows was given adapters for " + rows.rowCount());
        }
        MlxArray out = y;
        boolean[] gathered = GATHER ? gathered(rows) : null;
        if (gathered != null) {
            out = gatheredLora(x, y, rows, gathered);
        }
        for (int i = 0; i < rows.distinct().size(); i++) {
            NamedAdapter a = rows.distinct().get(i);
            Linear layer = adapted.get(a);
            if (layer == null || (gathered != null && gathered[i])) {
                continue;
            }
            MlxArray own = layer instanceof LoraLinear l ? l.addDelta(x, y) : layer.forward(x);
            out = rows.allRows(a) ? own : Mlx.where(rows.mask(i), own, out);
        }
        return out;
    }

    /** -Dmlxring.adapterGather=false: one masked pass per adapter even where a gather applies. */
    private static final boolean GATHER = !"false".equals(System.getProperty("mlxring.adapterGather"));

    /**
     * The distinct adapters whose LoRA layers here share one rank and dtype (the first such
     * adapter's), when two or more do: they are applied in one gathered pass; else null.
     */
    private boolean[] gathered(RowAdapters rows) {
        boolean[] g = new boolean[rows.distinct().size()];
        LoraLinear first = null;
        int n = 0;
        for (int i = 0; i < g.length; i++) {
            if (adapted.get(rows.distinct().get(i)) instanceof LoraLinear l
                    && (first == null
                            || (l.loraA().dim(1) == first.loraA().dim(1)
                                    && l.loraA().dtype() == first.loraA().dtype()
                                    && l.loraB().dtype() == first.loraB().dtype()))) {
                first = first == null ? l : first;
                g[i] = true;
                n++;
            }
        }
        return n >= 2 ? g : null;
    }

    /**
     * The gathered adapters' LoRA outputs on their rows in one pass: each row's {@code lora_a}
     * and {@code lora_b} taken from the adapters' stacked ones by the row's adapter, one batched
     * {@code (x @ A_row) @ B_row}, each row scaled by its adapter's scale; the other rows keep
     * {@code y}.
     */
    private MlxArray gatheredLora(MlxArray x, MlxArray y, RowAdapters rows, boolean[] gathered) {
        List<MlxArray> as = new ArrayList<>();
        List<MlxArray> bs = new ArrayList<>();
        float[] scaleOf = new float[gathered.length];
        int[] slotOf = new int[gathered.length];
        for (int i = 0; i < gathered.length; i++) {
            if (gathered[i]) {
                LoraLinear l = (LoraLinear) adapted.get(rows.distinct().get(i));
                slotOf[i] = as.size();
                scaleOf[i] = (float) l.scale();
                as.add(Mlx.expandDims(l.loraA(), 0));
                bs.add(Mlx.expandDims(l.loraB(), 0));
            }
        }
        int b = rows.rowCount();
        int[] index = new int[b];
        float[] scales = new float[b];
        int[] on = new int[b];
        for (int r = 0; r < b; r++) {
            int d = rows.distinctIndex(r);
            if (d >= 0 && gathered[d]) {
                index[r] = slotOf[d];
                scales[r] = scaleOf[d];
                on[r] = 1;
            }
        }
        MlxArray idx = Mlx.fromInts(index, b);
        MlxArray a = Mlx.take(Mlx.concatenate(0, as.toArray(new MlxArray[0])), idx, 0);
        MlxArray bm = Mlx.take(Mlx.concatenate(0, bs.toArray(new MlxArray[0])), idx, 0);
        MlxArray z = Mlx.matmul(Mlx.matmul(x, a), bm);
        MlxArray scale = Mlx.astype(Mlx.fromFloats(scales, b, 1, 1), z.dtype());
        MlxArray own = Mlx.add(y, Mlx.astype(Mlx.multiply(scale, z), x.dtype()));
        MlxArray mask = Mlx.astype(Mlx.fromInts(on, b, 1, 1), dev.mlxring.mlx.Dtype.BOOL);
        return Mlx.where(mask, own, y);
    }
}
