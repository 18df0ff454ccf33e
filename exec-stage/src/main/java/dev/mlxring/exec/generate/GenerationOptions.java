package dev.mlxring.exec.generate;

import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.pipeline.KvQuantization;

/**
 * Settings of one greedy generation, named as mlx-lm names them.
 *
 * @param maxTokens tokens to generate at most ({@code max_tokens})
 * @param prefillStepSize prompt tokens per prefill chunk ({@code prefill_step_size}, mlx-lm: 2048)
 * @param stopTokenIds ids that end generation without being emitted (EOS); empty = never stop early
 * @param captureFirstStep keep the first step's logits and logprobs bytes (parity checks)
 * @param kvQuantization {@code kv_bits}, {@code kv_group_size} and {@code quantized_kv_start};
 *     null = the full-precision cache throughout ({@code kv_bits=None})
 * @param maxKvSize {@code max_kv_size}: rotating caches of this many positions for a model
 *     without its own cache layout ({@code make_prompt_cache}); 0 = none
 */
public record GenerationOptions(
        int maxTokens,
        int prefillStepSize,
        int[] stopTokenIds,
        boolean captureFirstStep,
        KvQuantization kvQuantization,
        int maxKvSize) {
    public static final int DEFAULT_PREFILL_STEP_SIZE = 2048;

    public GenerationOptions {
        if (maxTokens < 0) {
            throw new IllegalArgumentException("maxTokens must be >= 0, got " + maxTokens);
        }
        if (prefillStepSize < 1) {
            throw new IllegalArgumentException("prefillStepSize must be >= 1, got " + prefillStepSize);
        }
        if (maxKvSize < 0 || (maxKvSize > 0 && maxKvSize <= LanguageModel.MAX_KV_SIZE_KEEP)) {
            // mlx-lm's RotatingKVCache(max_kv_size, keep=4) would write over its kept positions.
            throw new IllegalArgumentException("--max-kv-size must be greater than " + LanguageModel.MAX_KV_SIZE_KEEP
                    + " (the positions it always keeps), got " + maxKvSize);
        }
        stopTokenIds = stopTokenIds.clone();
    }

    /** Options without a KV size limit. */
    public GenerationOptions(
            int maxTokens,
            int prefillStepSize,
            int[] stopTokenIds,
            boolean captureFirstStep,
            KvQuantization kvQuantization) {
        this(maxTokens, prefillStepSize, stopTokenIds, captureFirstStep, kvQuantization, 0);
    }

    /** Options with the full-precision KV cache. */
    public GenerationOptions(int maxTokens, int prefillStepSize, int[] stopTokenIds, boolean captureFirstStep) {
        this(maxTokens, prefillStepSize, stopTokenIds, captureFirstStep, null, 0);
    }

    /** Whether {@code token} is one of the stop ids. */
    public boolean isStop(int token) {
        for (int id : stopTokenIds) {
            if (id == token) {
                return true;
            }
        }
        return false;
    }
}
