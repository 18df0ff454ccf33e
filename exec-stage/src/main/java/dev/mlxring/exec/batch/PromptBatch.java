package dev.mlxring.exec.batch;

import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.nn.RowAdapters;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;

/**
 * mlx-lm's {@code PromptProcessingBatch}: the rows whose prompts are being prefilled, one chunk of
 * each (within its current segment) per {@link BatchGenerator#next()}, in one forward over all of
 * them (rows shorter than the longest chunk right-padded, the padding rolled into left padding
 * afterwards). A row whose prompt
 * is down to its last token is split off into a {@link GenerationBatch}.
 *
 * <p>Owns its caches; the rows' sampling runs belong to the generator. Exec thread only.
 */
final class PromptBatch implements AutoCloseable {
    /** The rows split off together and their caches. */
    record Split(List<Row> rows, RowCaches caches) {}

    private final LanguageModel model;
    final List<Row> rows = new ArrayList<>();
    private RowCaches caches;
    /** {@code max_kv_size} of every row's fresh caches; 0 = none. */
    private final int maxKvSize;

    PromptBatch(LanguageModel model, int maxKvSize) {
        this.model = model;
        this.maxKvSize = maxKvSize;
    }

    int size() {
        return rows.size();
    }

    /**
     * {@code extend(_make_batch(n))}: new rows appended, with empty caches or, when some arrive
     * with a restored prefix, their histories merged.
     */
    void extend(List<Row> joining) {
        boolean histories = false;
        for (Row r : joining) {
            histories |= r.history != null;
        }
        var scheme = joining.getFirst().kvQuantization;
        RowCaches fresh = histories
                ? RowCaches.fromHistories(model, joining, maxKvSize, scheme)
                : RowCaches.fresh(model, joining.size(), maxKvSize, scheme);
        if (caches == null) {
            caches = fresh;
        } else {
            caches.extend(fresh);
            fresh.close();
        }
        rows.addAll(joining);
    }

    /** {@code split(indices)}: those rows (ascending) leave with their caches; the rest stay. */
    Split split(int[] indices) {
        List<Row> leaving = new ArrayList<>();
        List<Row> staying = new ArrayList<>();
        int[] left = new int[rows.size() - indices.length];
        int l = 0;
        for (int i = 0, j = 0; i < rows.size(); i++) {
            if (j < indices.length && indices[j] == i) {
                leaving.add(rows.get(i));
                j++;
            } else {
                staying.add(rows.get(i));
                left[l++] = i;
            }
        }
        RowCaches out;
        if (left.length == 0) {
            out = caches;
            caches = null;
            out.filter(indices);
        } else {
            out = caches.select(indices);
            caches.filter(left);
        }
        rows.clear();
        rows.addAll(staying);
        return new Split(leaving, out);
    }

    /** In-place {@code filter(keep)}: those rows stay; with none left the caches are dropped. */
    void filter(int[] keep) {
        List<Row> kept = new ArrayList<>(keep.length);
        for (int k : keep) {
            kept.add(rows.get(k));
        }
        rows.clear();
        rows.addAll(kept);
        if (keep.length == 0) {
            caches.close();
            caches = null;
        } else {
            caches.filter(keep);
        }
    }

    /**
     * {@code prompt(tokens)}: feeds each row its chunk (one forward, right-padded with 0 to the
     * longest), evaluates the caches and clears MLX's buffer cache; with padding, rolls it into
     * left padding and evaluates again.
     */
    void prompt(List<int[]> chunks) {
        if (chunks.isEmpty()) {
            return;
        }
        int b = chunks.size();
        int[] lengths = new int[b];
        int maxLength = 0;
        for (int i = 0; i < b; i++) {
            lengths[i] = chunks.get(i).length;
            maxLength = Math.max(maxLength, lengths[i]);
        }
        int[] padding = new int[b];
        int maxPadding = 0;
        int[] flat = new int[b * maxLength];
        for (int i = 0; i < b; i++) {
            padding[i] = maxLength - lengths[i];
            maxPadding = Math.max(maxPadding, padding[i]);
            System.arraycopy(chunks.get(i), 0, flat, i * maxLength, lengths[i]);
        }
        try (ArrayScope scope = ArrayScope.open()) {
            for (int i = 0; i < b; i++) {
                Row row = rows.get(i);
                if (row.sampling.hasProcessors()) {
                    row.sampling.observe(Mlx.fromInts(chunks.get(i), lengths[i]), lengths[i]);
                }
            }
            caches.freshenEmptyQuantized();
            if (maxPadding > 0) {
                caches.prepareRightPadding(lengths, padding);
            }
            MlxArray tokens = Mlx.fromInts(flat, b, maxLength);
            // The forward's activations are released before the caches are evaluated, as Python
            // drops the model call's result (see GenerationRun's prefill).
            try (ArrayScope forward = ArrayScope.open()) {
                RowAdapters.during(Row.adapters(rows), () -> model.forward(tokens, caches.layers()));
            }
            if (maxPadding == 0) {
                // generate_step's order: the model call, maybe_quantize_kv_cache, then eval
                caches.maybeQuantize();
            }
            Mlx.eval(caches.state());
        }
        Mlx.clearCache();
        if (maxPadding > 0) {
            try (ArrayScope scope = ArrayScope.open()) {
                caches.finalizePadding();
                caches.maybeQuantize();
                Mlx.eval(caches.state());
            }
            Mlx.clearCache();
        }
        for (int i = 0; i < b; i++) {
            rows.get(i).fed(lengths[i]);
        }
    }

    /** Runs {@code use} on row {@code i}'s caches ({@link RowCaches#withRow}). */
    void withRow(int i, Consumer<KvCache[]> use) {
        caches.withRow(i, use);
    }

    @Override
    public void close() {
        if (caches != null) {
            caches.close();
            caches = null;
        }
        rows.clear();
    }

    @Override
    public String toString() {
        return "PromptBatch"
                + Arrays.toString(rows.stream().mapToInt(r -> r.uid).toArray());
    }
}
