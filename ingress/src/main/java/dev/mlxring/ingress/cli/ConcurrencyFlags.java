package dev.mlxring.ingress.cli;

import dev.mlxring.pipeline.EngineConfig;
import java.util.List;

/**
 * {@code serve}'s batching flags, named as mlx_lm.server's: {@code --decode-concurrency N} (alias
 * {@code --batch}) runs up to N requests at once as rows of one batch, {@code 1} meaning strictly
 * one after another (numerics then never depend on load); {@code --prompt-concurrency M} lets up
 * to M of them read their prompts at once (at most N). {@code --kv-budget BYTES} holds new rows
 * back while the batch's projected KV cache (every row at prompt + max_tokens, padded to the
 * longest) would exceed BYTES; a request that alone would exceed it is refused.
 * {@code --prefill-share F} (0 &lt; F &le; 1, default 0.5) caps the share of exec's time that
 * prompt chunks take while other rows generate (1 = a chunk every unit, mlx-lm's
 * {@code BatchGenerator}); {@code --short-prompts-first on|off} (default on) reads a prompt that
 * fits in one chunk ahead of a long prompt's remaining chunks. Both change when rows join, never
 * what a forward computes: every row's bytes stay mlx-lm's for the batch it ran in.
 */
final class ConcurrencyFlags {
    /**
     * Rows of one batch by default: 16 streams arriving together all start at once (at 8 the last
     * 8 waited for a whole generation of the first 8 before their first token; docs/benchmarks.md,
     * "Time to first token under load").
     */
    static final int DEFAULT_DECODE_CONCURRENCY = 16;
    /**
     * Rows reading prompts at once by default: the row cap, so a burst of 16 streams is read in one
     * unit (mlx_lm.server's 8 read it in two; at 16 streams that cost 3-9% of the aggregate and
     * 10-14% of TTFT p99, quiet A/B in docs/benchmarks.md, "Time to first token at 16 streams").
     */
    static final int DEFAULT_PROMPT_CONCURRENCY = DEFAULT_DECODE_CONCURRENCY;

    static final List<Flag> FLAGS = List.of(
            Flag.valued(
                    "--decode-concurrency",
                    "N",
                    DEFAULT_DECODE_CONCURRENCY,
                    "requests run at once as rows of one batch (continuous batching); 1 runs them strictly one"
                            + " after another, numerics that never depend on load"),
            Flag.valued("--batch", "N", DEFAULT_DECODE_CONCURRENCY, "alias of --decode-concurrency"),
            Flag.valued(
                    "--prompt-concurrency",
                    "M",
                    DEFAULT_PROMPT_CONCURRENCY + ", at most --decode-concurrency",
                    "rows that may read their prompts at once"),
            Flag.valued(
                    "--kv-budget",
                    "BYTES",
                    "none",
                    "hold new rows back while the batch's projected KV cache would exceed BYTES (500MB, 4GB or a"
                            + " count); a request that alone would is refused"),
            Flag.valued(
                    "--prefill-share",
                    "F",
                    EngineConfig.DEFAULT_PREFILL_SHARE,
                    "the most of exec's time prompt chunks take while other rows generate, in (0, 1]; 1 = mlx-lm's"
                            + " schedule"),
            Flag.valued(
                    "--short-prompts-first",
                    "on|off",
                    "on",
                    "read a prompt that fits in one chunk ahead of a long prompt's remaining chunks"));
    static final List<String> NAMES = Flag.names(FLAGS);

    private ConcurrencyFlags() {}

    static EngineConfig apply(CliArgs a, EngineConfig config) {
        if (a.has("--decode-concurrency") && a.has("--batch")) {
            throw new UsageException("--batch is an alias of --decode-concurrency: give one of them");
        }
        String decodeFlag = a.has("--batch") ? "--batch" : "--decode-concurrency";
        int decode = a.intValue(decodeFlag, DEFAULT_DECODE_CONCURRENCY, 1);
        int prompt = a.intValue("--prompt-concurrency", Math.min(DEFAULT_PROMPT_CONCURRENCY, decode), 1);
        long budget = a.has("--kv-budget") ? PromptCacheFlags.parseSize("--kv-budget", a.get("--kv-budget")) : 0;
        if (a.has("--kv-budget") && budget <= 0) {
            throw new UsageException("--kv-budget must be a positive byte count, got '" + a.get("--kv-budget") + "'");
        }
        double share = a.doubleValue("--prefill-share", EngineConfig.DEFAULT_PREFILL_SHARE);
        if (!(share > 0 && share <= 1)) {
            throw new UsageException("--prefill-share must be in (0, 1] (1 = a prompt chunk in every unit, as mlx-lm),"
                    + " got " + a.get("--prefill-share"));
        }
        String shortFirst =
                a.has("--short-prompts-first") ? a.get("--short-prompts-first").trim() : "on";
        if (!shortFirst.equals("on") && !shortFirst.equals("off")) {
            throw new UsageException("--short-prompts-first must be on or off, got '" + shortFirst + "'");
        }
        return config.withConcurrency(decode, prompt)
                .withKvBudget(budget)
                .withPrefillInterleave(share, shortFirst.equals("on"));
    }
}
