package dev.mlxring.exec.sample;

import dev.mlxring.mlx.MlxArray;

/**
 * One of mlx-lm's logits processors: {@code processor(tokens, logits) -> logits}, with
 * {@code tokens} the 1-D history (prompt + generated so far, including the step's input) and
 * {@code logits} the step's {@code [1, V]} logits. Results belong to the current ArrayScope.
 */
public interface LogitsProcessor {
    MlxArray apply(MlxArray tokens, int historyLength, MlxArray logits);

    /** How many trailing history tokens this processor reads; 0 = all of them, -1 = none. */
    int contextSize();
}
