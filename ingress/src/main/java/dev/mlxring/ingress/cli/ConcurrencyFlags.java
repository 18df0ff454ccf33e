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
 */
final class ConcurrencyFlags {
    static final List<String> NAMES = List.of("--decode-concurrency", "--batch", "--prompt-concurrency", "--kv-budget");
    static final int DEFAULT_DECODE_CONCURRENCY = 8;
    /** mlx_lm.server's default. */
    static final int DEFAULT_PROMPT_CONCURRENCY = 8;

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
        return config.withConcurrency(decode, prompt).withKvBudget(budget);
    }
}
