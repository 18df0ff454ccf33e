package dev.mlxring.exec.sample;

import dev.mlxring.mlx.ArrayScope;
import dev.mlxring.mlx.Mlx;
import dev.mlxring.mlx.MlxArray;

/**
 * The logprob report of one generated token, as mlx_lm.server builds it: the chosen token's
 * {@code logprobs[token]} and the top {@code n} by {@code argpartition(-logprobs, kth=n-1)[:n]}
 * (in argpartition's order, not sorted) with {@code logprobs[top_indices]}. Values are the
 * logprob dtype's values widened to float.
 *
 * @param token the chosen token id
 * @param logprob {@code logprobs[token]}
 * @param topIds the top-n ids (empty when n == 0)
 * @param topLogprobs their logprobs
 */
public record TokenLogprobs(int token, float logprob, int[] topIds, float[] topLogprobs) {

    /** Reads the report for {@code token} from a step's {@code [V]} logprobs (evaluates them). */
    public static TokenLogprobs of(MlxArray logprobs, int token, int topN) {
        try (ArrayScope s = ArrayScope.open()) {
            float chosen =
                    Mlx.take(logprobs, Mlx.fromInts(new int[] {token}, 1), 0).toFloatArray()[0];
            if (topN <= 0) {
                return new TokenLogprobs(token, chosen, new int[0], new float[0]);
            }
            MlxArray part = Mlx.argpartition(Mlx.negative(logprobs), topN - 1, -1);
            MlxArray top = Mlx.slice(part, new int[] {0}, new int[] {topN}, new int[] {1});
            int[] ids = top.toIntArray();
            float[] values =
                    Mlx.take(logprobs, Mlx.fromInts(ids, ids.length), 0).toFloatArray();
            return new TokenLogprobs(token, chosen, ids, values);
        }
    }
}
