package dev.mlxring.exec.shard;

import dev.mlxring.pipeline.BatchStep;
import dev.mlxring.pipeline.StepResult;

/**
 * A 64-bit digest of what one unit committed (each entry's row, kind and token), which rank 0
 * sends with the next call so every other rank can check that its own unit committed the same:
 * the ranks sample from the same logits, so they agree unless something on one rank went
 * another way. Not a cryptographic hash; a mismatch is certain evidence, a match is very likely.
 */
final class StepDigest {
    private StepDigest() {}

    static long of(BatchStep step) {
        long h = 0x9E3779B97F4A7C15L;
        for (int i = 0; i < step.count; i++) {
            h = mix(h, step.rows[i], step.results[i]);
        }
        return h;
    }

    static long of(StepResult r) {
        return mix(0x9E3779B97F4A7C15L, 0, r);
    }

    private static long mix(long h, int row, StepResult r) {
        h = (h ^ row) * 0x100000001B3L;
        h = (h ^ r.kind.ordinal()) * 0x100000001B3L;
        // Only a TOKEN entry's token is meaningful (the others leave the field as it was).
        return r.kind == StepResult.Kind.TOKEN ? (h ^ r.token) * 0x100000001B3L : h;
    }
}
