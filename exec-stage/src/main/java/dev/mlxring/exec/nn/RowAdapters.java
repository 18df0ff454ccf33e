package dev.mlxring.exec.nn;

import dev.mlxring.mlx.Dtype;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * Which named adapter each row of the forward pass being built uses: the batch's rows in order,
 * null for a row on the base model. Set around one {@code model.forward} call on the thread that
 * builds its graph ({@link #during}); each {@link AdaptableLinear} reads it there. Without one
 * (or with every row on the base model) the model runs as loaded, fused blocks included; with
 * one, a block whose layers no row's adapter converts ({@link #convertsAny}) runs fused too.
 */
public final class RowAdapters {
    private static final ThreadLocal<RowAdapters> CURRENT = new ThreadLocal<>();

    private final NamedAdapter[] rows;
    private final List<NamedAdapter> distinct = new ArrayList<>();
    private final MlxArray[] masks;

    private RowAdapters(NamedAdapter[] rows) {
        this.rows = rows;
        for (NamedAdapter a : rows) {
            if (a != null && !distinct.contains(a)) {
                distinct.add(a);
            }
        }
        this.masks = new MlxArray[distinct.size()];
    }

    /** The rows' adapters ({@code rows[i]} for row i, null for none); null when no row has one. */
    public static RowAdapters of(NamedAdapter[] rows) {
        for (NamedAdapter a : rows) {
            if (a != null) {
                return new RowAdapters(rows.clone());
            }
        }
        return null;
    }

    /** Runs {@code forward} with {@code adapters} (null: none) as the current rows' adapters. */
    public static <T> T during(RowAdapters adapters, Supplier<T> forward) {
        if (adapters == null) {
            return forward.get();
        }
        RowAdapters outer = CURRENT.get();
        CURRENT.set(adapters);
        try {
            return forward.get();
        } finally {
            CURRENT.set(outer);
        }
    }

    /**
     * Whether a row of the forward being built has an adapter that converts one of {@code slots}
     * (a block's layers): false without {@link RowAdapters}, and for a block that only adapters
     * of no row here convert. A block for which this is false computes every row's base output,
     * so it may run fused. Allocates nothing (once per block per forward).
     */
    public static boolean convertsAny(AdaptableLinear[] slots) {
        RowAdapters rows = CURRENT.get();
        if (rows == null) {
            return false;
        }
        for (int i = 0; i < rows.distinct.size(); i++) {
            NamedAdapter a = rows.distinct.get(i);
            for (AdaptableLinear slot : slots) {
                if (slot.converts(a)) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * The adapter of each row of the forward being built (null for a row on the base model), the
     * current {@link RowAdapters}' own array, not to be written; null without one.
     */
    public static NamedAdapter[] currentRows() {
        RowAdapters rows = CURRENT.get();
        return rows == null ? null : rows.rows;
    }

    static RowAdapters current() {
        return CURRENT.get();
    }

    /** The distinct adapters of the rows, in first-row order. */
    List<NamedAdapter> distinct() {
        return distinct;
    }

    /** Whether every row uses {@code adapter}. */
    boolean allRows(NamedAdapter adapter) {
        for (NamedAdapter a : rows) {
            if (a != adapter) {
                return false;
            }
        }
        return true;
    }

    /**
     * {@code [B, 1, 1]} bool, true on the rows of {@code distinct().get(i)}; made once per forward
     * in the array scope open when first asked for.
     */
    MlxArray mask(int i) {
        if (masks[i] == null) {
            int[] flags = new int[rows.length];
            for (int r = 0; r < rows.length; r++) {
                flags[r] = rows[r] == distinct.get(i) ? 1 : 0;
            }
            masks[i] = Mlx.astype(Mlx.fromInts(flags, rows.length, 1, 1), Dtype.BOOL);
        }
        return masks[i];
    }

    /** The index in {@link #distinct()} of row {@code r}'s adapter, -1 for none. */
    int distinctIndex(int r) {
        return rows[r] == null ? -1 : distinct.indexOf(rows[r]);
    }

    int rowCount() {
        return rows.length;
    }
}
