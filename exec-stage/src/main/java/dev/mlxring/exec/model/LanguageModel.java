package dev.mlxring.exec.model;

import dev.mlxring.exec.kv.KvCache;
import dev.mlxring.mlx.CpuKernels;
import dev.mlxring.mlx.MlxArray;
import dev.mlxring.mlx.Numerics;

/**
 * One forward step of a causal LM (the model layer of docs/architecture.md): token ids {@code [B, L]} and per-layer caches in,
 * logits {@code [B, L, vocab]} out. The contract ends at logits; sampling happens outside.
 * Results belong to the caller's {@link dev.mlxring.mlx.ArrayScope}.
 */
public interface LanguageModel extends AutoCloseable {
    MlxArray forward(MlxArray inputs, KvCache[] cache);

    /** {@code keep} of the rotating caches {@code make_prompt_cache(model, max_kv_size)} makes. */
    int MAX_KV_SIZE_KEEP = 4;

    /** Fresh caches, one per layer ({@code make_prompt_cache(model)}). */
    default KvCache[] newCache() {
        return newCache(0);
    }

    /**
     * Fresh caches, one per layer: mlx-lm's {@code make_prompt_cache(model, max_kv_size)}. A
     * family with its own layout ({@code make_cache}, e.g. sliding-window layers) returns it and
     * ignores {@code maxKvSize}, as mlx-lm does; the others return full-precision caches, or with
     * {@code maxKvSize > 0} rotating caches of that size keeping the first
     * {@value #MAX_KV_SIZE_KEEP} positions.
     *
     * @param maxKvSize 0 for none
     */
    KvCache[] newCache(int maxKvSize);

    /** Whether the family lays out its own caches ({@code make_cache}), so {@code max_kv_size} does not apply. */
    default boolean hasOwnCacheLayout() {
        return false;
    }

    String modelType();

    /**
     * Why this model cannot run over quantized KV caches ({@code --kv-bits}) whatever its cache
     * layout, or null when it can (e.g. gemma4_text's KV-shared layers, which would be handed the
     * quantized tuples that mlx-lm's attention cannot take either).
     */
    default String kvQuantizationRefusal() {
        return null;
    }

    /**
     * Whether several rows can share one forward ({@code BatchKvCache}: per-row rope offsets and
     * an array mask). False for dynamic-NTK rope, whose base depends on one int offset (mlx-lm's
     * batch fails there too); such a model runs its rows one at a time.
     */
    default boolean batchable() {
        return false;
    }

    /**
     * Whether rows with quantized KV caches ({@code --kv-bits}) can share one forward
     * ({@link dev.mlxring.exec.kv.BatchQuantizedKvCache}: every attention layer takes it). False
     * by default: such rows then run alone, as mlx_lm.server runs them.
     */
    default boolean batchesQuantizedKv() {
        return false;
    }

    int vocabSize();

    /**
     * Refuses a prompt this model cannot read: empty, or holding an id outside {@code [0,
     * vocabSize())}. Every run and batch row checks its prompt here before any forward.
     *
     * @throws IllegalArgumentException naming the first bad token and its position
     */
    default void checkPrompt(int[] prompt) {
        if (prompt.length == 0) {
            throw new IllegalArgumentException("prompt must hold at least one token");
        }
        int vocab = vocabSize();
        for (int i = 0; i < prompt.length; i++) {
            if (prompt[i] < 0 || prompt[i] >= vocab) {
                throw new IllegalArgumentException("prompt token " + prompt[i] + " at position " + i
                        + " is outside the vocabulary [0, " + vocab + ")");
            }
        }
    }

    /**
     * The kernels the model was loaded with ({@code --cpu-kernels}); the sampling step evaluates
     * its logsumexp with them too.
     */
    default CpuKernels cpuKernels() {
        return CpuKernels.MLX;
    }

    /** The numerics tier the model was loaded with ({@code --numerics}). */
    default Numerics numerics() {
        return Numerics.EXACT;
    }

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

    /**
     * The fingerprint of the adapter applied at load ({@link dev.mlxring.exec.nn.LoraAdapter#fingerprint}),
     * or "" without one: the adapter slot of the prefix cache's namespace.
     */
    default String adapterFingerprint() {
        return "";
    }

    /**
     * The model's slots for named adapters chosen per row ({@link Models#load} with
     * {@code adapterSlots}), or null when it was built without them.
     */
    default dev.mlxring.exec.nn.AdapterSlots adapterSlots() {
        return null;
    }

    @Override
    void close();
}
