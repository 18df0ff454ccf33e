package dev.mlxring.exec.kv;

import dev.mlxring.mlx.MlxArray;

/**
 * One layer's KV cache, as mlx-lm's {@code prompt_cache} entries: a full-precision
 * {@link DenseKvCache} ({@code KVCache}), which generate_step may replace by a
 * {@link QuantizedKvCache} ({@code QuantizedKVCache}, through {@link DenseKvCache#toQuantized})
 * once it holds {@code quantized_kv_start} tokens; or a {@link RotatingKvCache}
 * ({@code RotatingKVCache}: sliding-window layers, {@code --max-kv-size}), which is never
 * quantized. Attention dispatches on the type, as
 * {@code scaled_dot_product_attention} does on {@code hasattr(cache, "bits")}. Several rows
 * decoding together share one {@link BatchKvCache} per layer ({@code BatchKVCache}: left padding,
 * per-row offsets), built from solo caches by {@link BatchKvCache#merge} and giving one back by
 * {@link BatchKvCache#extract}, as {@code KVCache.merge} and {@code BatchKVCache.extract} relate;
 * rotating layers share one {@link BatchRotatingKvCache} ({@code BatchRotatingKVCache}) the same way,
 * and quantized layers one {@link BatchQuantizedKvCache} (ours: mlx-lm cannot merge quantized caches).
 *
 * <p>Ownership: each cache owns the arrays it holds (detached from any scope), frees superseded
 * ones as it replaces them, and the rest on {@link #close()}. Single-threaded (the exec thread).
 */
public sealed interface KvCache extends AutoCloseable
        permits DenseKvCache,
                QuantizedKvCache,
                RotatingKvCache,
                BatchKvCache,
                BatchQuantizedKvCache,
                BatchRotatingKvCache,
                ArraysCache {
    /** mlx-lm's {@code offset}: the number of filled positions. */
    int offset();

    /**
     * The arrays of mlx-lm's {@code cache.state} (the whole buffers, unsliced), for evaluating the
     * cache after a prefill chunk; they stay owned by the cache.
     */
    MlxArray[] state();

    /** mlx-lm's {@code empty()}: nothing stored yet. */
    boolean isEmpty();

    /**
     * mlx-lm's {@code is_trimmable()}: whether {@link #trim} can forget the last positions
     * (speculative decoding rolls rejected proposals back with it). Full-precision and quantized
     * caches always can; a rotating cache only while it has not wrapped ({@code offset < max_size});
     * batch caches answer false here: they roll back per row instead ({@link BatchKvCache#trimRows},
     * {@link BatchRotatingKvCache#trimRows}).
     */
    default boolean isTrimmable() {
        return false;
    }

    /**
     * mlx-lm's {@code trim(n)}: forgets the last {@code min(n, offset)} positions (the buffers keep
     * their contents; later writes overwrite them) and returns how many it forgot.
     *
     * @throws IllegalStateException when the cache is not {@link #isTrimmable() trimmable}
     * @throws IllegalArgumentException for a negative {@code n}
     */
    default int trim(int n) {
        throw new IllegalStateException(getClass().getSimpleName() + " cannot be trimmed");
    }

    /**
     * How many positions {@code trim(n)} forgets from a cache holding {@code offset}: {@code min(n,
     * offset)}; the trimmable caches step their offsets back by it.
     *
     * @throws IllegalArgumentException for a negative {@code n}
     */
    static int trimCount(int offset, int n) {
        if (n < 0) {
            throw new IllegalArgumentException("trim takes a non-negative count, got " + n);
        }
        return Math.min(offset, n);
    }

    @Override
    void close();
}
