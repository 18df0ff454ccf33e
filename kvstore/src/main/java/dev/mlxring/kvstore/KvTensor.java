package dev.mlxring.kvstore;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * One array of a layer's KV state as bytes: the MLX dtype name ({@code bfloat16}, {@code uint32},
 * …), the shape and the row-major little-endian bytes exactly as MLX holds them.
 *
 * <p>{@code data} is native memory owned by the {@link KvSnapshot} holding this tensor: valid
 * while the snapshot is retained, read-only to everyone else.
 */
public record KvTensor(String dtype, int[] shape, MemorySegment data) {
    public KvTensor {
        shape = shape.clone();
    }

    @Override
    public int[] shape() {
        return shape.clone();
    }

    @Override
    public String toString() {
        return dtype + Arrays.toString(shape) + " (" + data.byteSize() + " bytes)";
    }
}
