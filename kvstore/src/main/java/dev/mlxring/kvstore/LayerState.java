package dev.mlxring.kvstore;

import java.util.List;

/**
 * One layer's cache as mlx-lm's {@code cache.state}: a full-precision {@code KVCache}
 * ({@link Kind#DENSE}: keys, values) or a {@code QuantizedKVCache} ({@link Kind#QUANTIZED}: the
 * keys' weight/scales/biases then the values'), with the whole buffers (capacity included, so a
 * restored cache grows exactly as the one it was taken from) and the filled {@code offset}.
 *
 * @param groupSize and {@code bits}: the quantization of a QUANTIZED layer; 0 for DENSE
 */
public record LayerState(Kind kind, int offset, int groupSize, int bits, List<KvTensor> tensors) {
    public enum Kind {
        DENSE,
        QUANTIZED
    }

    public LayerState {
        tensors = List.copyOf(tensors);
        int expected = kind == Kind.DENSE ? 2 : 6;
        if (tensors.size() != expected) {
            throw new IllegalArgumentException(kind + " layer needs " + expected + " tensors, got " + tensors.size());
        }
        if (offset < 0) {
            throw new IllegalArgumentException("offset must be >= 0, got " + offset);
        }
    }

    long nbytes() {
        long n = 0;
        for (KvTensor t : tensors) {
            n += t.data().byteSize();
        }
        return n;
    }
}
