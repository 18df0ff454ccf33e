package dev.mlxring.pipeline;

/**
 * mlx_lm.server's KV-cache quantization ({@code --kv-bits}, {@code --kv-group-size},
 * {@code --quantized-kv-start}): after the first model call that leaves a layer cache holding at
 * least {@code quantizedKvStart} tokens, generate_step converts it to a quantized cache of
 * {@code bits} bits in groups of {@code groupSize} (affine), and later calls attend over it.
 * Immutable; validated as {@code mx.quantize} accepts (the model's head dimension must also be a
 * multiple of {@code groupSize}; that is checked at conversion, as mlx-lm fails there).
 */
public record KvQuantization(int bits, int groupSize, int quantizedKvStart) {
    /** mlx_lm.server's defaults for {@code --kv-group-size} and {@code --quantized-kv-start}. */
    public static final int DEFAULT_GROUP_SIZE = 64;

    public static final int DEFAULT_QUANTIZED_KV_START = 5000;

    public KvQuantization {
        if (bits != 2 && bits != 3 && bits != 4 && bits != 5 && bits != 6 && bits != 8) {
            throw new IllegalArgumentException("--kv-bits must be one of 2, 3, 4, 5, 6, 8, got " + bits);
        }
        if (groupSize != 32 && groupSize != 64 && groupSize != 128) {
            throw new IllegalArgumentException("--kv-group-size must be 32, 64 or 128, got " + groupSize);
        }
        if (quantizedKvStart < 0) {
            throw new IllegalArgumentException("--quantized-kv-start must be >= 0, got " + quantizedKvStart);
        }
    }

    public static KvQuantization of(int bits) {
        return new KvQuantization(bits, DEFAULT_GROUP_SIZE, DEFAULT_QUANTIZED_KV_START);
    }

    /**
     * Refuses a group size that does not divide the model's head dimension: {@code mx.quantize}
     * groups the cache's last axis, so mlx-lm would fail mid-request when the cache converts.
     */
    public void checkFits(int headDim) {
        if (headDim % groupSize != 0) {
            throw new IllegalArgumentException("--kv-group-size " + groupSize
                    + " does not divide this model's attention head dimension " + headDim
                    + " (the quantized KV cache groups that axis)");
        }
    }
}
