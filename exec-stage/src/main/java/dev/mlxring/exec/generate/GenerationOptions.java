package dev.mlxring.exec.generate;

/**
 * Settings of one greedy generation, named as mlx-lm names them.
 *
 * @param maxTokens tokens to generate at most ({@code max_tokens})
 * @param prefillStepSize prompt tokens per prefill chunk ({@code prefill_step_size}, mlx-lm: 2048)
 * @param stopTokenIds ids that end generation without being emitted (EOS); empty = never stop early
 * @param captureFirstStep keep the first step's logits and logprobs bytes (parity checks)
 */
public record GenerationOptions(int maxTokens, int prefillStepSize, int[] stopTokenIds, boolean captureFirstStep) {
    public static final int DEFAULT_PREFILL_STEP_SIZE = 2048;

    public GenerationOptions {
        if (maxTokens < 0) {
            throw new IllegalArgumentException("maxTokens must be >= 0, got " + maxTokens);
        }
        if (prefillStepSize < 1) {
            throw new IllegalArgumentException("prefillStepSize must be >= 1, got " + prefillStepSize);
        }
        stopTokenIds = stopTokenIds.clone();
    }

    boolean isStop(int token) {
        for (int id : stopTokenIds) {
            if (id == token) {
                return true;
            }
        }
        return false;
    }
}
