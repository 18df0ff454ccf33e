package dev.mlxring.pipeline;

/**
 * What one {@link ExecutionBatch#step} committed, as parallel arrays of {@link #count} entries in
 * commit order: the row, its {@link StepResult} ({@code TOKEN}, {@code FINISHED} or {@code FAILED})
 * and, for a {@code FINISHED} or {@code FAILED} entry, the row's usage. A row contributes one entry
 * per token it committed in the step (one, or for a speculating row its accepted tokens and the
 * target's next one), then its end. Allocated with room for two entries per row and grown (doubled)
 * when a step commits more; reused by every step, so read the arrays after the step, not before.
 */
public final class BatchStep {
    public int count;
    public int[] rows;
    public StepResult[] results;
    public Usage[] usages;

    private final int maxTopLogprobs;

    /** Room for {@code maxRows} rows' entries, each with up to {@code maxTopLogprobs} alternatives. */
    public BatchStep(int maxRows, int maxTopLogprobs) {
        this.maxTopLogprobs = maxTopLogprobs;
        int capacity = Math.max(2, 2 * maxRows);
        rows = new int[0];
        results = new StepResult[0];
        usages = new Usage[0];
        grow(capacity);
    }

    private void grow(int capacity) {
        int old = rows.length;
        rows = java.util.Arrays.copyOf(rows, capacity);
        results = java.util.Arrays.copyOf(results, capacity);
        usages = java.util.Arrays.copyOf(usages, capacity);
        for (int i = old; i < capacity; i++) {
            results[i] = new StepResult(maxTopLogprobs);
        }
    }

    /** Appends an entry; returns its result object for the caller to fill. */
    public StepResult add(int row) {
        if (count == rows.length) {
            grow(2 * rows.length);
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
