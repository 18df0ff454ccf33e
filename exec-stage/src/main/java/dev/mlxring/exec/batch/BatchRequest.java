package dev.mlxring.exec.batch;

import dev.mlxring.exec.sample.SamplingParams;

/**
 * One row to insert into a {@link BatchGenerator} ({@code BatchGenerator.insert_segments}'s
 * per-sequence arguments): the prompt's token ids, optionally split into segments (a prefill
 * chunk never crosses a segment boundary, and the generator reports each segment's end), the most
 * tokens to generate, the row's own sampling settings (sampler, logits processors, seed) and the
 * token ids that end it (each a one-token stop sequence, as the tokenizer's EOS ids are).
 *
 * @param segmentLengths positive lengths summing to the prompt's, or null for one segment
 */
public record BatchRequest(int[] prompt, int[] segmentLengths, int maxTokens, SamplingParams sampling,
        int[] stopTokenIds) {
    public BatchRequest {
        prompt = prompt.clone();
        stopTokenIds = stopTokenIds.clone();
        if (segmentLengths != null) {
            segmentLengths = segmentLengths.clone();
            long sum = 0;
            for (int l : segmentLengths) {
                if (l <= 0) {
                    throw new IllegalArgumentException("segment lengths must be > 0, got " + l);
                }
                sum += l;
            }
            if (sum != prompt.length) {
                throw new IllegalArgumentException("segments hold " + sum + " tokens, the prompt " + prompt.length);
            }
        }
    }

    /** A row of one segment ({@code insert}). */
    public BatchRequest(int[] prompt, int maxTokens, SamplingParams sampling, int[] stopTokenIds) {
        this(prompt, null, maxTokens, sampling, stopTokenIds);
    }
}
