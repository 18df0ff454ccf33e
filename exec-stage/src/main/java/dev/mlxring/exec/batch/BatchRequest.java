package dev.mlxring.exec.batch;

import dev.mlxring.exec.sample.SamplingParams;

/**
 * One row to insert into a {@link BatchGenerator} ({@code BatchGenerator.insert}'s per-sequence
 * arguments): the prompt's token ids, the most tokens to generate, the row's own sampling settings
 * (sampler, logits processors, seed) and the token ids that end it (each a one-token stop
 * sequence, as the tokenizer's EOS ids are).
 */
public record BatchRequest(int[] prompt, int maxTokens, SamplingParams sampling, int[] stopTokenIds) {
    public BatchRequest {
        prompt = prompt.clone();
        stopTokenIds = stopTokenIds.clone();
    }
}
