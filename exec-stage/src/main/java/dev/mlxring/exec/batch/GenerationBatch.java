package dev.mlxring.exec.batch;

import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.sample.TokenMask;
import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;
import java.util.ArrayList;
import java.util.List;

/**
 * mlx-lm's {@code GenerationBatch}: the rows that are generating, one forward over all of them per
 * step, pipelined as generate_step is — each step builds and {@code async_eval}s step n+1 before
 * reading step n's tokens. Per row: its logits processors on its own {@code [1, V]} slice (only
 * when some row has processors), then {@code logits - logsumexp(logits, axis=-1)} over the batch,
 * then one batched argmax when every row is greedy, else each row's own sampler on its slice
 * (its own key). A row with a token constraint masks its processed slice ({@link TokenMask}, its
 * mask for step n+1 following its token n: when any row is constrained, the step submits the
 * forward ({@code async_eval} of its logits), then reads the current tokens and computes the
 * masks while it runs); a row whose constraint allows nothing, or
 * refuses its token, is reported failed ({@link BatchToken#failed}) at the step whose token it
 * cannot give, and leaves alone. Rows leave by {@link #filter} after the step that finished them, and a batch of
 * newly prefilled rows joins by {@link #extend} (after its own first step, run on its rows alone).
 *
 * <p>Owns its caches and pending arrays (tokens, per-row logprobs); the rows' sampling runs
 * belong to the generator. Exec thread only.
 */
final class GenerationBatch implements AutoCloseable {
    private final LanguageModel model;
    final List<Row> rows;
    private RowCaches caches;
    private MlxArray currentTokens;
    private List<MlxArray> currentLogprobs = new ArrayList<>();
    private MlxArray nextTokens;
    private List<MlxArray> nextLogprobs = new ArrayList<>();
    /** Per row of the last {@link #step()}: whether its current token is unusable (its mask failed). */
    private boolean[] failedRows = new boolean[0];
    /** Told about each row that finishes, with its caches, before the row is filtered out; may be null. */
    BatchGenerator.FinishedRows finished;

    /** An empty batch. */
    GenerationBatch(LanguageModel model) {
        this.model = model;
        this.rows = new ArrayList<>();
    }

    /** Rows whose prompts are prefilled but for {@code lastTokens}; runs their first step. */
    GenerationBatch(LanguageModel model, List<Row> rows, RowCaches caches, int[] lastTokens) {
        this.model = model;
        this.rows = new ArrayList<>(rows);
        this.caches = caches;
        try (ArrayScope scope = ArrayScope.open()) {
            nextTokens = Mlx.fromInts(lastTokens, lastTokens.length).detach();
        }
        step();
    }

    int size() {
        return rows.size();
    }

    /** True when the batch holds rows on solo caches (one row, never merged). */
    boolean solo() {
        return caches != null && caches.solo();
    }

    /** Generates one token per row ({@code next()}); rows that finished are filtered out after it. */
    List<BatchToken> next() {
        List<BatchToken> out = new ArrayList<>(rows.size());
        if (rows.isEmpty()) {
            return out;
        }
        int[] tokens = step();
        int[] keep = new int[rows.size()];
        int kept = 0;
        for (int i = 0; i < rows.size(); i++) {
            Row row = rows.get(i);
            if (failedRows[i]) {
                // No token for this row: its caches are not published, and it leaves alone.
                out.add(BatchToken.failed(row.uid, row.mask.failureType(), row.mask.failure()));
                row.closeRun();
                continue;
            }
            String reason = null;
            row.generated(tokens[i]);
            if (row.generated >= row.maxTokens) {
                reason = "length";
            }
            if (row.isStop(tokens[i])) {
                reason = "stop";
            }
            out.add(new BatchToken(row.uid, tokens[i], currentLogprobs.get(i), reason));
            if (reason == null) {
                keep[kept++] = i;
            } else {
                if (finished != null) {
                    caches.withRow(i, c -> finished.finished(row.uid, row.cachedSequence(), c));
                }
                // The row leaves: its sampling run closes (an unseeded row hands its key back).
                row.closeRun();
            }
        }
        if (kept < rows.size()) {
            filter(java.util.Arrays.copyOf(keep, kept));
        }
        return out;
    }

