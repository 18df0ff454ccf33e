package dev.mlxring.ingress.pool;

/**
 * The byte cap of each pooled model's RAM prefix cache under a {@link MemoryBudget}: {@code
 * --prompt-cache-bytes} when given, else {@link #DEFAULT_FRACTION_OF_BUDGET} of the budget; 0
 * when the cache is off ({@code --prompt-cache-size 0}). The pool counts the cap in the model's
 * resident bytes, reserved from its load to its unload, so the snapshots the cache keeps after
 * their requests settle stay inside the budget.
 */
public final class PromptCacheCap {
    /** The share of the budget each model's prefix cache may hold when {@code --prompt-cache-bytes} is not given. */
    public static final double DEFAULT_FRACTION_OF_BUDGET = 0.10;

    private PromptCacheCap() {}

    /**
     * @param budgetBytes {@code --memory-budget}
     * @param maxEntries {@code --prompt-cache-size} (0: the cache is off)
     * @param givenBytes {@code --prompt-cache-bytes}, or a negative number when it was not given
     * @return the cap in bytes
     */
    public static long bytes(long budgetBytes, int maxEntries, long givenBytes) {
        if (maxEntries == 0) {
            return 0;
        }
        return givenBytes >= 0 ? givenBytes : defaultBytes(budgetBytes);
    }

    /** {@link #DEFAULT_FRACTION_OF_BUDGET} of {@code budgetBytes}, rounded down. */
    public static long defaultBytes(long budgetBytes) {
        return (long) (budgetBytes * DEFAULT_FRACTION_OF_BUDGET);
    }
}
