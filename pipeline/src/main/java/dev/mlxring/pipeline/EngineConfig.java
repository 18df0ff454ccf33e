package dev.mlxring.pipeline;

/**
 * Sizes and policies of the stage pipeline, fixed at construction. A host names the knobs it
 * sets through {@link #builder()}, which starts from {@link #defaults()}:
 *
 * <pre>{@code
 * EngineConfig config = EngineConfig.builder()
 *         .decodeConcurrency(8)      // up to 8 sessions at once as rows of one batch
 *         .promptConcurrency(4)      // 4 of them reading prompts at once
 *         .waitMode(WaitMode.BLOCKING)
 *         .kvBudgetBytes(4_000_000_000L)
 *         .build();
 * }</pre>
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
public record EngineConfig(
        int requestRingSize,
        int tokenRingSize,
        int prepShards,
        int maxQueued,
        int creditsPerSession,
        long idleConsumerTimeoutNs,
        int maxTopLogprobs,
        WaitMode waitMode,
        int decodeConcurrency,
        int promptConcurrency,
        long kvBudgetBytes,
        double prefillShare,
        boolean shortPromptsFirst) {

    /** The default {@link #prefillShare}: prefill and running rows split exec's time evenly. */
    public static final double DEFAULT_PREFILL_SHARE = 0.5;
    /**
     * The most rows reading prompts at once when a builder sets {@link #decodeConcurrency} alone
     * (mlx_lm.server's default; fewer when the decode concurrency is lower).
     */
    public static final int DEFAULT_PROMPT_CONCURRENCY = 8;

    /**
     * The defaults: 1024 request-ring and 4096 token-ring slots, 2 prep threads, 256 sessions
     * queued at most, 512 credits per session, a paused row cancelled after 30 s, top_logprobs up
     * to 20, {@link WaitMode#BLOCKING}, and sessions run strictly one after another (decode and
     * prompt concurrency 1, no KV budget): numerics that never depend on load. For batching, set
     * {@link Builder#decodeConcurrency}.
     */
    public static EngineConfig defaults() {
        return new EngineConfig(
                1024, 4096, 2, 256, 512, 30_000_000_000L, 20, WaitMode.BLOCKING, 1, 1, 0, DEFAULT_PREFILL_SHARE, true);
    }

    /** A builder that starts from {@link #defaults()}. */
    public static Builder builder() {
        return new Builder(defaults());
    }

    /** A builder that starts from this configuration. */
    public Builder toBuilder() {
        return new Builder(this);
    }

    public EngineConfig {
        requirePowerOfTwo("requestRingSize", requestRingSize);
        requirePowerOfTwo("tokenRingSize", tokenRingSize);
        if (prepShards < 1
                || maxQueued < 1
                || creditsPerSession < 1
                || idleConsumerTimeoutNs <= 0
                || maxTopLogprobs < 0
                || decodeConcurrency < 1
                || promptConcurrency < 1
                || kvBudgetBytes < 0
                || !(prefillShare > 0 && prefillShare <= 1)) {
            throw new IllegalArgumentException("invalid engine config: " + this);
        }
    }

    private static void requirePowerOfTwo(String name, int v) {
        if (v < 1 || Integer.bitCount(v) != 1) {
            throw new IllegalArgumentException(name + " must be a power of two, got " + v);
        }
    }

    /** How idle stage threads wait. */
    public EngineConfig withWaitMode(WaitMode mode) {
        return toBuilder().waitMode(mode).build();
    }

    /** Admitted sessions not yet settled at most, running ones included. */
    public EngineConfig withMaxQueued(int n) {
        return toBuilder().maxQueued(n).build();
    }

    /** Undelivered spans a session may hold, and how long a paused row waits for credits. */
    public EngineConfig withCredits(int credits, long idleTimeoutNs) {
        return toBuilder()
                .creditsPerSession(credits)
                .idleConsumerTimeoutNs(idleTimeoutNs)
                .build();
    }

    /** Request-ring slots, a power of two. */
    public EngineConfig withRequestRingSize(int n) {
        return toBuilder().requestRingSize(n).build();
    }

    /** Admission holds rows back while the batch's projected KV bytes would exceed {@code bytes} (0 = no limit). */
    public EngineConfig withKvBudget(long bytes) {
        return toBuilder().kvBudgetBytes(bytes).build();
    }

    /**
     * Up to {@code decode} sessions run at once as rows of one batch, {@code prompt} of them
     * reading their prompts ({@code prompt} is capped at {@code decode}).
     */
    public EngineConfig withConcurrency(int decode, int prompt) {
        return toBuilder()
                .decodeConcurrency(decode)
                .promptConcurrency(Math.min(prompt, decode))
                .build();
    }

    /**
     * Prefill interleaving: chunks take at most {@code share} of exec's time while rows generate,
     * and short prompts are read ahead of a long one's chunks when {@code shortFirst}.
     * {@code (1.0, false)} is mlx-lm's {@code BatchGenerator} unit for unit.
     */
    public EngineConfig withPrefillInterleave(double share, boolean shortFirst) {
        return toBuilder().prefillShare(share).shortPromptsFirst(shortFirst).build();
    }

    /**
     * Names each knob of an {@link EngineConfig}; what is not set keeps the value the builder
     * started from. Each setter refuses an out-of-range value at once, naming it; {@link #build()}
     * refuses a prompt concurrency above the decode concurrency.
     */
    public static final class Builder {
        private int requestRingSize;
        private int tokenRingSize;
        private int prepShards;
        private int maxQueued;
        private int creditsPerSession;
        private long idleConsumerTimeoutNs;
        private int maxTopLogprobs;
        private WaitMode waitMode;
        private int decodeConcurrency;
        private boolean decodeConcurrencySet;
        private int promptConcurrency;
        private boolean promptConcurrencySet;
        private long kvBudgetBytes;
        private double prefillShare;
        private boolean shortPromptsFirst;

        private Builder(EngineConfig from) {
            requestRingSize = from.requestRingSize;
            tokenRingSize = from.tokenRingSize;
            prepShards = from.prepShards;
            maxQueued = from.maxQueued;
            creditsPerSession = from.creditsPerSession;
            idleConsumerTimeoutNs = from.idleConsumerTimeoutNs;
            maxTopLogprobs = from.maxTopLogprobs;
            waitMode = from.waitMode;
            decodeConcurrency = from.decodeConcurrency;
            promptConcurrency = from.promptConcurrency;
            kvBudgetBytes = from.kvBudgetBytes;
            prefillShare = from.prefillShare;
            shortPromptsFirst = from.shortPromptsFirst;
        }

        /**
         * The most sessions run at once as rows of one batch (at least 1; 1 = strictly one after
         * another). Without {@link #promptConcurrency}, {@code min(n, }{@link #DEFAULT_PROMPT_CONCURRENCY}{@code )}
         * of them read their prompts at once.
         */
        public Builder decodeConcurrency(int n) {
            decodeConcurrency = atLeast("decodeConcurrency", n, 1);
            decodeConcurrencySet = true;
            return this;
        }

        /** The most rows reading their prompts at once (at least 1, at most the decode concurrency). */
        public Builder promptConcurrency(int n) {
            promptConcurrency = atLeast("promptConcurrency", n, 1);
            promptConcurrencySet = true;
            return this;
        }

        /** How idle stage threads wait. */
        public Builder waitMode(WaitMode mode) {
            waitMode = java.util.Objects.requireNonNull(mode, "waitMode");
            return this;
        }

        /** The most KV-cache bytes the batch's rows may be projected to hold; 0 = no limit. */
        public Builder kvBudgetBytes(long bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException("kvBudgetBytes must be >= 0 (0 = no limit), got " + bytes);
            }
            kvBudgetBytes = bytes;
            return this;
        }

        /** The largest share of exec's time prompt chunks take while rows generate, in (0, 1]. */
        public Builder prefillShare(double share) {
            if (!(share > 0 && share <= 1)) {
                throw new IllegalArgumentException("prefillShare must be in (0, 1], got " + share);
            }
            prefillShare = share;
            return this;
        }

        /** Whether a prompt that fits in one chunk is read ahead of a long prompt's remaining chunks. */
        public Builder shortPromptsFirst(boolean on) {
            shortPromptsFirst = on;
            return this;
        }

        /** Admitted sessions not yet settled at most, running ones included; beyond it: overloaded. */
        public Builder maxQueued(int n) {
            maxQueued = atLeast("maxQueued", n, 1);
            return this;
        }

        /** Parallel prep threads (chat template and tokenization). */
        public Builder prepShards(int n) {
            prepShards = atLeast("prepShards", n, 1);
            return this;
        }

        /** Request-ring slots, a power of two: submissions beyond it are refused as overloaded. */
        public Builder requestRingSize(int slots) {
            requestRingSize = powerOfTwo("requestRingSize", slots);
            return this;
        }

        /** Token-ring slots between exec and sink, a power of two. */
        public Builder tokenRingSize(int slots) {
            tokenRingSize = powerOfTwo("tokenRingSize", slots);
            return this;
        }

        /** Undelivered spans a session may hold before its row pauses. */
        public Builder creditsPerSession(int credits) {
            creditsPerSession = atLeast("creditsPerSession", credits, 1);
            return this;
        }

        /** How long a paused row waits for credits before it is cancelled, in nanoseconds. */
        public Builder idleConsumerTimeoutNs(long timeoutNs) {
            if (timeoutNs <= 0) {
                throw new IllegalArgumentException("idleConsumerTimeoutNs must be > 0, got " + timeoutNs);
            }
            idleConsumerTimeoutNs = timeoutNs;
            return this;
        }

        /** The largest top_logprobs a request may ask for. */
        public Builder maxTopLogprobs(int n) {
            maxTopLogprobs = atLeast("maxTopLogprobs", n, 0);
            return this;
        }

        public EngineConfig build() {
            int prompt = promptConcurrencySet || !decodeConcurrencySet
                    ? promptConcurrency
                    : Math.min(decodeConcurrency, DEFAULT_PROMPT_CONCURRENCY);
            if (prompt > decodeConcurrency) {
                throw new IllegalArgumentException("promptConcurrency (" + prompt
                        + ") must be at most decodeConcurrency (" + decodeConcurrency + ")");
            }
            return new EngineConfig(
                    requestRingSize,
                    tokenRingSize,
                    prepShards,
                    maxQueued,
                    creditsPerSession,
                    idleConsumerTimeoutNs,
                    maxTopLogprobs,
                    waitMode,
                    decodeConcurrency,
                    prompt,
                    kvBudgetBytes,
                    prefillShare,
                    shortPromptsFirst);
        }

        private static int atLeast(String name, int n, int min) {
            if (n < min) {
                throw new IllegalArgumentException(name + " must be >= " + min + ", got " + n);
            }
            return n;
        }

        private static int powerOfTwo(String name, int n) {
            requirePowerOfTwo(name, n);
            return n;
        }
    }
}
