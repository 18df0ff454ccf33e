package dev.mlxring.exec.model;

import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.mlx.MlxArray;

/**
 * One forward step of a causal LM (seed L1): token ids {@code [B, L]} and per-layer caches in,
 * logits {@code [B, L, vocab]} out. The contract ends at logits; sampling happens outside.
 * Results belong to the caller's {@link dev.mlxring.mlx.ArrayScope}.
 */
public interface LanguageModel extends AutoCloseable {
    MlxArray forward(MlxArray inputs, KvCache[] cache);

    /** Fresh full-precision caches, one per layer ({@code make_prompt_cache}). */
    KvCache[] newCache();

    String modelType();

    /**
     * Whether several rows can share one forward ({@code BatchKvCache}: per-row rope offsets and
     * an array mask). False for dynamic-NTK rope, whose base depends on one int offset (mlx-lm's
     * batch fails there too); such a model runs its rows one at a time.
     */
    default boolean batchable() {
        return false;
    }

    int vocabSize();

    /** The attention head dimension: the last axis of the KV cache, which KV quantization groups. */
    int headDim();

    /** End-of-sequence ids from config.json. */
    int[] eosTokenIds();

    /**
     * How many keys mlx-lm's {@code load_model} draws from {@code mx.random.state} while it builds
     * this model (random initial weights, overwritten by the checkpoint). mlx_lm.generate seeds
     * before loading, so its sampling starts that many splits after {@code key(seed)}.
     */
    default int initRandomDraws() {
        return 0;
    }

    @Override
    void close();
}
