package dev.mlxring.pipeline;

/**
 * What one {@link ExecutionBatch#step} committed, as parallel arrays of {@link #count} entries in
 * commit order: the row, its {@link StepResult} ({@code TOKEN}, {@code FINISHED} or {@code FAILED})
 * and, for a {@code FINISHED} or {@code FAILED} entry, the row's usage. A row contributes at most two entries per step (its
 * last token, then its end). Allocated once with room for every row; reused by every step.
 */
public final class BatchStep {
    public int count;
    public final int[] rows;
    public final StepResult[] results;
    public final Usage[] usages;

    /** Room for {@code maxRows} rows' entries, each with up to {@code maxTopLogprobs} alternatives. */
    public BatchStep(int maxRows, int maxTopLogprobs) {
        int capacity = 2 * maxRows;
        rows = new int[capacity];
        results = new StepResult[capacity];
        usages = new Usage[capacity];
        for (int i = 0; i < capacity; i++) {
            results[i] = new StepResult(maxTopLogprobs);
        }
    }

    /** Appends an entry; returns its result object for the caller to fill. */
    public StepResult add(int row) {
        if (count == rows.length) {
            throw new IllegalStateException("batch step holds " + count + " entries already");
        }
        rows[count] = row;
        usages[count] = null;
        return results[count++];
    }

    /** Appends a row's end with its usage. */
    public void finish(int row, String reason, Usage usage) {
        add(row).finished(reason);
        usages[count - 1] = usage;
    }

    /** Appends a row's failure (that row alone ends, with a failed outcome) with its usage. */
    public void fail(int row, Outcome.ErrorType type, String message, Usage usage) {
        add(row).failed(type, message);
        usages[count - 1] = usage;
    }

    public void clear() {
        count = 0;
    }
}
