package dev.mlxring.pipeline;

/**
 * Sizes and policies of the stage pipeline, fixed at construction.
 *
 * @param requestRingSize request-ring slots (power of two): submissions beyond it get 429
 * @param tokenRingSize token-ring slots (power of two) between exec and sink
 * @param prepShards parallel prep threads (requests are sharded by ring sequence)
 * @param maxQueued admitted sessions not yet settled at most, running ones included: beyond it plan
 *     answers 503
 * @param creditsPerSession undelivered spans a session may hold before its row pauses
 * @param idleConsumerTimeoutNs a paused row is cancelled after this long without credits
 * @param maxTopLogprobs the largest top_logprobs a request may ask for (plan refuses more)
 * @param decodeConcurrency the most sessions exec runs at once as rows of one batch
 *     ({@code --decode-concurrency}); 1 = strictly one after another, whatever the executor offers
 * @param promptConcurrency the most of those rows reading their prompts at once ({@code --prompt-concurrency})
 * @param kvBudgetBytes the most KV-cache bytes the batch's rows may be projected to hold
 *     ({@code --kv-budget}); 0 = no limit
 * @param prefillShare the largest share of exec's time that prefill chunks may take while rows
 *     are generating ({@code --prefill-share}, in (0, 1]): every unit that reads prompts earns
 *     the generating rows {@code (1 - share) / share} of its time in decode-only units, taken
 *     before the next chunk (see {@link BatchScheduler}); 1 = a chunk in every unit, as mlx-lm's
 *     {@code BatchGenerator}
 * @param shortPromptsFirst whether a prompt that fits in one chunk is read ahead of a long
 *     prompt's remaining chunks instead of being padded into them ({@code --short-prompts-first})
 */
public record EngineConfig(int requestRingSize, int tokenRingSize, int prepShards, int maxQueued,
        int creditsPerSession, long idleConsumerTimeoutNs, int maxTopLogprobs, WaitMode waitMode,
        int decodeConcurrency, int promptConcurrency, long kvBudgetBytes, double prefillShare,
        boolean shortPromptsFirst) {

    /** The default {@link #prefillShare}: prefill and running rows split exec's time evenly. */
    public static final double DEFAULT_PREFILL_SHARE = 0.5;

    /** A configuration with the default prefill interleaving. */
    public EngineConfig(int requestRingSize, int tokenRingSize, int prepShards, int maxQueued,
            int creditsPerSession, long idleConsumerTimeoutNs, int maxTopLogprobs, WaitMode waitMode,
            int decodeConcurrency, int promptConcurrency, long kvBudgetBytes) {
        this(requestRingSize, tokenRingSize, prepShards, maxQueued, creditsPerSession, idleConsumerTimeoutNs,
                maxTopLogprobs, waitMode, decodeConcurrency, promptConcurrency, kvBudgetBytes, DEFAULT_PREFILL_SHARE,
                true);
    }

    /** A serial configuration (decode and prompt concurrency 1). */
    public EngineConfig(int requestRingSize, int tokenRingSize, int prepShards, int maxQueued, int creditsPerSession,
            long idleConsumerTimeoutNs, int maxTopLogprobs, WaitMode waitMode) {
        this(requestRingSize, tokenRingSize, prepShards, maxQueued, creditsPerSession, idleConsumerTimeoutNs,
                maxTopLogprobs, waitMode, 1, 1, 0);
    }

    public static EngineConfig defaults() {
        return new EngineConfig(1024, 4096, 2, 256, 512, 30_000_000_000L, 20, WaitMode.BLOCKING);
    }

    public EngineConfig {
        requirePowerOfTwo("requestRingSize", requestRingSize);
        requirePowerOfTwo("tokenRingSize", tokenRingSize);
        if (prepShards < 1 || maxQueued < 1 || creditsPerSession < 1 || idleConsumerTimeoutNs <= 0
                || maxTopLogprobs < 0 || decodeConcurrency < 1 || promptConcurrency < 1 || kvBudgetBytes < 0
                || !(prefillShare > 0 && prefillShare <= 1)) {
            throw new IllegalArgumentException("invalid engine config: " + this);
        }
    }

    private static void requirePowerOfTwo(String name, int v) {
        if (v < 1 || Integer.bitCount(v) != 1) {
            throw new IllegalArgumentException(name + " must be a power of two, got " + v);
        }
    }

    public EngineConfig withWaitMode(WaitMode mode) {
        return new EngineConfig(requestRingSize, tokenRingSize, prepShards, maxQueued, creditsPerSession,
                idleConsumerTimeoutNs, maxTopLogprobs, mode, decodeConcurrency, promptConcurrency, kvBudgetBytes,
                prefillShare, shortPromptsFirst);
    }

    public EngineConfig withMaxQueued(int n) {
        return new EngineConfig(requestRingSize, tokenRingSize, prepShards, n, creditsPerSession,
                idleConsumerTimeoutNs, maxTopLogprobs, waitMode, decodeConcurrency, promptConcurrency, kvBudgetBytes,
                prefillShare, shortPromptsFirst);
    }

    public EngineConfig withCredits(int credits, long idleTimeoutNs) {
        return new EngineConfig(requestRingSize, tokenRingSize, prepShards, maxQueued, credits, idleTimeoutNs,
                maxTopLogprobs, waitMode, decodeConcurrency, promptConcurrency, kvBudgetBytes, prefillShare,
                shortPromptsFirst);
    }

    public EngineConfig withRequestRingSize(int n) {
        return new EngineConfig(n, tokenRingSize, prepShards, maxQueued, creditsPerSession, idleConsumerTimeoutNs,
                maxTopLogprobs, waitMode, decodeConcurrency, promptConcurrency, kvBudgetBytes, prefillShare,
                shortPromptsFirst);
    }

    /**
     * Up to {@code decode} sessions run at once as rows of one batch, {@code prompt} of them
     * reading their prompts ({@code prompt} is capped at {@code decode}).
     */
    /** Admission holds rows back while the batch's projected KV bytes would exceed {@code bytes} (0 = no limit). */
    public EngineConfig withKvBudget(long bytes) {
        return new EngineConfig(requestRingSize, tokenRingSize, prepShards, maxQueued, creditsPerSession,
                idleConsumerTimeoutNs, maxTopLogprobs, waitMode, decodeConcurrency, promptConcurrency, bytes,
                prefillShare, shortPromptsFirst);
    }

    public EngineConfig withConcurrency(int decode, int prompt) {
        return new EngineConfig(requestRingSize, tokenRingSize, prepShards, maxQueued, creditsPerSession,
                idleConsumerTimeoutNs, maxTopLogprobs, waitMode, decode, Math.min(prompt, decode), kvBudgetBytes,
                prefillShare, shortPromptsFirst);
    }

    /**
     * Prefill interleaving: chunks take at most {@code share} of exec's time while rows generate,
     * and short prompts are read ahead of a long one's chunks when {@code shortFirst}.
     * {@code (1.0, false)} is mlx-lm's {@code BatchGenerator} unit for unit.
     */
    public EngineConfig withPrefillInterleave(double share, boolean shortFirst) {
        return new EngineConfig(requestRingSize, tokenRingSize, prepShards, maxQueued, creditsPerSession,
                idleConsumerTimeoutNs, maxTopLogprobs, waitMode, decodeConcurrency, promptConcurrency, kvBudgetBytes,
                share, shortFirst);
    }
}
