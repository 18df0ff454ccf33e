package dev.mlxring.exec.batch;

import dev.mlxring.exec.sample.SamplingRun;

/**
 * One sequence's bookkeeping in a {@link BatchGenerator}: its prompt split as mlx-lm's
 * {@code insert} splits it ({@code prompt[:-1]} prefilled in chunks, the last token fed to the
 * first generation step), its sampling run (sampler, processors, key, history), its limits and
 * its count of generated tokens. Exec thread only; the generator closes the sampling run when the
 * row leaves.
 */
final class Row {
    final int uid;
    final int[] prompt;
    final int maxTokens;
    final int[] stopTokenIds;
    final SamplingRun sampling;
    /** Prompt tokens already fed to the model (of the first segment, {@code prompt[:-1]}). */
    int prefilled;
    int generated;

    Row(int uid, int[] prompt, int maxTokens, int[] stopTokenIds, SamplingRun sampling) {
        this.uid = uid;
        this.prompt = prompt;
        this.maxTokens = maxTokens;
        this.stopTokenIds = stopTokenIds;
        this.sampling = sampling;
    }

    /** Tokens of the first segment still to prefill; 0 when only the last prompt token remains. */
    int remainingPrefill() {
        return prompt.length - 1 - prefilled;
    }

    boolean isStop(int token) {
        for (int t : stopTokenIds) {
            if (t == token) {
                return true;
            }
        }
        return false;
    }
}
