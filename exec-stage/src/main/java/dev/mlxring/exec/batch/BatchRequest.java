package dev.mlxring.exec.batch;

import dev.mlxring.exec.nn.AdapterCache;
import dev.mlxring.exec.spec.Speculation;
import dev.mlxring.pipeline.KvQuantization;
import dev.mlxring.pipeline.SamplingParams;
import dev.mlxring.pipeline.TokenConstraint;

/**
 * One row to insert into a {@link BatchGenerator} ({@code BatchGenerator.insert_segments}'s
 * per-sequence arguments): the prompt's token ids, optionally split into segments (a prefill
 * chunk never crosses a segment boundary, and the generator reports each segment's end), the most
 * tokens to generate, the row's own sampling settings (sampler, logits processors, seed) and the
 * token ids that end it (each a one-token stop sequence, as the tokenizer's EOS ids are), and
 * optionally its token constraint (a per-row logits mask after its own processors).
 *
 * @param segmentLengths positive lengths summing to the prompt's, or null for one segment
 * @param constraint the row's token constraint, or null; the generator owns it from
 *     {@link BatchGenerator#insert} on and closes it when the row leaves
 * @param speculation how the row speculates, or null for never; a row that cannot
 *     ({@link dev.mlxring.exec.spec.SpeculativeRun#refusal}, or a constraint) decodes without
 * @param kvQuantization the row's KV quantization ({@code --kv-bits}), or null for full
 *     precision: after each forward its layers holding at least {@code quantizedKvStart}
 *     positions become quantized, as generate_step's {@code maybe_quantize_kv_cache}; rows of one
 *     generator share one scheme ({@link BatchGenerator#insert})
 * @param adapter the row's hold on its named adapter, or null for the base model; the generator
 *     owns it from {@link BatchGenerator#insert} on and closes it when the row leaves
 */
public record BatchRequest(
        int[] prompt,
        int[] segmentLengths,
        int maxTokens,
        SamplingParams sampling,
        int[] stopTokenIds,
        TokenConstraint constraint,
        Speculation speculation,
        KvQuantization kvQuantization,
        AdapterCache.Lease adapter) {
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

    /** A full-precision row on the base model. */
    public BatchRequest(
            int[] prompt,
            int[] segmentLengths,
            int maxTokens,
            SamplingParams sampling,
            int[] stopTokenIds,
            TokenConstraint constraint,
            Speculation speculation) {
        this(prompt, segmentLengths, maxTokens, sampling, stopTokenIds, constraint, speculation, null, null);
    }

    /** A row without speculation. */
    public BatchRequest(
            int[] prompt,
            int[] segmentLengths,
            int maxTokens,
            SamplingParams sampling,
            int[] stopTokenIds,
            TokenConstraint constraint) {
        this(prompt, segmentLengths, maxTokens, sampling, stopTokenIds, constraint, null);
    }

    /** An unconstrained row. */
    public BatchRequest(
            int[] prompt, int[] segmentLengths, int maxTokens, SamplingParams sampling, int[] stopTokenIds) {
        this(prompt, segmentLengths, maxTokens, sampling, stopTokenIds, null);
    }

    /** An unconstrained row of one segment ({@code insert}). */
    public BatchRequest(int[] prompt, int maxTokens, SamplingParams sampling, int[] stopTokenIds) {
        this(prompt, null, maxTokens, sampling, stopTokenIds, null);
    }
}
