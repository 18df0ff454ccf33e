package dev.mlxring.engine;

import dev.mlxring.exec.model.LanguageModel;
import dev.mlxring.exec.model.Models;
import dev.mlxring.exec.spec.Speculation;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.Numerics;
import dev.mlxring.tokenizer.HfTokenizer;
import java.io.IOException;
import java.nio.file.Path;

/**
 * The speculative-decoding settings of {@code serve} and {@code generate} ({@code --speculative},
 * {@code --draft-model}, {@code --num-draft-tokens}, {@code --prompt-lookup-min/max}), before any
 * model is loaded.
 *
 * @param method {@code off}, {@code ngram} (prompt lookup) or {@code draft}
 * @param draftModel the draft model's directory ({@code draft} only, else null)
 * @param numDraftTokens the most tokens proposed per verification step
 * @param lookupMin the smallest n-gram prompt lookup matches ({@code ngram})
 * @param lookupMax the largest, tried first ({@code ngram})
 */
public record SpeculativeDecoding(String method, Path draftModel, int numDraftTokens, int lookupMin, int lookupMax) {
    public static final SpeculativeDecoding OFF = new SpeculativeDecoding("off", null, 0, 0, 0);

    public boolean on() {
        return !method.equals("off");
    }

    /**
     * The {@link Speculation} over {@code model}; for {@code draft}, the draft model loaded with the
     * same kernels after checking that its tokenizer has the model's vocabulary size
     * (mlx_lm.generate's check). The caller owns a loaded draft model ({@code DraftModel.model()}).
     *
     * @throws IllegalArgumentException for a draft whose tokenizer does not match or cannot be read
     */
    public Speculation open(HfTokenizer tokenizer, CpuKernels kernels, Numerics numerics, boolean dequantizedWeights) {
        return switch (method) {
            case "ngram" -> new Speculation.PromptLookup(lookupMin, lookupMax, numDraftTokens);
            case "draft" ->
                new Speculation.DraftModel(loadDraft(tokenizer, kernels, numerics, dequantizedWeights), numDraftTokens);
            default -> throw new IllegalStateException("speculative decoding is off");
        };
    }

    private LanguageModel loadDraft(
            HfTokenizer tokenizer, CpuKernels kernels, Numerics numerics, boolean dequantizedWeights) {
        try (HfTokenizer draftTokenizer = HfTokenizer.load(draftModel)) {
            if (draftTokenizer.vocabSize() != tokenizer.vocabSize()) {
                throw new IllegalArgumentException("the draft model's tokenizer does not match the model's: its "
                        + "vocabulary holds " + draftTokenizer.vocabSize() + " tokens, the model's "
                        + tokenizer.vocabSize() + " (--draft-model " + draftModel + ")");
            }
        } catch (IOException e) {
            throw new IllegalArgumentException(
                    "cannot read the tokenizer of the draft model " + draftModel + ": " + e.getMessage(), e);
        }
        return Models.load(draftModel, kernels, numerics, dequantizedWeights, null);
    }
}