    /** {@code _step()}: returns the current step's tokens; the next step is already submitted. */
    private int[] step() {
        closeCurrent();
        currentTokens = nextTokens;
        currentLogprobs = nextLogprobs;
        nextTokens = null;
        nextLogprobs = new ArrayList<>(rows.size());
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray inputs = currentTokens;
            int b = rows.size();
            MlxArray logits = model.forward(Mlx.expandDims(inputs, 1), caches.layers());
            int length = logits.dim(1);
            int vocab = logits.dim(2);
            logits = Mlx.squeeze(
                    Mlx.slice(logits, new int[] {0, length - 1, 0}, new int[] {b, length, vocab}, new int[] {1, 1, 1}),
                    1);
            int[] read = consumeMaskedTokens(inputs, logits);
            boolean anyProcessors = read != null;
            boolean allGreedy = true;
            for (Row r : rows) {
                anyProcessors |= r.sampling.hasProcessors();
                allGreedy &= r.sampling.params().greedy();
            }
            if (anyProcessors) {
                MlxArray[] processed = new MlxArray[b];
                for (int e = 0; e < b; e++) {
                    MlxArray rowLogits = rowSlice(logits, e);
                    Row row = rows.get(e);
                    if (row.sampling.hasProcessors()) {
                        MlxArray input = Mlx.slice(inputs, new int[] {e}, new int[] {e + 1}, new int[] {1});
                        rowLogits = row.sampling.process(input, 1, rowLogits);
                    }
                    if (row.mask != null) {
                        MlxArray allowed = row.mask.next();
                        if (allowed != null) {
                            rowLogits = TokenMask.apply(allowed, rowLogits);
                        }
                        row.maskStarted = true;
                    }
                    processed[e] = rowLogits;
                }
                logits = Mlx.concatenate(0, processed);
            }
            MlxArray logprobs = Mlx.subtract(logits, Mlx.logsumexp(model.cpuKernels(), logits, -1, true));
            MlxArray sampled;
            if (allGreedy) {
                sampled = Mlx.argmax(logprobs, -1, false);
            } else {
                MlxArray[] each = new MlxArray[b];
                for (int e = 0; e < b; e++) {
                    each[e] = rows.get(e).sampling.sample(rowSlice(logprobs, e));
                }
                sampled = Mlx.concatenate(0, each);
            }
            nextTokens = sampled.detach();
            MlxArray[] submit = new MlxArray[b + 1];
            submit[0] = nextTokens;
            for (int e = 0; e < b; e++) {
                MlxArray row = Mlx.squeeze(rowSlice(logprobs, e), 0).detach();
                nextLogprobs.add(row);
                submit[e + 1] = row;
            }
            Mlx.asyncEval(submit);
            MlxArray[] now = new MlxArray[currentLogprobs.size() + 1];
            now[0] = inputs;
            for (int e = 0; e < currentLogprobs.size(); e++) {
                now[e + 1] = currentLogprobs.get(e);
            }
            Mlx.eval(now);
            return read != null ? read : inputs.toIntArray();
        }
    }

    /**
     * When some row is constrained, submits {@code logits} (the next step's forward, which runs
     * meanwhile), reads the current tokens (the next step's masks follow them) and hands each
     * constrained row's token to its constraint; notes in
     * {@link #failedRows} the rows whose current token is unusable (their step had no mask, or
     * the constraint refused the token). Returns the tokens read, or null when no row is
     * constrained (the step then stays pipelined and nothing is read here).
     */
    private int[] consumeMaskedTokens(MlxArray inputs, MlxArray logits) {
        int b = rows.size();
        if (failedRows.length != b) {
            failedRows = new boolean[b];
        } else {
            java.util.Arrays.fill(failedRows, false);
        }
        boolean any = false;
        for (Row r : rows) {
            any |= r.mask != null;
        }
        if (!any) {
            return null;
        }
        Mlx.asyncEval(logits);
        int[] read = inputs.toIntArray();
        for (int e = 0; e < b; e++) {
            Row r = rows.get(e);
            if (r.mask != null && r.maskStarted) {
                failedRows[e] = r.mask.failure() != null || !r.mask.consume(read[e]);
            }
        }
        return read;
    }

    private static MlxArray rowSlice(MlxArray x, int row) {
        return Mlx.slice(x, new int[] {row, 0}, new int[] {row + 1, x.dim(1)}, new int[] {1, 1});
    }

    /** In-place {@code filter(keep)}: rows, caches, pending tokens and logprobs. */
    void filter(int[] keep) {
        List<Row> kept = new ArrayList<>(keep.length);
        List<MlxArray> keptLogprobs = new ArrayList<>(keep.length);
        boolean[] stays = new boolean[rows.size()];
        for (int k : keep) {
            kept.add(rows.get(k));
            keptLogprobs.add(nextLogprobs.get(k));
            stays[k] = true;
        }
        for (int i = 0; i < stays.length; i++) {
            if (!stays[i]) {
                nextLogprobs.get(i).close();
            }
        }
        rows.clear();
        rows.addAll(kept);
        nextLogprobs = keptLogprobs;
        if (keep.length == 0) {
            caches.close();
            caches = null;
            nextTokens.close();
            nextTokens = null;
            return;
        }
        caches.filter(keep);
        try (ArrayScope scope = ArrayScope.open()) {
            MlxArray old = nextTokens;
            nextTokens = Mlx.take(old, Mlx.fromInts(keep, keep.length), 0).detach();
            old.close();
        }
    }

    /**
     * {@code extend(batch)}: {@code other}'s rows appended (caches merged as mlx-lm's
     * {@code _extend_cache}: an empty batch adopts the other's caches as they are).
     */
    void extend(GenerationBatch other) {
        rows.addAll(other.rows);
        if (caches == null) {
            caches = other.caches;
        } else if (other.caches != null) {
            caches.extend(other.caches);
            other.caches.close();
        }
        other.caches = null;
        if (nextTokens == null) {
            nextTokens = other.nextTokens;
        } else if (other.nextTokens != null) {
            try (ArrayScope scope = ArrayScope.open()) {
                MlxArray a = nextTokens;
                nextTokens = Mlx.concatenate(0, a, other.nextTokens).detach();
                a.close();
                other.nextTokens.close();
            }
        }
        other.nextTokens = null;
        nextLogprobs.addAll(other.nextLogprobs);
        other.nextLogprobs = new ArrayList<>();
        other.rows.clear();
        other.close();
    }

    /** Frees the current step's outputs (read by the caller); the pending step is untouched. */
    void closeCurrent() {
        if (currentTokens != null) {
            currentTokens.close();
            currentTokens = null;
        }
        for (MlxArray a : currentLogprobs) {
            a.close();
        }
        currentLogprobs = new ArrayList<>();
    }

    @Override
    public void close() {
        closeCurrent();
        if (nextTokens != null) {
            nextTokens.close();
            nextTokens = null;
        }
        for (MlxArray a : nextLogprobs) {
            a.close();
        }
        nextLogprobs = new ArrayList<>();
        if (caches != null) {
            caches.close();
            caches = null;
        }
    }
}
