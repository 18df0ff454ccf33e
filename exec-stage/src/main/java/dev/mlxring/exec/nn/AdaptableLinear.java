package dev.mlxring.exec.nn;

import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
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
        for (int i = 0; i < rows.distinct().size(); i++) {
            NamedAdapter a = rows.distinct().get(i);
            Linear layer = adapted.get(a);
            if (layer == null) {
                continue;
            }
            MlxArray own = layer instanceof LoraLinear l ? l.addDelta(x, y) : layer.forward(x);
            out = rows.allRows(a) ? own : Mlx.where(rows.mask(i), own, out);
        }
        return out;
    }
}
