package dev.mlxring.exec.spec;

import dev.mlxring.exec.generate.GenerationOptions;
import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.sample.SamplingRun;

/**
 * How a run speculates: which {@link DraftSource} proposes and how many tokens it may propose per
 * round ({@code num_draft_tokens}). Immutable; {@link #open} makes one row's source.
 */
public sealed interface Speculation {
    /** mlx-lm's default {@code num_draft_tokens} (mlx_lm.generate's {@code --num-draft-tokens}). */
    int DEFAULT_NUM_DRAFT_TOKENS = 3;

    /** The most tokens one round proposes ({@code num_draft_tokens}). */
    int numDraftTokens();

    /** A fresh source for one row, borrowing the row's sampling (its sampler and key). */
    DraftSource open(SamplingRun sampling, GenerationOptions options);

    /**
     * A draft model ({@code --draft-model DIR}); it must share the target's tokenizer (checked
     * where both are loaded).
     */
    record DraftModel(LanguageModel model, int numDraftTokens) implements Speculation {
        public DraftModel {
            checkCount(numDraftTokens);
        }

        @Override
        public DraftSource open(SamplingRun sampling, GenerationOptions options) {
            return new DraftModelSource(model, sampling, options.prefillStepSize(), options.kvQuantization());
        }
    }

    /** Prompt lookup over n-grams of {@code minN..maxN} tokens ({@link PromptLookupSource}). */
    record PromptLookup(int minN, int maxN, int numDraftTokens) implements Speculation {
        public PromptLookup {
            checkCount(numDraftTokens);
            if (minN < 1 || maxN < minN) {
                throw new IllegalArgumentException(
                        "n-gram sizes must satisfy 1 <= min <= max, got min " + minN + " and max " + maxN);
            }
        }

        @Override
        public DraftSource open(SamplingRun sampling, GenerationOptions options) {
            return new PromptLookupSource(minN, maxN);
        }
    }

    private static void checkCount(int numDraftTokens) {
        if (numDraftTokens < 1) {
            throw new IllegalArgumentException("--num-draft-tokens must be >= 1, got " + numDraftTokens);
        }
    }
}
